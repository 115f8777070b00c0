/* The lease: what a held lock is, independent of how it was taken. */
#include "core/hold.h"

#include <pthread.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/numfmt.h"
#include "base/stats.h"
#include "core/kind.h"
#include "core/outcome.h"

void lw__hold_init(struct lw_hold *l, const struct lw_backend *be,
                   const struct lw_settings *cfg, const char *key,
                   size_t keylen, size_t prefix_len, const lw_lock_opts *opts)
{
    l->cfg = cfg;
    l->be = be;
    l->key = key;
    l->keylen = keylen;
    l->prefix_len = prefix_len;
    l->toklen = 0;
    l->expire_ms = opts->expire_ms;
    l->expire_len = (int)lw__fmt_dec(l->expire_str, opts->expire_ms);
    l->drift_ms = 0;
    l->renews_left = opts->max_renew;
    l->hold_ms = opts->hold_at_least_ms;
    l->permits = opts->permits;
    l->kind = lw__kind_for(opts);
    l->cohort = NULL;
    /* Only a semaphore's scripts send it: no formatting on a mutex's path. */
    l->permits_len =
        opts->permits > 0
            ? (int)lw__fmt_dec(l->permits_str, opts->permits % 100000)
            : 0;
    l->hold_until_ms = 0;
    l->valid_until_ms = 0;
    l->heap_idx = -1;
    l->fifo = -1;
    l->inflight = 0;
    l->lost = 0;
    l->lost_reason = 0;
    l->ended = 0;
    l->site = lw__site_of(opts);
    l->waited_us = 0;
    l->acquired_us = 0;
    l->window_ms = opts->once_window_ms;
    lw__outcome_forget(l);
}

void lw__hold_contended(struct lw_hold *l)
{
    LW_STAT_ADD(contended, 1);
    LW_SITE_ADD(l->site, contended, 1);
}

void lw__hold_waited(struct lw_hold *l, int64_t start_us)
{
    uint64_t us = (uint64_t)(lw__now_us() - start_us);

    lw__stat_wait(us);
    l->waited_us += us;
}

void lw__hold_acquired(struct lw_hold *l)
{
    l->acquired_us = lw__now_us();
    /* + 1: the clock's milliseconds are truncated. */
    l->hold_until_ms =
        l->hold_ms > 0 ? l->acquired_us / 1000 + l->hold_ms + 1 : 0;
}

int64_t lw__hold_left_ms(const struct lw_hold *l)
{
    int64_t left = l->hold_until_ms - lw__now_ms();

    return l->hold_until_ms > 0 && left > 0 ? left : 0;
}

int lw__hold_mark_lost(struct lw_hold *l)
{
    return __atomic_exchange_n(&l->lost, 1, __ATOMIC_ACQ_REL) == 0;
}

/* The lost handler; fn and ud are read together under the mutex, which a
 * fork() must not find held. */
static struct {
    pthread_mutex_t mu;
    lw_lost_fn fn;
    void *ud;
} lost = {.mu = PTHREAD_MUTEX_INITIALIZER};

void lw_set_lost_handler(lw_lost_fn fn, void *ud)
{
    lw__fork_register_mutex(&lost.mu);
    pthread_mutex_lock(&lost.mu);
    lost.fn = fn;
    lost.ud = ud;
    pthread_mutex_unlock(&lost.mu);
}

void lw__hold_notify_lost(const struct lw_hold *l, int reason)
{
    lw_lost_fn fn;
    void *ud;

    /* Called outside the mutex: a handler may then take its time, or set
     * another handler, without stalling or deadlocking the others. */
    lw__fork_register_mutex(&lost.mu);
    pthread_mutex_lock(&lost.mu);
    fn = lost.fn;
    ud = lost.ud;
    pthread_mutex_unlock(&lost.mu);
    if (fn != NULL)
        fn(l->key, l->keylen, reason, ud);
}

int lw__hold_lose(struct lw_hold *l, int reason, const char *why)
{
    lw__log(LW_LOG_WARN, "lock %.*s lost before release: %s", (int)l->keylen,
            l->key, why);
    if (lw__hold_mark_lost(l))
        lw__hold_notify_lost(l, reason);
    return LW_ELOST;
}

int lw__hold_may_hand(const struct lw_hold *l, unsigned run, uint32_t expire_ms)
{
    return !lw__gate_closing() &&
           !__atomic_load_n(&l->ended, __ATOMIC_ACQUIRE) && !lw__hold_lost(l) &&
           run <= (unsigned)l->cfg->local_handoffs &&
           __atomic_load_n(&l->valid_until_ms, __ATOMIC_RELAXED) -
                   lw__now_ms() >=
               (int64_t)expire_ms * 3 / 4;
}

int lw__hold_handed_verdict(struct lw_hold *l, int check)
{
    char why[96];

    if (check == LW_OK)
        return lw__hold_lost(l) ? LW_ELOST : LW_OK;
    if (check == LW_ELOST)
        return lw__hold_lose(l, LW_LOST_GONE,
                             "the key was gone or another owner's when it "
                             "was handed on");
    snprintf(why, sizeof why,
             "Redis did not confirm it was held when handed on (%s)",
             lw_strerror(check));
    return lw__hold_lose(l, LW_LOST_NO_REPLY, why);
}

/*
 * The watchdog: one thread per process keeps every held lease alive.
 *
 * The thread sleeps until exactly the next event of its schedule
 * (duequeue.h) instead of scanning all locks on a fixed tick.  Due renewals
 * go out together, each backend's in one call (backend.h; the queue
 * backend's is one script per server, on the watchdog thread's own
 * connection).  A lease out of renewals (max_renew) gets one last event at
 * the end of its validity, where it is marked lost.
 */
#include "core/watchdog.h"

#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/stats.h"
#include "base/thread.h"
#include "core/backend.h"
#include "core/duequeue.h"

#define BATCH_MAX      LW_WATCHDOG_BATCH_MAX
#define BATCH_SLACK_MS 5 /* renew a little early to batch neighbours */
#define IDLE_WAKE_MS   1000

static struct {
    pthread_mutex_t mu;
    struct lw_duequeue due; /* every held lease, by its next event */
    pthread_cond_t cond;    /* work for the thread */
    pthread_cond_t settled; /* an in-flight batch finished */
    int started, stopping;
    int64_t sleep_until_ms; /* 0 while awake: adders need not signal */
    pthread_t thread;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Mark l lost and say why.  With a reason (LW_LOST_...), the lost handler
 * is owed a call, made by watchdog_main once wd.mu is released; without
 * (lw_shutdown() gave it back), none. */
static void lease_lost(struct lw_hold *l, int reason, const char *why)
{
    if (lw__hold_mark_lost(l))
        l->lost_reason = reason;
    lw__log(LW_LOG_WARN, "lock %.*s lost: %s", (int)l->keylen, l->key, why);
}

/* lw_shutdown(): give l back now (its guard, still entered, then reads
 * LW_ELOST and releases nothing). */
static void release_on_stop(struct lw_hold *l, void *arg)
{
    (void)arg;
    l->be->release(l);
    __atomic_store_n(&l->ended, 1, __ATOMIC_RELEASE);
    lease_lost(l, 0, "released by lw_shutdown()");
}

/* Drop every queued lease, releasing each in Redis if asked (shutdown; a
 * forked child only forgets the parent's). */
static void forget_all(int release)
{
    lw__dq_clear(&wd.due, release ? release_on_stop : NULL, NULL);
}

/* Next event: a renewal at a third of the lease, or, with no renewals left,
 * the moment the lease ends. */
static void schedule(struct lw_hold *l, int64_t now)
{
    int64_t half_left = (l->valid_until_ms - now) / 2;

    if (l->renews_left == 0) {
        l->due_ms = l->valid_until_ms;
        return;
    }
    l->due_ms = now + (l->expire_ms / 3 ? l->expire_ms / 3 : 1);
    /* A lease may start with less than its length left: a hand-off
     * confirmed late (a waiter whose script met a slot migration, or was
     * slow) gets the TTL that is left.  Renew it while half of that
     * remains, not a third of a full lease from now, when it is gone. */
    if (l->due_ms > now + half_left)
        l->due_ms = now + (half_left > 0 ? half_left : 0);
}

/* Settle one lease from its result (LW_OK renewed, LW_ELOST not ours,
 * another code: no answer); returns 1 when it stays queued. */
static int settle(struct lw_hold *l, int result, int64_t sent_ms, int64_t now)
{
    if (l->renews_left == 0 && l->due_ms <= now) {
        lease_lost(l, LW_LOST_RENEWALS,
                   "max_renew renewals used up and the lease ran out");
        return 0;
    }
    if (result != LW_OK && result != LW_ELOST) {
        /* Redis unreachable: retry until the lease runs out. */
        if (now >= l->valid_until_ms) {
            lease_lost(l, LW_LOST_NO_REPLY,
                       "Redis unreachable until the lease ran out");
            return 0;
        }
        l->due_ms = now + (l->expire_ms / 10 ? l->expire_ms / 10 : 1);
        if (l->due_ms > l->valid_until_ms)
            l->due_ms = l->valid_until_ms;
        return 1;
    }
    if (result == LW_ELOST) {
        lease_lost(l, LW_LOST_GONE,
                   "the key is gone (expired, or evicted by Redis) or "
                   "another owner's");
        return 0;
    }
    LW_STAT_ADD(renewed, 1);
    LW_SITE_ADD(l->site, renewals, 1);
    if (l->renews_left > 0)
        l->renews_left--;
    /* Atomic: lw_still_held() reads it from the lock's own thread. */
    __atomic_store_n(&l->valid_until_ms, sent_ms + l->expire_ms - l->drift_ms,
                     __ATOMIC_RELAXED);
    schedule(l, sent_ms);
    return 1;
}

/* Renew every lease of the batch that has renewals left, each backend's
 * leases in one call (the queue backend sends one script per server or
 * cluster slot: one round trip and one Lua call for many leases).
 * results[i]: LW_OK renewed, LW_ELOST not ours, another code: no usable
 * answer. */
static void send_batch(struct lw_hold **batch, int n, int *results)
{
    /* Watchdog thread only. */
    static struct lw_hold *group[BATCH_MAX];
    static int pos[BATCH_MAX], res[BATCH_MAX];
    unsigned char done[BATCH_MAX];

    for (int i = 0; i < n; i++) {
        /* Out of renewals: only its end-of-lease event is due. */
        done[i] = batch[i]->renews_left == 0;
        results[i] = LW_OK;
    }
    for (int i = 0; i < n; i++) {
        int m = 0;
        if (done[i])
            continue;
        for (int j = i; j < n; j++)
            if (!done[j] && batch[j]->be == batch[i]->be) {
                done[j] = 1;
                pos[m] = j;
                group[m++] = batch[j];
            }
        batch[i]->be->renew(group, m, res);
        for (int j = 0; j < m; j++)
            results[pos[j]] = res[j];
    }
}

/* Take due leases off the heap (mu held); they are marked in flight. */
static int collect_due(struct lw_hold **batch, int64_t now)
{
    struct lw_hold *l;
    int n = 0;

    while (n < BATCH_MAX && (l = lw__dq_earliest(&wd.due)) != NULL &&
           l->due_ms <= now + BATCH_SLACK_MS &&
           !(l->renews_left == 0 && l->due_ms > now)) {
        lw__dq_remove(&wd.due, l);
        l->inflight = 1;
        batch[n++] = l;
    }
    return n;
}

/* Call the lost handler for the n leases in owed (wd.mu held on entry and
 * return, released meanwhile: the handler is the user's code).  They stay
 * in flight until then, so their guards' leave waits and the leases, keys
 * included, stay valid during the calls. */
static void notify_owed(struct lw_hold **owed, int n)
{
    pthread_mutex_unlock(&wd.mu);
    for (int i = 0; i < n; i++)
        lw__hold_notify_lost(owed[i], owed[i]->lost_reason);
    pthread_mutex_lock(&wd.mu);
    for (int i = 0; i < n; i++)
        owed[i]->inflight = 0;
    pthread_cond_broadcast(&wd.settled);
}

static void *watchdog_main(void *arg)
{
    struct lw_hold *batch[BATCH_MAX], *owed[BATCH_MAX];
    int results[BATCH_MAX];

    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.stopping) {
        int64_t now = lw__now_ms();
        int n = collect_due(batch, now);

        if (n == 0) {
            struct lw_hold *next = lw__dq_earliest(&wd.due);
            int64_t until = next ? next->due_ms : now + IDLE_WAKE_MS;
            struct timespec ts = lw__abstime_us(until * 1000);
            wd.sleep_until_ms = until;
            pthread_cond_timedwait(&wd.cond, &wd.mu, &ts);
            wd.sleep_until_ms = 0;
            continue;
        }
        pthread_mutex_unlock(&wd.mu);
        send_batch(batch, n, results);
        pthread_mutex_lock(&wd.mu);
        int64_t done = lw__now_ms();
        int nowed = 0;
        for (int i = 0; i < n; i++) {
            int kept = settle(batch[i], results[i], now, done);
            if (kept && lw__dq_add(&wd.due, batch[i])) {
                lease_lost(batch[i], LW_LOST_NOMEM,
                           "out of memory in the watchdog");
                kept = 0;
            }
            if (!kept && batch[i]->lost_reason != 0)
                owed[nowed++] = batch[i];
            else
                batch[i]->inflight = 0;
        }
        pthread_cond_broadcast(&wd.settled);
        if (nowed > 0)
            notify_owed(owed, nowed);
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

static int start_locked(void)
{
    pthread_condattr_t ca;

    if (wd.started)
        return LW_OK;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd.cond, &ca);
    pthread_cond_init(&wd.settled, &ca);
    pthread_condattr_destroy(&ca);
    wd.stopping = 0;
    if (lw__thread_spawn(&wd.thread, watchdog_main, NULL) != 0)
        return LW_ESYSTEM;
    wd.started = 1;
    return LW_OK;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&wd.mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&wd.mu);
}

/* The child has no watchdog thread and holds none of the parent's leases:
 * forget them all.  (The thread's connection was the parent's socket; the
 * child never uses it.) */
static void atfork_child(void)
{
    forget_all(0);
    wd.started = 0;
    wd.sleep_until_ms = 0;
    pthread_mutex_unlock(&wd.mu);
}

static void register_fork_hooks(void)
{
    static const struct lw_fork_hooks hooks = {atfork_prepare, atfork_parent,
                                               atfork_child};
    lw__fork_register(&hooks);
}

int lw__watchdog_add(struct lw_hold *l)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int rc;

    pthread_once(&once, register_fork_hooks);
    l->inflight = 0;
    schedule(l, lw__now_ms());
    pthread_mutex_lock(&wd.mu);
    rc = start_locked();
    if (rc == LW_OK)
        rc = lw__dq_add(&wd.due, l);
    /* Wake the thread only if it sleeps past this lease's first event: with
     * equal leases that is rare, so a busy lock loop causes no wake-ups. */
    if (rc == LW_OK && wd.sleep_until_ms != 0 && l->due_ms < wd.sleep_until_ms)
        pthread_cond_signal(&wd.cond);
    pthread_mutex_unlock(&wd.mu);
    return rc;
}

void lw__watchdog_remove(struct lw_hold *l)
{
    pthread_mutex_lock(&wd.mu);
    while (l->inflight)
        pthread_cond_wait(&wd.settled, &wd.mu);
    lw__dq_remove(&wd.due, l);
    pthread_mutex_unlock(&wd.mu);
}

int lw__watchdog_try_remove(struct lw_hold *l)
{
    int idle;

    pthread_mutex_lock(&wd.mu);
    idle = !l->inflight;
    if (idle)
        lw__dq_remove(&wd.due, l);
    pthread_mutex_unlock(&wd.mu);
    return idle;
}

void lw__watchdog_stop(void)
{
    pthread_mutex_lock(&wd.mu);
    if (!wd.started) {
        pthread_mutex_unlock(&wd.mu);
        return;
    }
    wd.stopping = 1;
    pthread_cond_signal(&wd.cond);
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wd.thread, NULL);
    pthread_mutex_lock(&wd.mu);
    forget_all(1);
    wd.started = 0;
    pthread_cond_destroy(&wd.cond);
    pthread_cond_destroy(&wd.settled);
    pthread_mutex_unlock(&wd.mu);
}

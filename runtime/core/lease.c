/*
 * Leases: a held lock as a value (lw_acquire(), lw_release()).
 *
 * A guard lives on its thread's stack and nests with the thread's other
 * guards; a lease lives on the heap and belongs to nobody: any thread
 * releases it.  Each of its keys is taken and given back exactly as a
 * guard's is (take.c): from Redis or handed on by another thread of this
 * process, renewed by the watchdog, checked in Redis when it ends.  What a
 * lease never does is re-enter: it is not on any thread's stack of guards,
 * so a thread that holds a key already waits for it like anyone else.
 */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/metrics.h"
#include "base/result.h"
#include "base/stats.h"
#include "base/thread.h"
#include "core/backend.h"
#include "core/kind.h"
#include "core/lease.h"
#include "core/take.h"
#include "core/watchdog.h"

#define KEYS_MAX LW_LEASE_KEYS_MAX

/* One key of a lease. */
struct key {
    struct lw_hold hold; /* its lock, as the protocol holds it */
    lw_lock_opts opts;
    uint64_t fence;
    const char *key; /* the full Redis key, prefix first, in the lease's
                        allocation */
    size_t keylen, prefix_len;
};

struct lw_lease {
    unsigned fork_gen;      /* the process that took it */
    int batched;            /* taken by lw__lease_batch(): its one key went
                               to Redis alone, never through a cohort */
    lw_lease_owner_fn told; /* lw__lease_set_owner() */
    void *owner;
    int n;          /* keys, sorted by their full Redis keys */
    struct key k[]; /* then the keys' bytes */
};

static int set_last(int rc)
{
    lw__thread()->last_error = rc;
    return rc;
}

static int key_cmp(const void *pa, const void *pb)
{
    const struct key *a = pa, *b = pb;
    size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
    int c = memcmp(a->key, b->key, n);

    if (c != 0)
        return c;
    return (a->keylen > b->keylen) - (a->keylen < b->keylen);
}

/* A lease of n keys (the prefix before each) with their options, sorted,
 * each key once (with the options it was first given); NULL when out of
 * memory. */
static struct lw_lease *lease_new(const void *const *keys,
                                  const size_t *keylens,
                                  const lw_lock_opts *opts, int n,
                                  const char *prefix, size_t prefix_len)
{
    size_t size = sizeof(struct lw_lease) + (size_t)n * sizeof(struct key);
    struct lw_lease *l;
    char *p;
    int m = 0;

    for (int i = 0; i < n; i++)
        size += prefix_len + keylens[i];
    l = calloc(1, size);
    if (l == NULL)
        return NULL;
    p = (char *)&l->k[n];
    for (int i = 0; i < n; i++) {
        memcpy(p, prefix, prefix_len);
        memcpy(p + prefix_len, keys[i], keylens[i]);
        l->k[i].key = p;
        l->k[i].opts = opts[i];
        l->k[i].keylen = prefix_len + keylens[i];
        l->k[i].prefix_len = prefix_len;
        p += l->k[i].keylen;
    }
    /* The global order: two callers wanting the same keys ask for them in
     * the same order, so one waits holding nothing the other needs. */
    qsort(l->k, (size_t)n, sizeof l->k[0], key_cmp);
    for (int i = 0; i < n; i++)
        if (m == 0 || key_cmp(&l->k[m - 1], &l->k[i]) != 0)
            l->k[m++] = l->k[i];
    l->n = m;
    l->fork_gen = lw__fork_gen;
    return l;
}

/* Count h, given back with answer r, out of the lease: what every key's
 * give-back adds to the stats and its site's metrics. */
static int given_back(struct lw_hold *h, int r)
{
    LW_STAT_SUB(held, 1);
    lw__site_hold(h->site, (uint64_t)(lw__now_us() - h->acquired_us));
    if (r == LW_ELOST) {
        LW_STAT_ADD(lost, 1);
        LW_SITE_ADD(h->site, lost, 1);
    }
    return r;
}

/* Count k, just taken: what every key's take adds. */
static void took(struct key *k)
{
    LW_STAT_ADD(acquired, 1);
    LW_STAT_ADD(held, 1);
    LW_SITE_ADD(k->hold.site, acquired, 1);
    lw__site_wait(k->hold.site, k->hold.waited_us);
}

/* Give back the first n keys of l, the last first: LW_OK, or the first
 * LW_ELOST. */
static int give_back(struct lw_lease *l, int n)
{
    int rc = LW_OK;

    for (int i = n - 1; i >= 0; i--) {
        struct lw_hold *h = &l->k[i].hold;
        int r = given_back(h, lw__give_back(h));
        if (rc == LW_OK)
            rc = r;
    }
    return rc;
}

/* Take every key of l in order, what is left of one wait (the shortest
 * its keys ask for, as lw_guard_enter_all()) for each. */
static int take_all(struct lw_lease *l)
{
    uint32_t wait_ms = UINT32_MAX;
    int64_t deadline_us;
    int i, rc = LW_OK;

    for (i = 0; i < l->n; i++)
        if (l->k[i].opts.wait_ms < wait_ms)
            wait_ms = l->k[i].opts.wait_ms;
    deadline_us = lw__now_us() + (int64_t)wait_ms * 1000;
    for (i = 0; i < l->n; i++) {
        int64_t left_ms = (deadline_us - lw__now_us()) / 1000;
        lw_lock_opts o = l->k[i].opts;
        o.wait_ms = left_ms > 0 ? (uint32_t)left_ms : 0; /* 0: one try */
        rc = lw__take(&l->k[i].hold, l->k[i].key, l->k[i].keylen,
                      l->k[i].prefix_len, &o, &l->k[i].fence);
        if (rc != LW_OK)
            break;
        took(&l->k[i]);
    }
    if (rc == LW_OK)
        return LW_OK;
    if (rc == LW_ETIMEOUT) { /* only after lw__take() set the lease up */
        LW_STAT_ADD(timed_out, 1);
        LW_SITE_ADD(l->k[i].hold.site, timeouts, 1);
        lw__site_wait(l->k[i].hold.site, l->k[i].hold.waited_us);
    }
    give_back(l, i);
    return rc;
}

int lw__lease_args(const void *const *keys, const size_t *keylens, int n,
                   const lw_lock_opts *opts, size_t opts_size, lw_lock_opts *o)
{
    if (keys == NULL || keylens == NULL || opts == NULL || n < 1 ||
        n > KEYS_MAX || lw__struct_in(o, sizeof *o, opts, opts_size) != 0 ||
        lw__opts_check(o) != LW_OK || o->once_window_ms > 0)
        return LW_EINVAL; /* run once: only a guard keeps its outcome */
    for (int i = 0; i < n; i++)
        if (keys[i] == NULL || keylens[i] == 0 || keylens[i] > LW_KEY_MAX)
            return LW_EINVAL;
    return LW_OK;
}

int lw__lease_take(const void *const *keys, const size_t *keylens,
                   const lw_lock_opts *opts, int n, lw_lease **out)
{
    const struct lw_settings *s;
    struct lw_lease *l = NULL;
    int rc;

    *out = NULL;
    lw__fork_init();
    lw__gate_pass(); /* lw_shutdown() frees the settings read here */
    s = lw__settings();
    rc = s->error;
    if (rc == LW_OK) {
        l = lease_new(keys, keylens, opts, n, s->prefix, s->prefix_len);
        rc = l == NULL ? LW_ENOMEM : LW_OK;
    }
    lw__gate_exit();
    if (rc == LW_OK)
        rc = take_all(l);
    if (rc != LW_OK) {
        free(l);
        return set_last(rc);
    }
    *out = l;
    return set_last(LW_OK);
}

/* key (the bytes after the prefix) as a full Redis key under s, in buf
 * (size bytes) when it fits, else on the heap; NULL when out of memory. */
static char *full_key(const struct lw_settings *s, const void *key,
                      size_t keylen, char *buf, size_t size)
{
    size_t n = s->prefix_len + keylen;
    char *p = n <= size ? buf : malloc(n);

    if (p != NULL) {
        memcpy(p, s->prefix, s->prefix_len);
        memcpy(p + s->prefix_len, key, keylen);
    }
    return p;
}

int lw__lease_batchable(const void *key, size_t keylen,
                        const lw_lock_opts *opts)
{
    const struct lw_settings *s;
    char buf[256], *full;
    int ok = 0;

    lw__gate_pass(); /* lw_shutdown() frees the settings read here */
    s = lw__settings();
    if (s->error == LW_OK &&
        (full = full_key(s, key, keylen, buf, sizeof buf)) != NULL) {
        ok = lw__take_batchable(s, full, s->prefix_len + keylen, opts);
        if (full != buf)
            free(full);
    }
    lw__gate_exit();
    return ok;
}

int lw__lease_give_batchable(const lw_lease *l)
{
    int ok;

    if (!l->batched || l->fork_gen != lw__fork_gen)
        return 0;
    lw__gate_pass();
    ok = lw__give_batchable(&l->k[0].hold);
    lw__gate_exit();
    return ok;
}

void lw__lease_key(const lw_lease *l, const void **key, size_t *keylen)
{
    *key = l->k[0].key + l->k[0].prefix_len;
    *keylen = l->k[0].keylen - l->k[0].prefix_len;
}

/* Run l's release hook, if it has one, taking it (lw__lease_claim()). */
static void tell_owner(struct lw_lease *l)
{
    lw_lease_owner_fn fn =
        __atomic_exchange_n(&l->told, NULL, __ATOMIC_ACQ_REL);

    if (fn != NULL)
        fn(l->owner, l);
}

/* ops[i]'s take or give-back as a key's (lw_take_op), into t: 1 when it
 * is in the batch, 0 when it is already over (ops[i].status set). */
static int batch_op(struct lw_lease_op *op, struct lw_take_op *t)
{
    const struct lw_settings *s;
    struct lw_lease *l = op->lease;
    uint32_t run_fences;
    int rc;

    if (op->give) {
        tell_owner(l); /* as lw_release() */
        if (l->fork_gen != lw__fork_gen) {
            free(l);
            op->lease = NULL;
            op->status = LW_EFORKED;
            return 0;
        }
        *t = (struct lw_take_op){.h = &l->k[0].hold, .give = 1};
        return 1;
    }
    op->lease = NULL;
    op->fences = 0;
    lw__gate_pass(); /* as lw__lease_take() */
    s = lw__settings();
    rc = s->error;
    run_fences = (uint32_t)s->local_handoffs; /* lw__lease_fences()'s n at
                                                 the run's first section */
    if (rc == LW_OK) {
        l = lease_new(&op->key, &op->keylen, op->opts, 1, s->prefix,
                      s->prefix_len);
        rc = l == NULL ? LW_ENOMEM : LW_OK;
    }
    lw__gate_exit();
    if (rc != LW_OK) {
        op->status = rc;
        return 0;
    }
    l->batched = 1;
    op->lease = l;
    *t = (struct lw_take_op){.h = &l->k[0].hold,
                             .key = l->k[0].key,
                             .keylen = l->k[0].keylen,
                             .prefix_len = l->k[0].prefix_len,
                             .opts = &l->k[0].opts,
                             .fence = &l->k[0].fence,
                             .fences = op->run_fences ? run_fences : 0};
    return 1;
}

void lw__lease_batch(struct lw_lease_op *ops, int n)
{
    struct lw_take_op *t = malloc((size_t)n * sizeof *t);
    int m = 0;

    lw__fork_init();
    if (t == NULL) { /* each alone, the blocking way */
        for (int i = 0; i < n; i++)
            ops[i].status = ops[i].give ? lw_release(ops[i].lease) : LW_ENOMEM;
        return;
    }
    for (int i = 0; i < n; i++)
        if (batch_op(&ops[i], &t[m]))
            m++;
    lw__take_batch(t, m);
    for (int i = 0, k = 0; i < n; i++) {
        struct lw_lease *l = ops[i].lease;
        if (l == NULL)
            continue; /* over before the batch */
        ops[i].status = t[k].rc;
        if (ops[i].give) {
            given_back(&l->k[0].hold, t[k].rc);
            free(l);
            ops[i].lease = NULL;
        } else if (t[k].rc == LW_OK) {
            took(&l->k[0]);
            if (t[k].fences > 0 && t[k].fences_rc == LW_OK) {
                ops[i].fences = t[k].fences;
                ops[i].first_fence = t[k].first;
            }
        } else {
            free(l);
            ops[i].lease = NULL;
        }
        k++;
    }
    free(t);
}

int lw__lease_handable(const lw_lock_opts *opts)
{
    int ok;

    lw__gate_pass(); /* lw_shutdown() frees the settings read here */
    ok = lw__settings()->local_handoffs > 0 && opts->hold_at_least_ms == 0 &&
         (lw__kind_for(opts)->flags & LW_KIND_HANDOFF);
    lw__gate_exit();
    return ok;
}

int lw__lease_may_hand(const lw_lease *from, unsigned run)
{
    return lw__lease_give_batchable(from) &&
           lw__hold_may_hand(&from->k[0].hold, run, from->k[0].opts.expire_ms);
}

int lw__lease_fences(lw_lease *from, unsigned run, uint64_t *first, uint32_t *n)
{
    struct lw_hold *h = &from->k[0].hold;
    int rc;

    lw__gate_pass();
    /* Given back by lw_shutdown(), which freed its configuration. */
    if (__atomic_load_n(&h->ended, __ATOMIC_ACQUIRE)) {
        lw__gate_exit();
        return LW_ESHUTDOWN;
    }
    *n = (uint32_t)h->cfg->local_handoffs + 1 - run;
    rc = h->be->fences(h, *n, first);
    lw__gate_exit();
    return rc;
}

int lw__lease_hand_on(lw_lease *from, uint64_t fence, int nowait,
                      int64_t asked_us, int64_t until_us, lw_lease **to)
{
    struct key *k = &from->k[0];
    const void *key;
    size_t keylen;
    struct lw_lease *l;
    int rc;

    *to = NULL;
    lw__lease_key(from, &key, &keylen);
    /* One renewer at a time, and from's validity read after its last
     * renewal. */
    if (!nowait)
        lw__watchdog_remove(&k->hold);
    else if (!lw__watchdog_try_remove(&k->hold))
        return LW_R_BUSY;
    /* The renewal waited out may have outlasted the waiter's wait. */
    if (lw__now_us() >= until_us)
        return LW_ETIMEOUT;
    l = lease_new(&key, &keylen, &k->opts, 1, k->key, k->prefix_len);
    if (l == NULL)
        return LW_ENOMEM;
    /* From here until its check is answered (lw__lease_handed_back()),
     * from's configuration must outlive it: lw_shutdown() waits. */
    lw__gate_pass();
    rc = lw__take_handed(&l->k[0].hold, &k->hold, l->k[0].key, l->k[0].keylen,
                         l->k[0].prefix_len, &l->k[0].opts);
    if (rc != LW_OK) {
        lw__gate_exit();
        free(l);
        return rc;
    }
    l->batched = 1; /* given back as from would have been */
    l->k[0].fence = fence;
    /* Counted as a thread handed the lock by a sibling is: it found the
     * key busy, and waited since it asked. */
    lw__hold_contended(&l->k[0].hold);
    lw__hold_waited(&l->k[0].hold, asked_us);
    took(&l->k[0]);
    LW_STAT_ADD(handed_locally, 1);
    *to = l;
    return LW_OK;
}

void lw__lease_waited_out(const lw_lock_opts *opts, int64_t asked_us)
{
    struct lw_sitectr *site = lw__site_of(opts);
    uint64_t us = (uint64_t)(lw__now_us() - asked_us);

    LW_STAT_ADD(contended, 1);
    LW_SITE_ADD(site, contended, 1);
    lw__stat_wait(us);
    LW_STAT_ADD(timed_out, 1);
    LW_SITE_ADD(site, timeouts, 1);
    lw__site_wait(site, us);
}

int lw__lease_check(lw_lease *from)
{
    struct lw_hold *h = &from->k[0].hold;

    return h->be->check(h); /* in the gate since lw__lease_hand_on() */
}

int lw__lease_check_more(lw_lease *from, uint64_t *first, uint32_t *n)
{
    struct lw_hold *h = &from->k[0].hold;
    int rc;

    /* In the gate since lw__lease_hand_on(), as lw__lease_check(). */
    *n = (uint32_t)h->cfg->local_handoffs;
    if (h->be->more != NULL && *n > 0) {
        rc = h->be->more(h, *n, first);
        if (rc == LW_OK || rc == LW_R_BUSY || rc == LW_ELOST)
            return rc;
    }
    /* No such script, or no verdict from it (also in a slot being
     * migrated, which refuses a script whose keys lie on two nodes): the
     * plain check, which follows ASK. */
    rc = h->be->check(h);
    return rc == LW_OK ? LW_R_BUSY : rc;
}

int lw__lease_handed_back(lw_lease *from, int check)
{
    struct lw_hold *h = &from->k[0].hold;
    int rc = given_back(h, lw__hold_handed_verdict(h, check));

    free(from);
    lw__gate_exit(); /* lw__lease_hand_on()'s */
    return rc;
}

int lw_acquire_keys_sized(const void *const *keys, const size_t *keylens, int n,
                          const lw_lock_opts *opts, size_t opts_size,
                          lw_lease **out)
{
    lw_lock_opts o[KEYS_MAX];

    if (out != NULL)
        *out = NULL;
    if (out == NULL ||
        lw__lease_args(keys, keylens, n, opts, opts_size, &o[0]) != LW_OK)
        return set_last(LW_EINVAL);
    for (int i = 1; i < n; i++)
        o[i] = o[0];
    return lw__lease_take(keys, keylens, o, n, out);
}

int lw_acquire_sized(const void *key, size_t keylen, const lw_lock_opts *opts,
                     size_t opts_size, lw_lease **out)
{
    return lw_acquire_keys_sized(&key, &keylen, 1, opts, opts_size, out);
}

int lw_release(lw_lease *l)
{
    int rc;

    if (l == NULL)
        return set_last(LW_EINVAL);
    tell_owner(l);
    /* A forked child never touches the parent's locks: not its to give
     * back, and its watchdog does not renew them. */
    rc = l->fork_gen != lw__fork_gen ? LW_EFORKED : give_back(l, l->n);
    free(l);
    return set_last(rc);
}

uint64_t lw_lease_fence(const lw_lease *l)
{
    return l != NULL && l->fork_gen == lw__fork_gen ? l->k[0].fence : 0;
}

uint64_t lw_lease_fence_of(const lw_lease *l, const void *key, size_t keylen)
{
    if (l == NULL || l->fork_gen != lw__fork_gen)
        return 0;
    for (int i = 0; i < l->n; i++) {
        const struct key *k = &l->k[i];
        if (k->keylen - k->prefix_len == keylen &&
            memcmp(k->key + k->prefix_len, key, keylen) == 0)
            return k->fence;
    }
    return 0;
}

int lw_lease_held(const lw_lease *l)
{
    int64_t now = lw__now_ms();

    if (l == NULL || l->fork_gen != lw__fork_gen)
        return 0;
    /* Past a lease's end by our own clock the lock may be someone else's
     * already, though no renewal has failed yet (as lw_still_held()). */
    for (int i = 0; i < l->n; i++)
        if (lw__hold_lost(&l->k[i].hold) ||
            now >=
                __atomic_load_n(&l->k[i].hold.valid_until_ms, __ATOMIC_RELAXED))
            return 0;
    return 1;
}

void lw__lease_set_owner(lw_lease *l, lw_lease_owner_fn fn, void *owner)
{
    l->owner = owner;
    __atomic_store_n(&l->told, fn, __ATOMIC_RELEASE);
}

void *lw__lease_claim(lw_lease *l, lw_lease_owner_fn fn)
{
    lw_lease_owner_fn expected = fn;

    if (fn == NULL ||
        !__atomic_compare_exchange_n(&l->told, &expected, NULL, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return NULL;
    return l->owner;
}

/* The lease of the woven loop body running on this thread, if any (each
 * runs on its loop's thread, from lw_loop_dispatch()): what lw_fence(),
 * lw_still_held() and lw_take_lease() there mean. */
static _Thread_local struct {
    lw_lease *lease;
    int taken;
} body;

void lw_loop_body_begin(lw_lease *l)
{
    body.lease = l;
    body.taken = 0;
}

lw_lease *lw_loop_body_end(void)
{
    lw_lease *l = body.taken ? NULL : body.lease;

    body.lease = NULL;
    body.taken = 0;
    return l;
}

lw_lease *lw_take_lease(void)
{
    if (body.lease == NULL || body.taken)
        return NULL;
    body.taken = 1;
    return body.lease;
}

const lw_lease *lw__lease_body(void)
{
    return body.lease;
}

const struct lw_hold *lw__lease_body_key(const char *key, size_t keylen,
                                         uint64_t *fence)
{
    const struct lw_lease *l = body.lease;

    if (l == NULL || l->fork_gen != lw__fork_gen)
        return NULL;
    for (int i = 0; i < l->n; i++)
        if (l->k[i].keylen == keylen && memcmp(l->k[i].key, key, keylen) == 0) {
            *fence = l->k[i].fence;
            return &l->k[i].hold;
        }
    return NULL;
}

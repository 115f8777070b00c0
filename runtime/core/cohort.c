/*
 * In-process cohorts.
 *
 * A service's threads often want the same key at once (a thread per
 * request).  Queued in Redis one by one, each costs a queue entry, an alive
 * key and a blocked connection, and every section a hand-off script and a
 * wake-up through Redis.  Here one thread of the process at a time, the
 * leader, takes a key from Redis; the others wait on this process's list for
 * that key.  The holder, leaving, hands its lease (token and validity: the
 * Redis key does not change) to the first thread on the list without a round
 * trip, at most local_handoffs times in a row.  Then it releases through
 * Redis, whose queue hands the lock to the next process in FIFO order, and
 * the first thread on the list leads again, queueing behind that process.  So
 * another process waits at most local_handoffs + 1 sections of this one per
 * turn: fair between processes, and cheap within one.
 *
 * A thread handed the lock gets what Redis would have given it:
 *  - a lease it can count on: handed on only while at least three quarters
 *    of its own lease length are left by our clock (which never believes in
 *    more lease than Redis gave), and renewed for it up to its own max_renew;
 *  - a fence of its own, above the holder's and below the next holder's:
 *    the holder mints them in one round trip, as many as the run may
 *    still hand on, the first time it would hand the lock on in a run,
 *    and only if the key still holds the run's token (the backend's
 *    fences()): a key removed behind our back may be another caller's
 *    already, whose fence must stay above every fence of the run.
 * And the holder that hands the lock on learns what a release through
 * Redis would have told it: whether the key still held the run's token
 * when its section ended.  Our clock cannot say (a forced unlock or an
 * eviction removes a key whatever lease is left), so Redis is asked: by
 * the fences' script at a run's first hand-off, before it; after every
 * other hand-off, by the backend's check(), while the next section already
 * runs (batched: check_handed()).  A token, once gone from the key, never
 * comes back to it, so a check that finds it says the key held it
 * throughout every section that ended before the check was sent.  For
 * the check to see the key as those sections left it, nothing may change
 * the key before the check is answered but the run itself: its last
 * section's release through Redis waits for the checks.  A check that
 * finds the key gone ends the run's hand-offs (the next holder learns its
 * own verdict from Redis).
 * Only kinds that allow it take part (LW_KIND_HANDOFF, the mutex: a read
 * lock is shared anyway, a semaphore has several holders), and no lock with
 * a minimum hold: a sibling thread taking the key within it would defeat
 * the hold.
 */
#include "core/cohort.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/stats.h"
#include "core/backend.h"
#include "core/kind.h"

#define BUCKETS 64

enum { W_WAITING, W_HANDED, W_LEAD };

/* A thread waiting for a key that another thread of this process holds or is
 * taking from Redis; on the waiting thread's stack. */
struct waiter {
    struct waiter *next;
    pthread_cond_t cv;
    int state;             /* W_...; changed under tab.mu only */
    struct lw_hold *lease; /* the waiter's: a hand-off fills it in */
    uint64_t fence;        /* set with W_HANDED */
};

/* A key that threads of this process hold or wait for; freed by the last. */
struct lw_cohort {
    struct lw_cohort *next;        /* in its bucket */
    const struct lw_settings *cfg; /* another configuration's key of the
                                      same name may live on other servers */
    uint64_t hash;
    unsigned users; /* the leader and the waiters */
    int led;        /* a thread holds the lock or is taking it from Redis */
    unsigned run;   /* sections the holder's Redis acquisition has served */
    int run_lost;   /* the run's token was found gone from the key */
    /* Checks of handed sections (check_handed()): one at a time, each
     * answering for every section that ended before it was sent. */
    int checking;           /* a check is in flight */
    pthread_cond_t checked; /* one was answered */
    uint64_t ended;         /* handed sections ended so far: their tickets */
    uint64_t answered;      /* tickets up to this one had a check answered */
    uint64_t ok_upto;       /* ... and up to this one found the key ours */
    int failed;           /* what the last check that did not say LW_OK said */
    uint32_t fences_left; /* minted for this run, not handed out yet */
    uint64_t next_fence;  /* the lowest of them */
    struct waiter *head, **tail;
    size_t keylen;
    char key[];
};

static struct {
    pthread_mutex_t mu;
    struct lw_cohort *bucket[BUCKETS];
} tab = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t once = PTHREAD_ONCE_INIT;

static int takes_part(const struct lw_hold *l)
{
    return l->cfg->local_handoffs > 0 && (l->kind->flags & LW_KIND_HANDOFF) &&
           l->hold_ms == 0;
}

/* lw_shutdown(): every waiter here gives up (it sees the gate closing). */
static void wake_all(void)
{
    pthread_mutex_lock(&tab.mu);
    for (int b = 0; b < BUCKETS; b++)
        for (struct lw_cohort *c = tab.bucket[b]; c != NULL; c = c->next)
            for (struct waiter *w = c->head; w != NULL; w = w->next)
                pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&tab.mu);
}

/* The child has only the forking thread, whose locks are the parent's. */
static void child(void)
{
    for (int b = 0; b < BUCKETS; b++) {
        while (tab.bucket[b] != NULL) {
            struct lw_cohort *c = tab.bucket[b];
            tab.bucket[b] = c->next;
            free(c);
        }
    }
}

static const struct lw_fork_hooks fork_hooks = {NULL, NULL, child};

static void init(void)
{
    lw__fork_register(&fork_hooks);
    lw__fork_register_mutex(&tab.mu);
    lw__gate_on_close(wake_all);
}

static uint64_t hash_key(const struct lw_settings *cfg, const char *key,
                         size_t keylen)
{
    return lw__hash_bytes(key, keylen) ^ (uintptr_t)cfg;
}

static uint64_t hash_of(const struct lw_hold *l)
{
    return hash_key(l->cfg, l->key, l->keylen);
}

/* The cohort of key under cfg (h: hash_key()), NULL if none.  Under
 * tab.mu. */
static struct lw_cohort *find_key(const struct lw_settings *cfg,
                                  const char *key, size_t keylen, uint64_t h)
{
    struct lw_cohort *c = tab.bucket[h % BUCKETS];

    while (c != NULL && (c->hash != h || c->cfg != cfg || c->keylen != keylen ||
                         memcmp(c->key, key, keylen) != 0))
        c = c->next;
    return c;
}

/* l's cohort (h: hash_of(l)), NULL if none.  Under tab.mu. */
static struct lw_cohort *find(const struct lw_hold *l, uint64_t h)
{
    return find_key(l->cfg, l->key, l->keylen, h);
}

int lw__cohort_idle(const struct lw_settings *cfg, const char *key,
                    size_t keylen)
{
    uint64_t h = hash_key(cfg, key, keylen);
    int idle;

    pthread_once(&once, init); /* tab.mu taken: a fork must not find it so */
    pthread_mutex_lock(&tab.mu);
    idle = find_key(cfg, key, keylen, h) == NULL;
    pthread_mutex_unlock(&tab.mu);
    return idle;
}

/* l's cohort, made if needed, with one more user; NULL out of memory.
 * Under tab.mu. */
static struct lw_cohort *join(const struct lw_hold *l)
{
    uint64_t h = hash_of(l);
    struct lw_cohort *c = find(l, h), **pp = &tab.bucket[h % BUCKETS];

    if (c == NULL) {
        c = malloc(sizeof *c + l->keylen);
        if (c == NULL)
            return NULL;
        *c = (struct lw_cohort){.next = *pp, .cfg = l->cfg, .hash = h};
        pthread_cond_init(&c->checked, NULL);
        c->tail = &c->head;
        c->keylen = l->keylen;
        memcpy(c->key, l->key, l->keylen);
        *pp = c;
    }
    c->users++;
    return c;
}

/* One user fewer; the last frees c.  Under tab.mu. */
static void leave(struct lw_cohort *c)
{
    struct lw_cohort **pp = &tab.bucket[c->hash % BUCKETS];

    if (--c->users > 0)
        return;
    while (*pp != c)
        pp = &(*pp)->next;
    *pp = c->next;
    pthread_cond_destroy(&c->checked);
    free(c);
}

static struct waiter *pop(struct lw_cohort *c)
{
    struct waiter *w = c->head;

    if (w != NULL) {
        c->head = w->next;
        if (c->head == NULL)
            c->tail = &c->head;
    }
    return w;
}

static void unlink_waiter(struct lw_cohort *c, struct waiter *w)
{
    struct waiter **pp = &c->head, *prev = NULL;

    while (*pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    *pp = w->next;
    if (c->tail == &w->next)
        c->tail = prev != NULL ? &prev->next : &c->head;
}

/* A new leader: a run starts for it, if it takes the key. */
static void elect(struct lw_cohort *c)
{
    c->led = 1;
    c->run = 1;
    c->run_lost = 0;
    c->fences_left = 0;
}

/* The leader goes without handing the lock on: the first waiter leads now,
 * or nobody does.  Under tab.mu. */
static void pass_lead(struct lw_cohort *c)
{
    struct waiter *w = pop(c);

    if (w == NULL) {
        c->led = 0;
        return;
    }
    elect(c);
    w->state = W_LEAD;
    pthread_cond_signal(&w->cv);
}

/* Take l from Redis for this process (we lead c).  On failure the next
 * waiter tries in turn, for itself: each caller learns its own answer. */
static int lead(struct lw_cohort *c, struct lw_hold *l,
                const lw_lock_opts *opts, uint64_t *fence)
{
    int rc = lw__gate_closing() ? LW_ESHUTDOWN : l->be->acquire(l, opts, fence);

    if (rc != LW_OK) {
        pthread_mutex_lock(&tab.mu);
        pass_lead(c);
        leave(c);
        pthread_mutex_unlock(&tab.mu);
    }
    return rc;
}

/* Wait on c's list (we joined c, tab.mu held, and c is led) until handed the
 * lock (*handed set), asked to lead, or out of time.  Returns with tab.mu
 * released. */
static int wait_here(struct lw_cohort *c, struct lw_hold *l,
                     const lw_lock_opts *opts, uint64_t *fence, int *handed)
{
    int64_t start_us = lw__now_us(),
            deadline_us = start_us + (int64_t)opts->wait_ms * 1000;
    struct waiter w = {.state = W_WAITING, .lease = l};
    struct timespec until = lw__abstime_us(deadline_us);
    pthread_condattr_t a;
    lw_lock_opts rest;
    int rc;

    pthread_condattr_init(&a);
    /* The wait's end is on the monotonic clock, as every deadline here. */
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &a);
    pthread_condattr_destroy(&a);
    lw__hold_contended(l);
    *c->tail = &w;
    c->tail = &w.next;
    while (w.state == W_WAITING && !lw__gate_closing() &&
           pthread_cond_timedwait(&w.cv, &tab.mu, &until) != ETIMEDOUT)
        ;
    lw__hold_waited(l, start_us);
    rc = w.state;
    if (rc == W_WAITING) {
        unlink_waiter(c, &w);
        leave(c);
    }
    pthread_mutex_unlock(&tab.mu);
    pthread_cond_destroy(&w.cv);
    switch (rc) {
    case W_HANDED:
        *fence = w.fence;
        *handed = 1;
        LW_STAT_ADD(handed_locally, 1);
        return LW_OK;
    case W_LEAD:
        /* What is left of the wait, rounded up: 0 still tries once. */
        rest = *opts;
        rest.wait_ms = (uint32_t)((deadline_us - lw__now_us() + 999) / 1000);
        if (deadline_us <= lw__now_us())
            rest.wait_ms = 0;
        return lead(c, l, &rest, fence);
    default:
        return lw__gate_closing() ? LW_ESHUTDOWN : LW_ETIMEOUT;
    }
}

/* At debug level, what an acquisition did: where the lock came from, its
 * fence and how long the call took (since start_us), or why it failed.
 * Said here, where every backend's acquisition passes and a hand-off
 * between threads is known. */
static void tell_acquired(const struct lw_hold *l, int rc, int handed,
                          uint64_t fence, int64_t start_us)
{
    int64_t us = lw__now_us() - start_us;

    if (rc != LW_OK)
        lw__log(LW_LOG_DEBUG,
                "lock %.*s: not acquired after %lld.%03lld ms: %s",
                (int)l->keylen, l->key, (long long)(us / 1000),
                (long long)(us % 1000), lw_strerror(rc));
    else
        lw__log(LW_LOG_DEBUG,
                "lock %.*s: acquired %s, fence %llu, after %lld.%03lld ms",
                (int)l->keylen, l->key,
                handed ? "from another thread of this process, which handed "
                         "it on"
                       : "from Redis",
                (unsigned long long)fence, (long long)(us / 1000),
                (long long)(us % 1000));
}

int lw__cohort_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                       uint64_t *fence)
{
    /* The clock is read only for a debug line: none on the quiet path. */
    int64_t start_us = lw__log_on(LW_LOG_DEBUG) ? lw__now_us() : 0;
    struct lw_cohort *c = NULL;
    int rc, handed = 0;

    if (!takes_part(l)) {
        rc = l->be->acquire(l, opts, fence);
        goto out;
    }
    pthread_once(&once, init);
    pthread_mutex_lock(&tab.mu);
    c = join(l);
    if (c == NULL) {
        pthread_mutex_unlock(&tab.mu);
        rc = LW_ENOMEM;
        goto out;
    }
    if (!c->led) {
        elect(c);
        pthread_mutex_unlock(&tab.mu);
        rc = lead(c, l, opts, fence);
    } else if (opts->wait_ms == 0) { /* a sibling thread has it: busy */
        leave(c);
        pthread_mutex_unlock(&tab.mu);
        rc = LW_ETIMEOUT;
    } else {
        rc = wait_here(c, l, opts, fence, &handed);
    }
    if (rc == LW_OK)
        l->cohort = c; /* its release goes through c: we lead it now */
out:
    if (start_us != 0)
        tell_acquired(l, rc, handed, rc == LW_OK ? *fence : 0, start_us);
    return rc;
}

/* release() at debug level: the same, and what it did, with whether Redis
 * keeps the key for the rest of a minimum hold (as the backend's release
 * is told).  Never inlined: the quiet path then saves no registers for a
 * line it does not write. */
__attribute__((noinline)) static int release_told(struct lw_hold *l)
{
    int64_t hold_ms = lw__hold_left_ms(l);
    int rc = l->be->release(l);

    if (hold_ms > 0 && rc == LW_OK)
        lw__log(LW_LOG_DEBUG,
                "lock %.*s: released; Redis keeps its key %lld ms more "
                "(hold_at_least)",
                (int)l->keylen, l->key, (long long)hold_ms);
    else
        lw__log(LW_LOG_DEBUG, "lock %.*s: released through Redis%s%s",
                (int)l->keylen, l->key, rc == LW_OK ? "" : ": ",
                rc == LW_OK ? "" : lw_strerror(rc));
    return rc;
}

/* Give l back through Redis, unless lw_shutdown() did already (then its
 * configuration is gone, and l is lost to its holder). */
static int release(struct lw_hold *l)
{
    if (__atomic_load_n(&l->ended, __ATOMIC_ACQUIRE))
        return LW_ELOST;
    if (lw__log_on(LW_LOG_DEBUG))
        return release_told(l);
    return l->be->release(l);
}

/* May the first waiter of c be handed the lock that l holds, with no round
 * trip?  (l's configuration is not gone: lw_shutdown() closes the gate
 * before it frees one, and ends leases after.) */
static int may_hand(const struct lw_cohort *c, const struct lw_hold *l)
{
    return c->head != NULL && !c->run_lost &&
           lw__hold_may_hand(l, c->run, c->head->lease->expire_ms);
}

/* Fences for the rest of l's run, in one round trip, if l is still ours.
 * As many as the run may still hand on, not only as many as threads wait
 * now: two threads taking turns have one waiter at each release, and a
 * round trip per section would undo the point of handing on locally.
 * Fences a run does not use are a gap in the counter, which only has to
 * increase.  Under tab.mu, released during the round trip.  LW_OK: minted,
 * and the key held l's token after l's section ended; LW_ELOST: it did
 * not; another code: no answer (l goes back through Redis). */
static int mint_fences(struct lw_cohort *c, struct lw_hold *l)
{
    uint32_t n = (uint32_t)l->cfg->local_handoffs + 1 - c->run;
    uint64_t first;
    int rc;

    pthread_mutex_unlock(&tab.mu);
    rc = l->be->fences(l, n, &first);
    pthread_mutex_lock(&tab.mu);
    if (rc == LW_OK) {
        c->next_fence = first;
        c->fences_left = n;
    } else if (rc == LW_ELOST) {
        c->run_lost = 1;
    }
    return rc;
}

/* Hand l on to the first waiter of c (may_hand() said so): its token and
 * validity, and a fence of the run's.  Under tab.mu. */
static void hand_on(struct lw_cohort *c, const struct lw_hold *l)
{
    struct waiter *w = pop(c);

    memcpy(w->lease->token, l->token, sizeof l->token);
    w->lease->toklen = l->toklen;
    w->lease->valid_until_ms = l->valid_until_ms;
    w->lease->drift_ms = l->drift_ms;
    w->fence = 0; /* Redlock: no fences */
    if (l->be->fences != NULL) {
        w->fence = c->next_fence++;
        c->fences_left--;
    }
    c->run++;
    w->state = W_HANDED;
    pthread_cond_signal(&w->cv);
}

/*
 * Is l, whose section has ended and whose lock went on to a sibling, still
 * ours in Redis?  Checks are batched: one is in flight at a time, and it
 * answers for every section that had ended when it was sent (a token found
 * in the key was there throughout), so when sections are shorter than a
 * round trip, one check serves several.  A section that ends while a check
 * is in flight waits for it, then for the next, which one of the waiting
 * threads sends.  Checks run outside tab.mu; the run's release through
 * Redis waits until every ended section's check is answered.  Under
 * tab.mu.
 */
static int check_handed(struct lw_cohort *c, struct lw_hold *l)
{
    uint64_t ticket = ++c->ended;

    while (c->answered < ticket) {
        uint64_t upto;
        int rc;
        if (c->checking) {
            pthread_cond_wait(&c->checked, &tab.mu);
            continue;
        }
        c->checking = 1;
        upto = c->ended;
        pthread_mutex_unlock(&tab.mu);
        rc = l->be->check(l);
        pthread_mutex_lock(&tab.mu);
        c->checking = 0;
        c->answered = upto;
        if (rc == LW_OK)
            c->ok_upto = upto;
        else
            c->failed = rc;
        if (rc == LW_ELOST)
            c->run_lost = 1;
        pthread_cond_broadcast(&c->checked);
    }
    return ticket <= c->ok_upto ? LW_OK : c->failed;
}

int lw__cohort_release(struct lw_hold *l)
{
    struct lw_cohort *c = l->cohort;
    int released, rc = LW_OK, checked = 0;

    if (c == NULL)
        return release(l);
    pthread_mutex_lock(&tab.mu);
    if (may_hand(c, l) && c->fences_left == 0 && l->be->fences != NULL) {
        rc = mint_fences(c, l);
        checked = rc == LW_OK;
    }
    /* Again after the round trip: waiters may have left. */
    if (rc == LW_OK && may_hand(c, l) &&
        (c->fences_left > 0 || l->be->fences == NULL)) {
        hand_on(c, l);
        if (!checked)
            rc = check_handed(c, l);
        leave(c);
        pthread_mutex_unlock(&tab.mu);
        rc = lw__hold_handed_verdict(l, rc);
        if (lw__log_on(LW_LOG_DEBUG))
            lw__log(LW_LOG_DEBUG,
                    "lock %.*s: released, handed on to another thread of "
                    "this process%s%s",
                    (int)l->keylen, l->key, rc == LW_OK ? "" : ": ",
                    rc == LW_OK ? "" : lw_strerror(rc));
        return rc;
    }
    /* The checks of the run's other sections read the key as this release
     * leaves it unless they are answered first. */
    while (c->answered < c->ended)
        pthread_cond_wait(&c->checked, &tab.mu);
    /* With a queue in Redis, the next leader may start while our release is
     * on its way: it finds the key busy and queues, and the release hands
     * it on.  Redlock has none: a leader voting then would find the key
     * still ours on the masters the release had not reached, split the
     * vote, give back what it won and back off.  It votes once the release
     * round is over. */
    released = !l->be->queues;
    if (released) {
        pthread_mutex_unlock(&tab.mu);
        rc = release(l);
        pthread_mutex_lock(&tab.mu);
    }
    pass_lead(c);
    leave(c);
    pthread_mutex_unlock(&tab.mu);
    return released ? rc : release(l);
}

/*
 * Event loops: leases taken and given back without blocking the loop's
 * thread (lw_acquire_async(), lw_release_async()).
 *
 * Requests are done by threads of the loop's own, with the calls every
 * other caller uses: the loop's thread only submits requests and, told
 * through an eventfd it watches (lw_loop_hooks), runs the finished ones'
 * callbacks.  So nothing blocks it: neither connecting (TLS included) nor
 * waiting for a busy lock nor renewing (the watchdog's thread does that)
 * nor releasing.
 *
 * The pumps do the simple requests, many at once: an acquisition of one
 * free key on one server, and the release of a lease it took (core/lease.h
 * says which: lw__lease_batchable(), lw__lease_give_batchable()).  A pump
 * takes every request queued for it, sends them all in one write on its
 * thread's connection (lw__lease_batch(): each acquisition the kind's free
 * try, each release its release script, with everything a blocking call
 * does around them) and wakes the loop once for the batch.  A request's
 * round trip then costs a thread wake-up and a Redis read and write per
 * batch, not per request.  Each key's requests go to one pump (its hash's),
 * which sends them in the order they came; there are two, so that Redis
 * runs one's batch while the other reads its replies and writes the next
 * (with one, Redis waits for the pump between batches).  An acquisition that
 * finds its key busy goes on to the ACQUIRE pool, which takes it the blocking
 * way (Redis's queue, the wake-up on release); so does one whose key a request
 * of the pools wants (requests of one loop for one key are served in the order
 * they came), or a thread of this process holds or waits for (the cohort hands
 * it on in memory, cohort.c).
 *
 * Requests of the loop for one key, with the same options, are served in
 * turn, handed the lease in memory (turn.c).
 *
 * Everything else goes to the pools, each grown on demand up to its bound,
 * whose workers make the blocking calls (lw_acquire_keys(), lw_release()):
 * every kind, topology and option, the fair queue in Redis, the hand-off
 * between threads of the process, all as they are for guards.  ACQUIRE
 * waits for locks (a worker may wait as long as a request's wait), RELEASE
 * gives them back: a release never queues behind acquisitions that wait
 * for the lock it gives back.  The bounds bound the connections a loop
 * opens (each worker, and each pump, keeps its thread's own, as any thread
 * does), however many requests are in flight: the rest wait in the loop's
 * queues, in the order they came.
 *
 * A request ended by lw_cancel_async() or lw_loop_free() gets its callback
 * at once; its worker or its pump, if it has it, finishes in the
 * background and gives back whatever it won.  The loop's memory is shared
 * by its thread, its workers and its pumps, and freed by the last of them:
 * lw_loop_free() never waits for a worker's wait to end.
 */
#include <lockweave.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/hash.h"
#include "base/result.h"
#include "core/guard.h"
#include "core/lease.h"
#include "core/take.h"
#include "loop/loop.h"

#define ACQUIRERS_MAX 16 /* workers waiting for locks, at most */
#define RELEASERS_MAX 2  /* workers giving them back */

/* How long a CHECK may wait at the pump for others to go with it.  One
 * check answers for every section of its turn that ended before it was
 * sent, and a turn's sections follow each other faster than a check's
 * round trip and wake-ups: sent one by one, the checks would cost Redis a
 * command and the loop's threads a wake-up each.  Waiting delays only the
 * verdicts of sections that handed the lock on, never a section, and
 * anything else queued (a run's release, which the checks go before)
 * takes them at once. */
#define CHECK_DELAY_US 1000

static int is_check(const struct request *q)
{
    return q->pool == RELEASE && q->op == CHECK;
}

/* One reference fewer; the last frees the loop.  Under lw->mu, which is
 * released either way. */
static void unref(struct lw_loop *lw)
{
    int last = --lw->refs == 0;

    pthread_mutex_unlock(&lw->mu);
    if (!last)
        return;
    while (lw->turns != NULL) {
        struct turn *t = lw->turns;
        lw->turns = t->next;
        free(t);
    }
    for (int p = 0; p < NPOOLS; p++)
        pthread_cond_destroy(&lw->pool[p].cv);
    for (int p = 0; p < NPUMPS; p++)
        pthread_cond_destroy(&lw->pump[p].cv);
    pthread_cond_destroy(&lw->settled);
    pthread_mutex_destroy(&lw->mu);
    free(lw);
}

/* Tell the loop's thread that requests are done.  Under lw->mu, so that
 * lw_loop_free(), which sets closing under it before closing the fd, is
 * never raced into writing another file. */
void lw__loop_wake(struct lw_loop *lw)
{
    uint64_t one = 1;

    if (!lw->closing && write(lw->fd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is full (2^64 - 2), so readable already. */
    }
}

/* q is done: on the list the loop's thread runs callbacks from (lw__loop_wake()
 * it). Under lw->mu. */
void lw__loop_finish(struct lw_loop *lw, struct request *q)
{
    q->state = DONE;
    q->qnext = NULL;
    *lw->done_tail = q;
    lw->done_tail = &q->qnext;
}

/* The release hook of a lease the loop handed out: no longer the loop's.
 * Released by another thread (lw_release()): its turn goes on, the
 * next request taking the lock from Redis. */
static void forget(void *owner, lw_lease *l)
{
    struct held *h = owner;
    struct lw_loop *lw = h->loop;

    (void)l;
    pthread_mutex_lock(&lw->mu);
    lw->refs++; /* lw_loop_free() may run while it settles */
    h->prev->next = h->next;
    h->next->prev = h->prev;
    pthread_cond_broadcast(&lw->settled); /* lw_loop_free() waits for h */
    if (h->turn != NULL) {
        lw__turn_settle(lw, h->turn);
        lw__turn_next(lw, h->turn);
    }
    unref(lw);
    free(h);
}

/* Record l as handed out by lw (the loop's thread), holding the lock of
 * turn t (or NULL): LW_OK or LW_ENOMEM. */
static int keep(struct lw_loop *lw, lw_lease *l, struct turn *t)
{
    struct held *h = malloc(sizeof *h);

    if (h == NULL)
        return LW_ENOMEM;
    h->loop = lw;
    h->lease = l;
    h->turn = t;
    pthread_mutex_lock(&lw->mu);
    h->prev = lw->held.prev;
    h->next = &lw->held;
    lw->held.prev->next = h;
    lw->held.prev = h;
    pthread_mutex_unlock(&lw->mu);
    lw__lease_set_owner(l, forget, h);
    return LW_OK;
}

/* Do q (a worker, outside lw->mu). */
static void run(struct request *q)
{
    if (q->pool == ACQUIRE) {
        /* The wait counts from the call, as a blocking caller's does: what
         * the request spent queued for a worker, or at the pump that found
         * its key busy, is gone from it.  All of it gone still tries once
         * (wait 0), as a wait that ran out while queued in Redis would. */
        int64_t waited_ms = (lw__now_us() - q->asked_us) / 1000;
        for (int i = 0; i < q->n; i++)
            q->opts[i].wait_ms = waited_ms >= q->opts[i].wait_ms
                                     ? 0
                                     : q->opts[i].wait_ms - (uint32_t)waited_ms;
        q->status =
            lw__lease_take(q->keys, q->keylens, q->opts, q->n, &q->lease);
    } else {
        q->status = lw_release(q->lease);
    }
}

static void *worker(void *arg)
{
    struct lw_loop *lw = ((void **)arg)[0];
    int p = (int)(intptr_t)((void **)arg)[1];
    struct pool *pl = &lw->pool[p];

    free(arg);
    pthread_mutex_lock(&lw->mu);
    for (;;) {
        struct request *q = pl->head;
        if (q == NULL) {
            if (lw->closing)
                break;
            pl->idle++;
            pthread_cond_wait(&pl->cv, &lw->mu);
            pl->idle--;
            continue;
        }
        pl->head = q->qnext;
        if (pl->head == NULL)
            pl->tail = &pl->head;
        pl->queued--;
        q->state = RUNNING;
        pthread_mutex_unlock(&lw->mu);
        run(q);
        pthread_mutex_lock(&lw->mu);
        if (q->pool == ACQUIRE)
            lw__turn_led(lw, q, 0, 0);
        if (q->ended) {
            /* Canceled meanwhile: nobody takes what was won. */
            lw_lease *won = q->pool == ACQUIRE ? q->lease : NULL;
            free(q);
            pthread_mutex_unlock(&lw->mu);
            if (won != NULL)
                lw_release(won);
            pthread_mutex_lock(&lw->mu);
            continue;
        }
        lw__loop_finish(lw, q);
        lw__loop_wake(lw);
    }
    pl->workers--;
    unref(lw);
    return NULL;
}

/* Queue q on its pool, starting a worker if none is idle and the pool may
 * grow.  Under lw->mu.  LW_OK, or LW_ESYSTEM when no worker could start and
 * none is there. */
int lw__loop_submit(struct lw_loop *lw, struct request *q)
{
    struct pool *pl = &lw->pool[q->pool];
    pthread_attr_t a;
    pthread_t t;
    void **arg;

    q->state = QUEUED;
    q->qnext = NULL;
    *pl->tail = q;
    pl->tail = &q->qnext;
    pl->queued++;
    if (pl->idle > 0)
        pthread_cond_signal(&pl->cv);
    /* Idle workers that were signalled are still counted idle until they
     * run: a new one is needed while more wait than are idle. */
    if (pl->queued <= pl->idle || pl->workers >= pl->max)
        return LW_OK; /* one of them takes it when done */
    arg = malloc(2 * sizeof *arg);
    if (arg != NULL) {
        arg[0] = lw;
        arg[1] = (void *)(intptr_t)q->pool;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, worker, arg) == 0) {
            pl->workers++;
            lw->refs++;
            arg = NULL;
        }
        pthread_attr_destroy(&a);
        free(arg);
    }
    if (pl->workers > 0)
        return LW_OK;
    pl->head = NULL; /* q was the only one: no worker for it */
    pl->tail = &pl->head;
    pl->queued = 0;
    return LW_ESYSTEM;
}

/* Give back leases won for requests that were canceled meanwhile (a
 * list through their qnext; the requests are freed).  Outside lw->mu. */
static void give_back_won(struct request *q)
{
    while (q != NULL) {
        struct request *next = q->qnext;
        lw_release(q->lease);
        free(q);
        q = next;
    }
}

/* What the pump's batch did for q (op): q done, handed on to the ACQUIRE
 * pool (its lock busy), or, canceled meanwhile, freed, with what it won
 * put on *won.  Under lw->mu.  1 when q is on the done list. */
static int pumped(struct lw_loop *lw, struct request *q,
                  const struct lw_lease_op *op, struct request **won)
{
    q->pumped = 0;
    if (q->pool == ACQUIRE && op->status == LW_R_BUSY) {
        if (q->ended) {
            q->status = LW_ECANCELED;
            lw__turn_led(lw, q, 0, 0);
            free(q); /* nothing won */
            return 0;
        }
        /* Busy: the blocking take does the rest (Redis's queue, the
         * wake-up on release), as for every other request. */
        if (lw__loop_submit(lw, q) == LW_OK)
            return 0;
        q->status = LW_ESYSTEM;
    } else {
        q->status = op->status;
        q->lease = q->pool == ACQUIRE ? op->lease : NULL;
    }
    if (q->pool == ACQUIRE) {
        lw__turn_led(lw, q, op->fences, op->first_fence);
    } else if (q->turn != NULL) {
        struct turn *t = q->turn;
        q->turn = NULL;
        if (--t->pending == 0)
            pthread_cond_broadcast(&lw->settled);
        if (q->op == GIVE) /* a HAND that could not hand on: the run ended */
            lw__turn_next(lw, t);
        else
            lw__turn_put(lw, t);
    }
    if (q->ended) {
        if (q->lease == NULL) {
            free(q);
        } else {
            q->qnext = *won;
            *won = q;
        }
        return 0;
    }
    lw__loop_finish(lw, q);
    return 1;
}

/* The pump's thread: takes every request queued for it at once, does them
 * in one batch (lw__lease_batch(): one write, the replies read in order),
 * and wakes the loop once for all that are done. */
static void *pump(void *arg)
{
    struct pump *p = arg;
    struct lw_loop *lw = p->loop;
    struct lw_lease_op *ops = NULL;
    int cap = 0;

    pthread_mutex_lock(&lw->mu);
    for (;;) {
        struct request *batch = p->head, *q, *next, *won = NULL;
        int n = 0, m = 0, done = 0;
        int64_t until = p == &lw->pump[0] ? lw__turn_expire(lw) : INT64_MAX;
        /* Only CHECKs queued: they wait a little for company. */
        if (batch != NULL && p->others == 0 && !lw->closing && !p->flush &&
            batch->asked_us + CHECK_DELAY_US > lw__now_us()) {
            if (batch->asked_us + CHECK_DELAY_US < until)
                until = batch->asked_us + CHECK_DELAY_US;
            batch = NULL;
        }
        if (batch == NULL) {
            struct timespec ts = lw__abstime_us(until);
            if (lw->closing && p->head == NULL)
                break;
            p->idle++;
            if (until == INT64_MAX)
                pthread_cond_wait(&p->cv, &lw->mu);
            else
                pthread_cond_timedwait(&p->cv, &lw->mu, &ts);
            p->idle--;
            continue;
        }
        p->head = NULL;
        p->tail = &p->head;
        p->others = 0;
        p->flush = 0;
        for (q = batch; q != NULL; q = q->qnext, n++)
            q->state = RUNNING;
        pthread_mutex_unlock(&lw->mu);
        lw__turn_hand_over(lw, batch);
        if (n > cap) {
            struct lw_lease_op *more = realloc(ops, (size_t)n * sizeof *ops);
            if (more != NULL) {
                ops = more;
                cap = n;
            }
        }
        if (n > cap) { /* out of memory: each the blocking way */
            for (q = batch; q != NULL; q = q->qnext)
                if (q->pool == ACQUIRE || q->op == GIVE)
                    run(q);
        } else {
            for (q = batch; q != NULL; q = q->qnext)
                if (q->pool == ACQUIRE)
                    ops[m++] =
                        (struct lw_lease_op){.key = q->keys[0],
                                             .keylen = q->keylens[0],
                                             .opts = &q->opts[0],
                                             .run_fences = q->run_fences};
                else if (q->op == GIVE)
                    ops[m++] =
                        (struct lw_lease_op){.give = 1, .lease = q->lease};
            lw__lease_batch(ops, m);
        }
        pthread_mutex_lock(&lw->mu);
        for (m = 0; batch != NULL; batch = next) {
            struct lw_lease_op ran = {.status = batch->status,
                                      .lease = batch->lease};
            int batched =
                n <= cap && (batch->pool == ACQUIRE || batch->op == GIVE);
            next = batch->qnext;
            done |= pumped(lw, batch, batched ? &ops[m++] : &ran, &won);
        }
        if (done)
            lw__loop_wake(lw); /* once for the whole batch */
        if (won != NULL) {
            pthread_mutex_unlock(&lw->mu);
            give_back_won(won);
            pthread_mutex_lock(&lw->mu);
        }
    }
    free(ops);
    unref(lw);
    return NULL;
}

/* Start the thread of pump p if it has none: LW_OK, or LW_ESYSTEM.  Under
 * lw->mu. */
int lw__pump_start(struct lw_loop *lw, struct pump *p)
{
    pthread_attr_t a;
    pthread_t t;

    if (!p->started) {
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, pump, p) == 0) {
            p->started = 1;
            lw->refs++;
        }
        pthread_attr_destroy(&a);
    }
    return p->started ? LW_OK : LW_ESYSTEM;
}

/* The pump of q's key: all of a key's requests go to one pump, which
 * sends them in the order they came. */
static struct pump *pump_of(struct lw_loop *lw, const struct request *q)
{
    const void *key = q->pool == ACQUIRE ? q->keys[0] : NULL;
    size_t keylen = q->pool == ACQUIRE ? q->keylens[0] : 0;

    if (q->pool != ACQUIRE)
        lw__lease_key(q->lease, &key, &keylen);
    return &lw->pump[lw__hash_bytes(key, keylen) % NPUMPS];
}

/* Queue q for the pump of its key, starting its thread on first use.
 * Under lw->mu.  LW_OK, or LW_ESYSTEM when it has no thread (q is not
 * queued). */
int lw__pump_submit(struct lw_loop *lw, struct request *q)
{
    struct pump *p = pump_of(lw, q);

    if (lw__pump_start(lw, p) != LW_OK)
        return LW_ESYSTEM;
    q->pumped = 1;
    q->pump = p;
    q->state = QUEUED;
    q->qnext = NULL;
    *p->tail = q;
    p->tail = &q->qnext;
    if (!is_check(q))
        p->others++;
    /* A CHECK behind another has nothing to tell a pump that sleeps: it
     * sleeps until the first one is due. */
    if (p->idle > 0 && (!is_check(q) || p->head == q))
        pthread_cond_signal(&p->cv);
    return LW_OK;
}

/* Does a request of lw's pools (queued or running) want q's one key?  Then
 * q goes after it, through the pools too: requests of one loop for one key
 * are served in the order they came.  Under lw->mu. */
static int key_in_pools(struct lw_loop *lw, const struct request *q)
{
    for (const struct request *r = lw->pending.next; r != &lw->pending;
         r = r->next)
        if (r->pool == ACQUIRE && !r->pumped && r->state != DONE) {
            for (int i = 0; i < r->n; i++)
                if (r->keylens[i] == q->keylens[0] &&
                    memcmp(r->keys[i], q->keys[0], q->keylens[0]) == 0)
                    return 1;
        }
    return 0;
}

/* Every loop not freed yet, for lw_shutdown(): requests waiting their turn
 * (turn.c) end LW_ESHUTDOWN when the gate closes, as waits in Redis do:
 * here, at once, not on the first pump's clock, which may be in a round
 * trip until lw_shutdown() is over. */
static struct {
    pthread_mutex_t mu;
    struct lw_loop *head; /* through live_next */
} live = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t live_once = PTHREAD_ONCE_INIT;

static void live_wake(void)
{
    pthread_mutex_lock(&live.mu);
    for (struct lw_loop *lw = live.head; lw != NULL; lw = lw->live_next) {
        pthread_mutex_lock(&lw->mu);
        lw->deadline_us = 0;
        lw__turn_expire(lw); /* closing: every waiter */
        pthread_mutex_unlock(&lw->mu);
    }
    pthread_mutex_unlock(&live.mu);
}

/* The child has none of the parent's loops' threads. */
static void live_child(void)
{
    live.head = NULL;
}

static const struct lw_fork_hooks live_fork = {NULL, NULL, live_child};

static void live_init(void)
{
    lw__fork_register(&live_fork);
    lw__fork_register_mutex(&live.mu);
    lw__gate_on_close(live_wake);
}

lw_loop *lw_loop_new_sized(const lw_loop_hooks *hooks, size_t size)
{
    struct lw_loop *lw;
    pthread_condattr_t ca;

    if (hooks == NULL)
        return NULL;
    lw = calloc(1, sizeof *lw);
    if (lw == NULL)
        return NULL;
    if (lw__struct_in(&lw->hooks, sizeof lw->hooks, hooks, size) != 0 ||
        lw->hooks.watch == NULL || lw->hooks.unwatch == NULL) {
        free(lw);
        return NULL;
    }
    lw->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (lw->fd < 0) {
        free(lw);
        return NULL;
    }
    pthread_mutex_init(&lw->mu, NULL);
    for (int p = 0; p < NPOOLS; p++) {
        pthread_cond_init(&lw->pool[p].cv, NULL);
        lw->pool[p].tail = &lw->pool[p].head;
        lw->pool[p].max = p == ACQUIRE ? ACQUIRERS_MAX : RELEASERS_MAX;
    }
    pthread_condattr_init(&ca);
    /* Waiters time out on the monotonic clock, as every deadline here. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int p = 0; p < NPUMPS; p++) {
        pthread_cond_init(&lw->pump[p].cv, &ca);
        lw->pump[p].tail = &lw->pump[p].head;
        lw->pump[p].loop = lw;
    }
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&lw->settled, NULL);
    lw->done_tail = &lw->done;
    list_init(&lw->pending);
    lw->held.prev = lw->held.next = &lw->held;
    lw->refs = 1;
    lw->fork_gen = lw__fork_gen;
    lw->handle = lw->hooks.watch(lw->hooks.loop, lw->fd, lw);
    if (lw->handle == NULL) {
        close(lw->fd);
        pthread_mutex_lock(&lw->mu);
        unref(lw);
        return NULL;
    }
    pthread_once(&live_once, live_init);
    pthread_mutex_lock(&live.mu);
    lw->live_next = live.head;
    live.head = lw;
    pthread_mutex_unlock(&live.mu);
    return lw;
}

/* A request for n keys (copied), each with its options; on the heap, NULL
 * when out of memory. */
static struct request *request_new(const void *const *keys,
                                   const size_t *keylens,
                                   const lw_lock_opts *opts, int n)
{
    size_t size =
        sizeof(struct request) +
        (size_t)n * (sizeof(lw_lock_opts) + sizeof(void *) + sizeof(size_t));
    struct request *q;
    char *p;

    for (int i = 0; i < n; i++)
        size += keylens[i];
    q = calloc(1, size);
    if (q == NULL)
        return NULL;
    q->opts = (lw_lock_opts *)(void *)(q + 1);
    q->keys = (const void **)(void *)(q->opts + n);
    q->keylens = (size_t *)(void *)(q->keys + n);
    p = (char *)(q->keylens + n);
    for (int i = 0; i < n; i++) {
        memcpy(p, keys[i], keylens[i]);
        q->opts[i] = opts[i];
        q->keys[i] = p;
        q->keylens[i] = keylens[i];
        p += keylens[i];
    }
    q->n = n;
    q->prev = q->next = q;
    return q;
}

/* start() under lw->mu, q not freed. */
int lw__loop_start(struct lw_loop *lw, struct request *q, int pump)
{
    int rc;

    if (pump && q->pool == ACQUIRE && key_in_pools(lw, q))
        pump = 0;
    rc = lw->closing                               ? LW_EINVAL
         : pump && lw__pump_submit(lw, q) == LW_OK ? LW_OK
                                                   : lw__loop_submit(lw, q);
    if (rc == LW_OK)
        list_add(&lw->pending, q);
    return rc;
}

/* Start q on lw (the loop's thread): LW_OK, or why not (q freed).  With
 * pump set (the caller asked the core: lw__lease_batchable() or
 * lw__lease_give_batchable()), its key's pump does it, unless an
 * acquisition of the pools wants its key; else, or when that pump has no
 * thread, a pool's worker. */
static int start(struct lw_loop *lw, struct request *q, int pump)
{
    int rc;

    pthread_mutex_lock(&lw->mu);
    rc = lw__loop_start(lw, q, pump);
    pthread_mutex_unlock(&lw->mu);
    if (rc != LW_OK)
        free(q);
    return rc;
}

/* Start taking n keys (each with its options, checked) for cb and ud. */
static int acquire(struct lw_loop *lw, const void *const *keys,
                   const size_t *keylens, const lw_lock_opts *opts, int n,
                   lw_acquired_fn cb, void *ud)
{
    struct request *q;
    int pump, rc;

    if (lw->fork_gen != lw__fork_gen)
        return LW_EFORKED; /* its workers are the parent's */
    if (lw->freeing)
        return LW_EINVAL; /* from a callback lw_loop_free() runs */
    q = request_new(keys, keylens, opts, n);
    if (q == NULL)
        return LW_ENOMEM;
    q->pool = ACQUIRE;
    q->asked_us = lw__now_us();
    q->acquired = cb;
    q->ud = ud;
    pump = n == 1 && lw__lease_batchable(keys[0], keylens[0], &opts[0]);
    if (pump && lw__lease_handable(&opts[0])) {
        pthread_mutex_lock(&lw->mu);
        rc = lw__turn_start(lw, q);
        pthread_mutex_unlock(&lw->mu);
        if (rc != LW_OK)
            free(q);
        return rc;
    }
    return start(lw, q, pump);
}

int lw_acquire_keys_async_sized(lw_loop *lw, const void *const *keys,
                                const size_t *keylens, int n,
                                const lw_lock_opts *opts, size_t opts_size,
                                lw_acquired_fn cb, void *ud)
{
    lw_lock_opts o[LW_LEASE_KEYS_MAX];

    if (lw == NULL || cb == NULL ||
        lw__lease_args(keys, keylens, n, opts, opts_size, &o[0]) != LW_OK)
        return LW_EINVAL;
    for (int i = 1; i < n; i++)
        o[i] = o[0];
    return acquire(lw, keys, keylens, o, n, cb, ud);
}

int lw_acquire_guards_async(lw_loop *lw, lw_guard **g, int n, lw_acquired_fn cb,
                            void *ud)
{
    const void *keys[LW_LEASE_KEYS_MAX];
    size_t lens[LW_LEASE_KEYS_MAX];
    lw_lock_opts opts[LW_LEASE_KEYS_MAX];
    int rc = LW_OK;

    if (lw == NULL || cb == NULL || g == NULL || n < 1 || n > LW_LEASE_KEYS_MAX)
        rc = LW_EINVAL;
    for (int i = 0; rc == LW_OK && i < n; i++) {
        const struct lw_gimpl *gi = g[i] != NULL ? lw__gimpl(g[i]) : NULL;
        if (gi == NULL || gi->state != LW_G_INIT)
            rc = LW_EINVAL;
        else if (gi->status != LW_OK)
            rc = gi->status; /* the key could not be built, or bad config */
        else if (gi->keylen == gi->key_start || lw__opts_check(&gi->opts))
            rc = LW_EINVAL;
        else {
            keys[i] = gi->key + gi->key_start;
            lens[i] = gi->keylen - gi->key_start;
            opts[i] = gi->opts;
        }
    }
    if (rc == LW_OK)
        rc = acquire(lw, keys, lens, opts, n, cb, ud); /* copies the keys */
    for (int i = 0; g != NULL && i < n && i < LW_LEASE_KEYS_MAX; i++)
        if (g[i] != NULL)
            lw_guard_discard(g[i]);
    return rc;
}

int lw_acquire_async_sized(lw_loop *lw, const void *key, size_t keylen,
                           const lw_lock_opts *opts, size_t opts_size,
                           lw_acquired_fn cb, void *ud)
{
    return lw_acquire_keys_async_sized(lw, &key, &keylen, 1, opts, opts_size,
                                       cb, ud);
}

int lw_release_async(lw_lease *l, lw_released_fn cb, void *ud)
{
    struct held *h = l != NULL ? lw__lease_claim(l, forget) : NULL;
    struct lw_loop *lw;
    struct turn *t;
    struct request *q;
    int rc;

    if (h == NULL)
        return LW_EINVAL; /* not a lease of a loop's (or released already) */
    lw = h->loop;
    /* The release's from here, not the loop's: lw_loop_free() or a
     * lw_release() elsewhere no longer gives it back a second time. */
    q = lw->freeing ? NULL : request_new(NULL, NULL, NULL, 0);
    if (q == NULL) {
        lw__lease_set_owner(l, forget, h); /* still the loop's */
        return lw->freeing ? LW_EINVAL     /* lw_loop_free() gives it back */
                           : LW_ENOMEM;
    }
    q->pool = RELEASE;
    q->lease = l;
    q->released = cb;
    q->ud = ud;
    t = h->turn;
    pthread_mutex_lock(&lw->mu);
    h->prev->next = h->next;
    h->next->prev = h->prev;
    pthread_mutex_unlock(&lw->mu);
    free(h);
    rc = t != NULL ? lw__turn_give(lw, t, q)
                   : start(lw, q, lw__lease_give_batchable(l));
    if (rc != LW_OK && keep(lw, l, NULL) != LW_OK)
        lw_release(l); /* neither the loop's nor a worker's: give it back */
    return rc;
}

/* Run q's callback with status (and the lease won, for an acquisition). */
static void call(struct request *q, int status, lw_lease *lease)
{
    if (q->pool == ACQUIRE)
        q->acquired(lease, status, q->ud);
    else if (q->released != NULL)
        q->released(status, q->ud);
}

/*
 * The requests done when it is called, one at a time, each taken off the
 * lists just before its callback: a callback that frees the loop
 * (lw_loop_free()) or cancels requests finds the others still pending,
 * ends them itself, and none of their callbacks runs after it returns.
 * Those done meanwhile wait for the next call (the descriptor says so), so
 * that other events of the loop are not starved.
 */
void lw_loop_dispatch(lw_loop *lw)
{
    uint64_t n;
    int left = 0;

    if (read(lw->fd, &n, sizeof n) < 0 && errno != EAGAIN)
        return;
    pthread_mutex_lock(&lw->mu);
    for (struct request *r = lw->done; r != NULL; r = r->qnext)
        left++;
    lw->refs++; /* lw outlives its callbacks, lw_loop_free() among them */
    for (struct request *q; left > 0 && !lw->freeing && (q = lw->done) != NULL;
         left--) {
        lw_lease *lease = q->pool == ACQUIRE ? q->lease : NULL;
        int status = q->status;
        lw->done = q->qnext;
        if (lw->done == NULL)
            lw->done_tail = &lw->done;
        list_del(q);
        pthread_mutex_unlock(&lw->mu);
        if (lease != NULL && keep(lw, lease, q->turn) != LW_OK) {
            if (q->turn != NULL) {
                pthread_mutex_lock(&lw->mu);
                lw__turn_settle(lw, q->turn);
                pthread_mutex_unlock(&lw->mu);
            }
            lw_release(lease); /* out of memory: not the caller's */
            lease = NULL;
            status = LW_ENOMEM;
            if (q->turn != NULL) {
                pthread_mutex_lock(&lw->mu);
                lw__turn_next(lw, q->turn);
                pthread_mutex_unlock(&lw->mu);
            }
        }
        call(q, status, lease);
        free(q);
        pthread_mutex_lock(&lw->mu);
    }
    unref(lw);
}

/* Unlink q from the singly linked list at *head (tail its end pointer). */
static void unqueue(struct request **head, struct request ***tail,
                    struct request *q)
{
    struct request **pp = head, *prev = NULL;

    while (*pp != q) {
        prev = *pp;
        pp = &(*pp)->qnext;
    }
    *pp = q->qnext;
    if (*tail == &q->qnext)
        *tail = prev != NULL ? &prev->qnext : head;
}

/* End q (out of the pending list) and run its callback with LW_ECANCELED.
 * A release still gives its lease back, and a lock an acquisition won is
 * given back: by a pump or a worker, on the loop's thread only when
 * neither can start. */
static void cancel_one(struct lw_loop *lw, struct request *q)
{
    struct request *unsent = NULL;
    /* Its callback, once q is the worker's or the pump's: the fields that
     * never change after start(), so read without the lock, which a
     * worker writing q's status meanwhile does not take. */
    struct request copy = {.pool = q->pool,
                           .acquired = q->acquired,
                           .released = q->released,
                           .ud = q->ud};
    struct pool *pl = &lw->pool[q->pool];

    pthread_mutex_lock(&lw->mu);
    if (q->waiting) {
        struct turn *t = q->turn;
        lw__turn_unlink(t, q);
        lw__turn_put(lw, t);
        free(q);
    } else if (q->state == QUEUED && q->pool == ACQUIRE) {
        struct turn *t = q->turn;
        if (q->pumped) {
            unqueue(&q->pump->head, &q->pump->tail, q);
            q->pump->others--;
        } else {
            unqueue(&pl->head, &pl->tail, q);
            pl->queued--;
        }
        free(q);
        if (t != NULL)
            lw__turn_next(lw, t);
    } else if (q->state == DONE) {
        struct turn *t = q->pool == ACQUIRE ? q->turn : NULL;
        unqueue(&lw->done, &lw->done_tail, q);
        if (q->pool == ACQUIRE && q->lease != NULL) {
            /* What was won, given back unseen: by the pump when it may,
             * behind the checks of the run it may be of. */
            int pump = lw__lease_give_batchable(q->lease);
            q->pool = RELEASE;
            q->pumped = 0;
            q->ended = 1;
            q->op = GIVE;
            q->turn = NULL;
            if (!(pump && lw__pump_submit(lw, q) == LW_OK) &&
                lw__loop_submit(lw, q) != LW_OK)
                unsent = q; /* no thread to give it back: here, below */
        } else {
            free(q);
        }
        if (t != NULL)
            lw__turn_next(lw, t);
    } else {
        q->ended = 1; /* its worker finishes it and frees it */
    }
    pthread_mutex_unlock(&lw->mu);
    if (unsent != NULL) {
        /* A round trip on the loop's thread, but only when no thread of
         * the loop's can start: else the watchdog would renew the lock
         * for nobody. */
        lw_release(unsent->lease);
        free(unsent);
    }
    call(&copy, LW_ECANCELED, NULL);
}

/* End the pending requests started with ud (every one, when all) at once:
 * callbacks run with LW_ECANCELED; a request a worker has is left to it
 * (ended), one queued is dropped, one done gives back what it won.  One at
 * a time, each off the pending list just before its callback, as
 * lw_loop_dispatch() does: a callback that frees the loop finds the others
 * still pending and ends them itself.  Returns how many. */
static int end_pending(struct lw_loop *lw, void *ud, int all)
{
    struct request *q;
    int n = 0, left = 0;

    pthread_mutex_lock(&lw->mu);
    for (q = lw->pending.next; q != &lw->pending; q = q->next)
        left += all || q->ud == ud;
    lw->refs++; /* lw outlives its callbacks, lw_loop_free() among them */
    for (; left > 0 && (all || !lw->freeing); left--) {
        for (q = lw->pending.next; q != &lw->pending && !all && q->ud != ud;
             q = q->next)
            ;
        if (q == &lw->pending)
            break;
        list_del(q);
        pthread_mutex_unlock(&lw->mu);
        cancel_one(lw, q);
        n++;
        pthread_mutex_lock(&lw->mu);
    }
    unref(lw);
    return n;
}

int lw_cancel_async(lw_loop *lw, void *ud)
{
    if (lw == NULL || lw->fork_gen != lw__fork_gen)
        return 0;
    return end_pending(lw, ud, 0);
}

void lw_loop_free(lw_loop *lw)
{
    struct lw_loop **pp;
    struct held *h;

    if (lw == NULL || lw->fork_gen != lw__fork_gen)
        return; /* a child's copy of a parent's loop: no workers to stop */
    if (lw->freeing)
        return;      /* called again, from a callback it runs */
    lw->freeing = 1; /* no request starts from a callback it runs */
    pthread_mutex_lock(&live.mu);
    for (pp = &live.head; *pp != lw; pp = &(*pp)->live_next)
        ;
    *pp = lw->live_next;
    pthread_mutex_unlock(&live.mu);
    end_pending(lw, NULL, 1);
    /* What is still out there is given back here, the loop's last act:
     * each hook undone first, so that a release elsewhere cannot race. */
    pthread_mutex_lock(&lw->mu);
    while ((h = lw->held.next) != &lw->held) {
        lw_lease *l = h->lease;
        if (lw__lease_claim(l, forget) == NULL) {
            /* Being released on another thread, whose forget() unlinks h
             * once it has lw->mu. */
            pthread_cond_wait(&lw->settled, &lw->mu);
            continue;
        }
        h->prev->next = h->next;
        h->next->prev = h->prev;
        if (h->turn != NULL)
            lw__turn_settle(lw, h->turn);
        free(h);
        pthread_mutex_unlock(&lw->mu);
        lw_release(l);
        pthread_mutex_lock(&lw->mu);
    }
    lw->closing = 1;
    for (int p = 0; p < NPOOLS; p++)
        pthread_cond_broadcast(&lw->pool[p].cv);
    for (int p = 0; p < NPUMPS; p++)
        pthread_cond_broadcast(&lw->pump[p].cv);
    pthread_mutex_unlock(&lw->mu);
    lw->hooks.unwatch(lw->handle);
    close(lw->fd);
    pthread_mutex_lock(&lw->mu);
    unref(lw);
}

#ifndef LW_LOOP_H
#define LW_LOOP_H

/*
 * An event loop's state (lw_loop), shared by the files of runtime/loop:
 * loop.c (the calls, the pools and the pumps) and turn.c (one key's
 * requests handed the lease in memory).  Everything here is under lw->mu
 * unless a field says otherwise.
 */
#include <lockweave.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum { ACQUIRE, RELEASE, NPOOLS };
enum { QUEUED, RUNNING, DONE };
/* What a release does at the pump: give its lease back through Redis,
 * hand it on to its turn's next request (a round trip first), or, handed
 * on already, have its section checked. */
enum { GIVE, HAND, CHECK };

struct request {
    struct request *prev, *next; /* in the loop's pending list */
    struct request *qnext;       /* in a pool's queue, the pump's, or the
                                    done list */
    int pool;                    /* ACQUIRE or RELEASE: what it does */
    int pumped;        /* a pump's (queued for it or in its batch), not a
                          pool's */
    struct pump *pump; /* the pump of its key (lw__pump_submit()) */
    int state;
    int ended; /* its callback ran (canceled): only the worker is left */
    void *ud;
    lw_acquired_fn acquired;
    lw_released_fn released;
    lw_lease *lease; /* RELEASE: to give back; ACQUIRE: what was won */
    int status;
    int64_t asked_us;   /* ACQUIRE: when the loop asked (lw__now_us()) */
    struct turn *turn;  /* ACQUIRE: the turn it waits in or leads (taking
                           the lock, or holding it until released);
                           RELEASE: the turn its section was of (HAND,
                           CHECK, or a HAND that became a GIVE) */
    int waiting;        /* on its turn's list */
    int run_fences;     /* leads a turn others wait in: its take mints the
                           run's fences too */
    int op;             /* RELEASE at the pump: GIVE, HAND or CHECK */
    int checked;        /* CHECK, HAND: what Redis said of the key */
    unsigned run_id;    /* CHECK, HAND: the run (turn's run_id) it was of */
    int n;              /* keys; then, in the request's own allocation: */
    lw_lock_opts *opts; /* each key's options */
    const void **keys;
    size_t *keylens;
};

/* A lease the loop handed out and that has not been released since. */
struct held {
    struct held *prev, *next;
    struct lw_loop *loop;
    lw_lease *lease;
    struct turn *turn; /* the turn it holds the lock for, if any */
};

/* A turn: the loop's requests for one key, with the same options (all but
 * the wait), served one after the other from one take of the lock from
 * Redis (see the top of this file).  Under lw->mu. */
struct turn {
    struct turn *next;            /* in lw->turns */
    struct request *head, **tail; /* waiting, oldest first (qnext) */
    int led;              /* one of its requests takes the lock, holds it, or
                             is handed it */
    int pending;          /* its releases at the pump (HAND, CHECK) */
    unsigned run;         /* sections the lock's take from Redis has served */
    unsigned run_base;    /* of them, those before the check that let the
                             run go on last (turn.c, check_run()) */
    unsigned run_id;      /* one more for every take from Redis */
    int run_lost;         /* a check found the run's token gone from the key */
    uint32_t fences_left; /* minted for the run, not handed out yet */
    uint32_t refill_at;   /* this many left: a check may let the run go on */
    uint32_t hurry_at;    /* this many left: the run's checks go at once */
    uint64_t next_fence;  /* the lowest of them */
    lw_lock_opts opts;
    size_t keylen;
    char key[];
};

struct pool {
    struct request *head, **tail; /* waiting for a worker, oldest first */
    int queued;                   /* how many */
    pthread_cond_t cv;            /* its idle workers wait here */
    int workers, idle, max;
};

/* The pumps: threads that do the loop's simple requests many at once, each
 * on its own connection, each for its share of the keys (see loop.c).  Two
 * keep Redis busy while a loop has many requests in flight: one pump's
 * batch runs there while the other reads its replies and writes its next.
 * More add connections and threads for nothing (measured: four do what two
 * do). */
#define NPUMPS 2

struct pump {
    struct lw_loop *loop;
    struct request *head, **tail; /* waiting for its next batch */
    int others;                   /* how many of them are not CHECKs */
    pthread_cond_t cv;            /* it waits here when idle */
    int flush;                    /* send the CHECKs queued now: a release
                                     waits for them (lw__turn_settle()), or
                                     a run for more fences (turn.c) */
    int started;                  /* its thread was started */
    int idle;
};

struct lw_loop {
    lw_loop_hooks hooks;
    void *handle;      /* hooks.watch()'s */
    int fd;            /* eventfd: requests are done */
    unsigned fork_gen; /* the process it was made in */
    pthread_mutex_t mu;
    struct pool pool[NPOOLS];
    struct pump pump[NPUMPS];
    struct request *done, **done_tail; /* for the loop's thread */
    struct request pending;            /* list head: every request whose
                                          callback has not run */
    struct held held;                  /* list head */
    struct turn *turns;
    pthread_cond_t settled;    /* a turn's releases at the pump are done,
                                  or another thread's release let go of a
                                  lease of the loop's (forget()) */
    int64_t deadline_us;       /* no waiter of a turn times out before then */
    struct lw_loop *live_next; /* in loop.c's list of the loops not freed
                                  (under its own mutex) */
    int refs;    /* the loop's thread until lw_loop_free(), each worker,
                    each pump, lw_loop_dispatch() while it runs */
    int freeing; /* lw_loop_free() was called (the loop's thread only) */
    int closing; /* lw_loop_free() ran */
};

/* The loop's pending list (struct request's prev and next). */
static inline void list_init(struct request *head)
{
    head->prev = head->next = head;
}

static inline void list_add(struct request *head, struct request *q)
{
    q->prev = head->prev;
    q->next = head;
    head->prev->next = q;
    head->prev = q;
}

static inline void list_del(struct request *q)
{
    q->prev->next = q->next;
    q->next->prev = q->prev;
    q->prev = q->next = q;
}

/* loop.c */

/* q is done: on the list the loop's thread runs callbacks from (then
 * lw__loop_wake() it). */
void lw__loop_finish(struct lw_loop *lw, struct request *q);

/* Tell the loop's thread that requests are done. */
void lw__loop_wake(struct lw_loop *lw);

/* Start q (its pool, pump or not, set): by its key's pump when pump is set
 * and no acquisition of the pools wants its key, else by a pool's worker;
 * pending from then on.  LW_OK, or why not (q not freed). */
int lw__loop_start(struct lw_loop *lw, struct request *q, int pump);

/* Queue q on its pool (a worker's): LW_OK, or LW_ESYSTEM when no worker
 * could start and none is there. */
int lw__loop_submit(struct lw_loop *lw, struct request *q);

/* Start the thread of pump p if it has none: LW_OK, or LW_ESYSTEM.  The
 * first pump keeps the clock that times out turns' waiters. */
int lw__pump_start(struct lw_loop *lw, struct pump *p);

/* Queue q for the pump of its key, starting its thread on first use:
 * LW_OK, or LW_ESYSTEM when it has no thread (q is not queued). */
int lw__pump_submit(struct lw_loop *lw, struct request *q);

/* turn.c */

/* Start an acquisition q of one key, the pump's (lw__lease_batchable()),
 * whose lease may be handed on (lw__lease_handable()): in its turn, or
 * leading a new one.  LW_OK, or why not (q not freed). */
int lw__turn_start(struct lw_loop *lw, struct request *q);

/* Release q's lease, the lock of turn t, on the loop's thread (see turn.c):
 * LW_OK, or why not (q freed, the lease not given back).  Not under
 * lw->mu. */
int lw__turn_give(struct lw_loop *lw, struct turn *t, struct request *q);

/* q, its turn's leader, has its answer from Redis (status, q->lease; fences
 * minted with the take, the lowest first): the run starts with it, or the
 * next request leads. */
void lw__turn_led(struct lw_loop *lw, struct request *q, uint32_t fences,
                  uint64_t first);

/* Nobody of t holds its lock or takes it now: its first waiter takes it
 * from Redis, or t ends. */
void lw__turn_next(struct lw_loop *lw, struct turn *t);

/* Free t once nothing is left of it. */
void lw__turn_put(struct lw_loop *lw, struct turn *t);

/* Wait until t's releases at the pump (its checks) are done, before its
 * lease is given back other than through the pump. */
void lw__turn_settle(struct lw_loop *lw, struct turn *t);

/* Take w off t's list, where it waits. */
void lw__turn_unlink(struct turn *t, struct request *w);

/* Waiters whose wait ran out get LW_ETIMEOUT, every one LW_ESHUTDOWN once
 * lw_shutdown() runs; returns when the next wait runs out (INT64_MAX: none
 * waits). */
int64_t lw__turn_expire(struct lw_loop *lw);

/* The pump's batch's HANDs and CHECKs, before its releases through Redis
 * (the pump's thread, not under lw->mu). */
void lw__turn_hand_over(struct lw_loop *lw, struct request *batch);

#endif

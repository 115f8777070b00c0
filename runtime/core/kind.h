#ifndef LW_KIND_H
#define LW_KIND_H

#include <hiredis/hiredis.h>
#include <lockweave.h>
#include <stdint.h>

#include "net/script.h"

/*
 * A lock kind: what one kind of lock (a mutex, a read lock, a semaphore)
 * adds to the queue protocol's calls, in one description, as Redis's
 * command table describes a command.  acquire.c, release.c and renew.c run
 * the protocol and ask the lease's kind what to send; the cohorts, Redlock
 * and the guard ask it what it allows; lockweave-ctl asks the kinds which
 * of them a key it finds belongs to.  Each kind is one file, kind_<name>.c,
 * with its scripts beside it; runtime/README.md says how a new one is
 * added.
 */
struct lw_hold;
struct lw_names;

/* What a kind is and allows (lw_kind.flags). */
#define LW_KIND_READERS                                                        \
    0x02u /* its scripts take the readers' set after                           \
             the common KEYS; lockweave-ctl counts its                         \
             holders there (else in the key itself) */
#define LW_KIND_PERMITS                                                        \
    0x04u /* its acquire-or-queue takes N (permits)                            \
             after the common ARGV */
#define LW_KIND_SHARED                                                         \
    0x08u                     /* several hold it at once: lockweave-ctl        \
                                 shows its holders, and unlock --force         \
                                 does not break it */
#define LW_KIND_REDLOCK 0x10u /* may be taken on independent masters */
#define LW_KIND_HANDOFF                                                        \
    0x20u /* may be handed from thread to thread of a                          \
             process, in memory (cohort.c) */

struct lw_kind {
    const char *name; /* as lockweave-ctl shows it: "mutex", "read", ... */
    const char *noun; /* in messages: "a mutex", "a read lock", ... */
    unsigned flags;   /* LW_KIND_... */
    /* Acquire-or-queue (acquire.c): KEYS lock, queue, fence, alive key
     * [, readers]; ARGV token, lease ms, join, queue ttl ms, alive ms
     * [, N].  {fence, lease left ms} when ours, {-1 - holder's TTL, our
     * entry} when busy, {0, what Redis holds} when the key is another
     * kind's. */
    struct lw_script *enqueue;
    /* A first try, cheaper than enqueue for a lock that is free (acquire.c):
     * KEYS lock, fence; ARGV token, lease ms.  {fence, lease left ms} when
     * ours, {-1, ''} when busy.  NULL: enqueue, not joining the queue. */
    struct lw_script *try_free;
    /* Renewal of many leases in one call (renew.c): KEYS the locks, ARGV
     * their tokens then lease ms; one 1 (renewed) or 0 (not ours) per key.
     * NULL: each lease alone, by renew_one(). */
    struct lw_script *renew;
    /* Renew l alone (the watchdog's thread): LW_OK, LW_ELOST, or LW_EREDIS
     * when no usable answer came.  NULL when renew is set. */
    int (*renew_one)(const struct lw_hold *l);
    /* Renew l alone in one script that writes only while l is ours on the
     * server that runs it: what an acquisition's WAIT follows (replicas.c),
     * so that replicas are only counted where the lock is.  KEYS lock
     * [, readers' set with LW_KIND_READERS]; ARGV token, lease ms.  1 or
     * {1} renewed, 0 or {0} not ours. */
    struct lw_script *renew_alone;
    /* Give l back (hold_ms 0, the next waiter told) or keep it hold_ms
     * longer (the rest of a minimum hold), following redirections until
     * deadline_us: LW_OK with *r an integer reply the caller frees — 1
     * released, 2 released by an earlier run of this release, 0 gone, -1
     * another owner's — or an error. */
    int (*release)(const struct lw_hold *l, const struct lw_names *n,
                   int64_t hold_ms, int64_t deadline_us, redisReply **r,
                   int *replayed);
    /* The script release sends for a lease with no minimum hold, when it
     * is one script taking exactly lw__release_args() with no hold
     * argument (and the readers' set with LW_KIND_READERS), answering as
     * release does: what a release pipelined with others sends
     * (lw__queue_give_request(), for an event loop's pump).  NULL: the
     * kind's release is only release (its script takes a hold, or it
     * splits). */
    struct lw_script *release_script;
    /* try_free and release_script of many leases in one call, what an
     * event loop's pump sends for a batch (core/batch.c): ARGV[1] names the
     * ops ("t" a try, "r" a release; lua.h, BATCH_LUA), each op's KEYS and
     * ARGV follow in order; one reply per op, as its own script answers,
     * or an error reply for an op that failed alone.  NULL: each op its
     * own script. */
    struct lw_script *batch;
    /* lockweave-ctl: does a lock key whose GET was answered so hold a lock
     * of this kind? */
    int (*owns)(const redisReply *get);
    /* A take answered {0, v} (the key held as something else): is v this
     * kind's finished outcome (run once's done mark)?  Then it is kept in
     * l (lw_hold.outcome) and the take ends LW_EDONE.  NULL: never. */
    int (*done)(struct lw_hold *l, const char *v, size_t len);
    /* Appended to each lease's token (acquire.c), so that lockweave-ctl
     * tells this kind's key from a mutex's: never a hex digit, and short
     * enough that the token fits LW_TOKEN_MAX.  NULL: nothing. */
    const char *token_tag;
};

extern const struct lw_kind lw__kind_mutex; /* kind_mutex.c */
extern const struct lw_kind lw__kind_read;  /* kind_read.c */
extern const struct lw_kind lw__kind_sem;   /* kind_sem.c */
extern const struct lw_kind lw__kind_once;  /* kind_once.c */

/* What a run-once mark's value v (len bytes, a GET's answer) is:
 * LW_ONCE_DONE, with *outcome and *outlen its stored outcome's text
 * ("i:42", "d:0.5", "v": once.c); LW_ONCE_RUNNING, a run's token; or 0,
 * not a mark (kind_once.c). */
#define LW_ONCE_RUNNING 1
#define LW_ONCE_DONE    2
int lw__once_mark(const char *v, size_t len, const char **outcome,
                  size_t *outlen);

/* Every kind, NULL-terminated (kind.c): for tools that tell them apart. */
extern const struct lw_kind *const lw__kinds[];

/* The kind opts asks for. */
const struct lw_kind *lw__kind_for(const lw_lock_opts *opts);

/* The kind a lock key whose GET was answered so belongs to; NULL when none
 * claims it. */
const struct lw_kind *lw__kind_of(const redisReply *get);

#endif

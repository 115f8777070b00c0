#ifndef LW_QUEUE_H
#define LW_QUEUE_H

#include <hiredis/hiredis.h>
#include <lockweave.h>
#include <stdint.h>

#include "base/numfmt.h"
#include "core/hold.h"
#include "core/keynames.h"
#include "net/conn.h"

/*
 * The queue backend: one server or a Redis Cluster, waiters queued fairly
 * in Redis and handed the lock on release (see backend.h for the contract;
 * kind.h and kind_*.c for what runs on the server).
 */
struct lw_names;

/* How long one renewal call may follow cluster redirections and retries:
 * the watchdog's round goes on to the other leases after it. */
#define LW_RENEW_TRY_MS 250

int lw__queue_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                      uint64_t *fence);
int lw__queue_release(struct lw_hold *l);
void lw__queue_renew(struct lw_hold *const *v, int n, int *results);
int lw__queue_fences(struct lw_hold *l, uint32_t n, uint64_t *first);
int lw__queue_check(struct lw_hold *l);
int lw__queue_more(struct lw_hold *l, uint32_t n, uint64_t *first);

/* Give back a lock this attempt may hold without a verdict (the body never
 * ran): the release script for l's token, once, its answer ignored; a
 * lock not given back ends by its TTL. */
void lw__queue_give_back(const struct lw_hold *l, const struct lw_names *names);

/* The release script for l's token (names: its companion keys), following
 * cluster redirections until deadline_us.  LW_OK with *r the reply (caller
 * frees). */
int lw__queue_release_script(const struct lw_hold *l,
                             const struct lw_names *names, int64_t deadline_us,
                             redisReply **r, int *replayed);

/* A mutex's release for any key and token under configuration s, for a
 * release that is not a lease's own (lockweave-ctl's forced unlock): what
 * kind_mutex.c sends.  LW_OK with *r an integer reply: 1 released (and the
 * next waiter told), 2 released by an earlier run, 0 gone, -1 another
 * owner's. */
struct lw_settings;
int lw__release_send(const struct lw_settings *s, const char *key,
                     size_t keylen, const char *token, size_t toklen,
                     const struct lw_names *names, int flags,
                     int64_t deadline_us, redisReply **r, int *replayed);

/*
 * A free try as a request of its own, built here and sent by the caller
 * with others in one pipeline (core/take.c's batch, for an event loop's
 * pump): the same script, arguments and reading of its answer as
 * lw__queue_acquire()'s first try, one server only (release.h has the
 * release's).  t holds what its request points to: it must not move
 * between the two calls.
 */
struct lw_try {
    struct lw_hold *l;
    struct lw_names names;
    const char *argv[4];
    size_t lens[4];
    struct lw_request q; /* what to send */
};

/* l's free try (l from lw__hold_init(), its kind with a try script): a
 * new token in l, the request in t->q.  LW_OK; else nothing to send, and
 * lw__queue_try_reply() still ends t. */
int lw__queue_try_request(struct lw_try *t, struct lw_hold *l);

/* What the try's round trip gave, rc and r (freed here), sent_us when it
 * was first written (0: never): LW_OK (*fence, l->valid_until_ms),
 * LW_R_BUSY, or an error, after which a lock a written try may have taken
 * is given back (a blocking round trip, best effort), as
 * lw__queue_acquire() does. */
int lw__queue_try_reply(struct lw_try *t, int rc, redisReply *r,
                        int64_t sent_us, uint64_t *fence);

/*
 * A run's fences as a request of its own (lw__queue_fences()'s script for
 * l's token), for core/take.c's batch to send right behind the free try
 * that takes the lock: a run an event loop hands on in memory then has
 * its fences with its take, not a round trip later.  Minted only if the
 * key holds l's token when the script runs, so only if the try took it.
 * f holds what its request points to: it must not move between the calls.
 */
struct lw_fences {
    struct lw_names names;
    char num[LW_FMT_U64_MAX];
    const char *argv[5];
    size_t lens[5];
    uint32_t n;
    struct lw_request q; /* what to send */
};

/* n fences for l (its token set: after lw__queue_try_request()): LW_OK
 * with the request in f->q, else nothing to send (and nothing to end). */
int lw__queue_fences_request(struct lw_fences *f, const struct lw_hold *l,
                             uint32_t n);

/* What the fences' round trip gave, rc and r (freed here): LW_OK with
 * *first the lowest of f->n, LW_ELOST (the key was not l's), or why not. */
int lw__queue_fences_reply(struct lw_fences *f, int rc, redisReply *r,
                           uint64_t *first);

/* Leave no receipt: the release is not the holder's, whose own release
 * must then find its lock lost, not released by itself. */
#define LW_RELEASE_NO_RECEIPT 1

#endif

#ifndef LW_RELEASE_H
#define LW_RELEASE_H

#include <stddef.h>
#include <stdint.h>

#include "base/numfmt.h"
#include "core/keynames.h"
#include "net/conn.h"
#include "net/script.h"

/*
 * What every kind's release script takes (release.c builds it, kind_*.c
 * send it): KEYS lock, queue, fence [, readers]; ARGV token, mailbox ms,
 * hand-off age ms, alive-key prefix, receipt ms [, hold ms].
 */
struct lw_settings;
struct lw_names;

struct lw_release_args {
    const char *argv[10];
    size_t lens[10];
    int nkeys, nargs; /* argv holds nkeys KEYS, then nargs ARGV */
    char handoff[LW_FMT_U64_MAX], receipt[LW_FMT_U64_MAX];
    char hold[LW_FMT_U64_MAX];
};

/* Fill a for token's release of key (n: its companion keys) under s: with
 * the readers' set when readers, a receipt unless no_receipt, and the hold
 * argument when hold_ms >= 0.  a keeps pointers to key, token and n. */
void lw__release_args(struct lw_release_args *a, const struct lw_settings *s,
                      const char *key, size_t keylen, const char *token,
                      size_t toklen, const struct lw_names *n, int readers,
                      int no_receipt, int64_t hold_ms);

/* What a release does where a slot migration splits its keys (kind_*.c):
 * the same with fewer keys, hold the hold argument ("0": give back). */
struct lw_hold;
typedef int (*lw_split_fn)(const struct lw_hold *l, const struct lw_names *n,
                           const char *hold, int64_t deadline_us,
                           struct redisReply **r, int *replayed);

/* A kind's release whose script takes the hold (a semaphore's, a read
 * lock's): script with lw__release_args() (readers: with the readers' set),
 * and split when a migration keeps its keys from one script.  As
 * lw_kind.release. */
int lw__release_with(const struct lw_hold *l, const struct lw_names *n,
                     int64_t hold_ms, struct lw_script *script, int readers,
                     lw_split_fn split, int64_t deadline_us,
                     struct redisReply **r, int *replayed);

/*
 * A release as a request of its own, built here and sent by the caller
 * with others in one pipeline (core/take.c's batch, for an event loop's
 * pump): the script, arguments and verdict of lw__queue_release(), one
 * server only.  g holds what its request points to: it must not move
 * between the two calls.
 */
struct lw_give {
    struct lw_hold *l;
    struct lw_names names;
    struct lw_release_args a;
    struct lw_request q; /* what to send */
    int ran_out;         /* the lease had run out when it was built */
};

/* l's release (its renewals stopped; its kind with a release script and
 * no minimum hold): the request in g->q.  LW_OK; else nothing to send, and
 * lw__queue_give_reply() still gives the verdict. */
int lw__queue_give_request(struct lw_give *g, struct lw_hold *l);

/* What the release's round trip gave, rc and r (freed here): the verdict
 * lw__queue_release() gives, LW_OK or LW_ELOST (the lost handler told). */
int lw__queue_give_reply(struct lw_give *g, int rc, redisReply *r);

#endif

#ifndef LW_MASTERS_H
#define LW_MASTERS_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "base/url.h"

/*
 * One command to every master of a Redlock configuration at once: written to
 * all sockets first, then the replies are collected as they come (poll), so a
 * round costs the slowest master's round trip, not the sum, and a hung master
 * costs at most the round's deadline.
 */
struct lw_conn;
struct lw_request;
struct lw_settings;

/* This thread's connections to the masters of one configuration. */
struct lw_masters {
    const struct lw_settings *cfg;
    unsigned gen; /* cfg->gen: after lw_shutdown() a new snapshot may sit at
                     the same address */
    int n, quorum;
    struct lw_conn *conn[LW_ENDPOINTS_MAX];
    struct lw_masters *prev, *next; /* every thread's, in one list */
};

/* What one master answered. */
struct lw_vote {
    redisReply *r; /* its reply; NULL: none (unreachable, no reply before the
                      deadline, or an error reply — logged) */
    int sent;      /* the command was written: it may have run there */
    int replayed;  /* sent again on a new connection after the first broke */
    int fresh;     /* sent on a connection opened for it: one that carries
                      none of this thread's earlier commands */
};

/* This thread's connections for cfg (a Redlock configuration), made on first
 * use and remade when cfg is another snapshot; freed when the thread exits.
 * LW_OK or LW_ENOMEM. */
int lw__masters_get(const struct lw_settings *cfg, struct lw_masters **out);

/* Run q (one command or one script: one reply) on the masters whose bit is
 * set in mask (votes[0..m->n), all filled), collecting replies until
 * deadline_us (lw__now_us() time), with lw__conn_run()'s NOSCRIPT and
 * replay rules.  A master that does not answer in time is closed and backs
 * off, so the next rounds do not wait for it again. */
void lw__masters_run(struct lw_masters *m, const struct lw_request *q,
                     unsigned mask, int64_t deadline_us, struct lw_vote *votes);

void lw__votes_free(struct lw_vote *votes, int n);

/* Close and free this thread's master connections (lw_shutdown()). */
void lw__masters_drop(void);

#endif

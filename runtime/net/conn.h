#ifndef LW_CONN_H
#define LW_CONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "base/backoff.h"
#include "net/resp.h"

/*
 * One Redis connection, used by one thread at a time.  Every guarded thread
 * has its own (lw__conn_thread()), so no hiredis context is ever shared
 * mid-command; the watchdog owns its own.
 *
 * Made in net/: conn.c (a connection's life, its I/O and failures), open.c
 * (lw__conn_ensure()), threadconn.c (lw__conn_thread()), exchange.c (a
 * request's round trip), reply.c (replies, error replies).
 */
struct lw_conn {
    redisContext *ctx;         /* the socket, hiredis's reply reader, errstr */
    struct lw_tls *tls;        /* rediss://: the session every byte goes through
                                  (hiredis then never reads or writes ctx->fd) */
    const struct lw_url *url;  /* where to; NULL: the configured endpoint
                                  (the first of LOCKWEAVE_REDIS_URL).  Must
                                  outlive the connection. */
    unsigned cfg_gen;          /* lw_settings.gen the context was opened with */
    unsigned fork_gen;         /* lw__fork_gen the context was opened in */
    int64_t retry_at_ms;       /* no reconnect attempt before this (backoff) */
    struct lw_backoff backoff; /* reconnect delays, in ms */
    int fresh;          /* opened by the current call: no replay on error */
    int64_t sent_us;    /* when lw__conn_run()'s request was first written
                           (0: it was not): it cannot have run earlier */
    int wait_ms;        /* replies may come this much past the command
                           timeout (lw__conn_set_wait()) */
    int failing;        /* last attempt failed: log the recovery */
    int last_rc;        /* why it failed, repeated while backing off */
    struct lw_resp out; /* commands being formatted, reused */
};

struct lw_url;

/* A closed connection to url (NULL: the configured endpoint); NULL on OOM. */
struct lw_conn *lw__conn_new_to(const struct lw_url *url);
struct lw_conn *lw__conn_new(void);
void lw__conn_free(struct lw_conn *c);

/* This thread's connection to the configured endpoint, opened if needed. LW_OK,
 * LW_EREDIS, LW_EAUTH, LW_ETLS, LW_ECONFIG or LW_ENOMEM. */
int lw__conn_thread(struct lw_conn **out);

/* The same connection, to url (NULL: the configured endpoint), which must
 * outlive its use: pointed elsewhere, it is closed first and reopened
 * there.  For the master Sentinel names (topology/sentinel.c). */
int lw__conn_thread_to(const struct lw_url *url, struct lw_conn **out);

/* Close this thread's connection (lw_shutdown); the next use reopens it. */
void lw__conn_thread_drop(void);

/* Open c if it is closed or stale (config changed, fork). */
int lw__conn_ensure(struct lw_conn *c);

/* Write n bytes of ready RESP to c's socket (blocking, with its timeout),
 * never raising SIGPIPE; 0, or -1 with c->ctx->errstr set. */
int lw__conn_send(struct lw_conn *c, const char *p, size_t n);

/* Let the replies c reads next come up to wait_ms past the command timeout
 * (0: within it), for a command the server holds that long before it
 * answers (WAIT): the socket's receive timeout, which bounds a plain read
 * and a TLS read alike, and a TLS read's own wait.  c must be open; a
 * reopened connection starts at 0. */
void lw__conn_set_wait(struct lw_conn *c, int wait_ms);

/* Close after an I/O or protocol error; the next use reconnects. */
void lw__conn_drop(struct lw_conn *c);

/* After poll() said c's socket is readable: read what has arrived, without
 * blocking, and hand over the next reply in *r if it is whole (NULL if not
 * yet).  REDIS_OK, or REDIS_ERR with c->ctx->errstr set.  Over TLS it reads
 * until the socket is empty, so nothing decrypted is left where poll()
 * cannot see it. */
int lw__conn_read_ready(struct lw_conn *c, void **r);

/* Close after a failure, net/'s own or one noticed by a caller that drives
 * c->ctx itself (Redlock's parallel round trips): logged and counted, and
 * the next lw__conn_ensure() fails fast with rc until the reconnect backoff
 * ends. */
void lw__conn_fail(struct lw_conn *c, int rc, const char *what);

/* For net/'s own files. */
struct lw_settings;
/* Where c connects to under s: its url, or s's first endpoint. */
const struct lw_url *lw__conn_url(const struct lw_conn *c,
                                  const struct lw_settings *s);
/* The next reply on c, waiting up to the command timeout (plus c->wait_ms):
 * redisGetReply() for a plain socket; over TLS, hiredis's reader is fed
 * from the session.  REDIS_OK or REDIS_ERR (c->ctx->errstr set), as
 * redisGetReply(). */
int lw__conn_reply(struct lw_conn *c, void **r);
/* What c's last I/O error was, for a log line (until c is dropped). */
const char *lw__conn_io_error(const struct lw_conn *c);

/* One plain command of a pipeline. */
struct lw_cmd {
    int argc;
    const char **argv;
    const size_t *lens;
};

struct lw_script;

/*
 * What one round trip sends: a script (EVALSHA with its keys, then its
 * arguments), a pipeline of plain commands, or a script followed by plain
 * commands that must run on the server that ran it, right after it (WAIT
 * after a write that proves a lock is ours there).  Nothing in it is
 * copied: the arrays must outlive the call.
 */
struct lw_request {
    struct lw_script *script; /* NULL: only the pipeline cmds[0..ncmds) */
    int nkeys, nargs;
    const char *const *argv; /* keys then arguments */
    const size_t *lens;
    const struct lw_cmd *cmds;
    int ncmds;
    int flags;   /* LW_REQ_... */
    int wait_ms; /* the server may hold the replies this long before it
                    answers (WAIT's timeout): they are read up to the
                    command timeout plus this (lw__conn_set_wait()) */
};

/* RAW_ERRORS: hand error replies (MOVED, ASK, ...) back in out with LW_OK
 * instead of failing with LW_EREDIS (the cluster router reads them).
 * ASKING: send ASKING before each command (ASK redirection). */
#define LW_REQ_RAW_ERRORS 1
#define LW_REQ_ASKING     2
/* For the cluster router: a multi-key script met by TRYAGAIN (its keys
 * split between two nodes by a migration) comes back as LW_R_SPLIT at
 * once, for the caller to send key by key, instead of being retried until
 * the migration ends. */
#define LW_REQ_SPLIT_OK 4
/* A blocking read lw_shutdown() may cut short (BLPOP): the connection is then
 * dropped without a warning or a replay, and the request fails (LW_EREDIS). */
#define LW_REQ_INTERRUPTIBLE 8

/* How many replies q gets: one for its script, one per command. */
static inline int lw__request_nreplies(const struct lw_request *q)
{
    return (q->script != NULL) + q->ncmds;
}

/* Free out[0..n) and set them to NULL (NULL entries are skipped). */
void lw__replies_free(redisReply **out, int n);

/*
 * Send q on c and read its replies into out (one per command; the caller
 * frees them).  A script goes as EVALSHA, and again as EVAL on NOSCRIPT.
 * An I/O error on a connection that was already open is retried once on a
 * new one, since a killed or idle-timed-out connection says nothing about
 * the server; *replayed then tells the caller q may have run twice.
 * LW_OK; an error reply is LW_EREDIS or LW_EAUTH (lw__conn_error_rc(),
 * logged) unless LW_REQ_RAW_ERRORS;
 * otherwise what lw__conn_ensure() returns, or LW_EREDIS, LW_ENOMEM.
 */
int lw__conn_run(struct lw_conn *c, const struct lw_request *q,
                 redisReply **out, int *replayed);

/*
 * Many requests in one round trip, for a caller with many to send at once
 * (an event loop's pump, loop/loop.c): q[0..n), each answered by one reply
 * (a script, or one command; no ASKING, nothing that blocks), written in
 * one write and their replies read in order.  Each ends as lw__conn_run()
 * would end it alone: rcs[i] LW_OK with out[i] its reply (the caller frees
 * it), an error reply's code (unless LW_REQ_RAW_ERRORS), or the
 * connection's error.  The same rules, for the pipeline: a reused
 * connection that breaks sends every request not answered yet once more
 * on a new one (once; *replayed: they may have run twice), and a NOSCRIPT
 * answer sends that request again as EVAL.  c->sent_us: when the pipeline
 * was first written.  Returns LW_OK, or LW_ENOMEM (every rcs[i] too).
 */
int lw__conn_run_many(struct lw_conn *c, const struct lw_request *const *q,
                      int n, redisReply **out, int *rcs, int *replayed);

/*
 * The same exchange in steps, for a caller that waits on several
 * connections at once (Redlock's parallel rounds): lw__conn_start() sends,
 * the caller polls c->ctx->fd and reads with lw__conn_read_ready(), then
 * hands the reply to
 * lw__conn_noscript() or, when the connection broke, calls
 * lw__conn_broke().  Either may ask for the request to be started again
 * (x->again); both keep lw__conn_run()'s replay and NOSCRIPT rules.  Zero
 * x before the first start.
 */
struct lw_exchange {
    int eval;        /* the server said NOSCRIPT: send the script's text */
    int fresh;       /* the connection was opened for the last start */
    int sent;        /* bytes were written: q may have run */
    int replayed;    /* started again on a new connection after a break */
    int again;       /* start q again */
    int shut;        /* lw_shutdown() cut the read short */
    int64_t sent_us; /* when it was first written */
};

/* Open c if needed and write q.  LW_OK; or q was not written whole: the
 * connection's error (logged), LW_ENOMEM, or LW_EREDIS after a write failed
 * (lw__conn_broke() has run: see x->again). */
int lw__conn_start(struct lw_conn *c, const struct lw_request *q,
                   struct lw_exchange *x);

/* 1 when r is the NOSCRIPT answer to q's EVALSHA: r is freed, x->again and
 * x->eval are set (the script goes as EVAL next).  0: r is q's reply. */
int lw__conn_noscript(const struct lw_request *q, struct lw_exchange *x,
                      redisReply *r);

/* c broke while q was in flight: logged, counted and closed; x->again is
 * set when q may be replayed on a new connection (once, and only when the
 * connection was not opened for it).  Returns x->again. */
int lw__conn_broke(struct lw_conn *c, struct lw_exchange *x, const char *what);

/* Log and count an error reply (lw__conn_run() does it itself unless told
 * LW_REQ_RAW_ERRORS). */
void lw__conn_log_error(const redisReply *r);

/* The same, and the code the error reply r stands for: LW_EAUTH for NOAUTH
 * (a password is needed) and NOPERM (the ACL user lacks a right, also for a
 * command a script runs), with a line saying which; LW_EREDIS for any
 * other. */
int lw__conn_error_rc(const redisReply *r);

#endif

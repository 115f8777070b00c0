#ifndef LW_CONN_H
#define LW_CONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "net/resp.h"

/*
 * One Redis connection, used by one thread at a time.  Every guarded thread
 * has its own (lw__conn_thread()), so no hiredis context is ever shared
 * mid-command; the watchdog owns its own.
 */
struct lw_conn {
    redisContext *ctx;
    const struct lw_url *url; /* where to; NULL: the configured endpoint
                                 (the first of LOCKWEAVE_REDIS_URL).  Must
                                 outlive the connection. */
    unsigned cfg_gen;         /* lw_settings.gen the context was opened with */
    unsigned fork_gen;        /* lw__fork_gen the context was opened in */
    int64_t retry_at_ms;      /* no reconnect attempt before this (backoff) */
    int backoff_ms;
    int fresh;          /* opened by the current call: no replay on error */
    int failing;        /* last attempt failed: log the recovery */
    int last_rc;        /* why it failed, repeated while backing off */
    int asking;         /* cluster ASK redirection: prefix each command of
                           the next request with ASKING */
    struct lw_resp out; /* commands being formatted, reused */
};

struct lw_url;

/* A closed connection to url (NULL: the configured endpoint); NULL on OOM. */
struct lw_conn *lw__conn_new_to(const struct lw_url *url);
struct lw_conn *lw__conn_new(void);
void lw__conn_free(struct lw_conn *c);

/* This thread's connection to the configured endpoint, opened if needed. LW_OK,
 * LW_EREDIS, LW_EAUTH, LW_ECONFIG or LW_ENOMEM. */
int lw__conn_thread(struct lw_conn **out);

/* Close this thread's connection (lw_shutdown); the next use reopens it. */
void lw__conn_thread_drop(void);

/* Open c if it is closed or stale (config changed, fork). */
int lw__conn_ensure(struct lw_conn *c);

/* Write n bytes of ready RESP to c's socket (blocking, with its timeout),
 * never raising SIGPIPE; 0, or -1 with c->ctx->errstr set. */
int lw__conn_send(struct lw_conn *c, const char *p, size_t n);

/* Close after an I/O or protocol error; the next use reconnects. */
void lw__conn_drop(struct lw_conn *c);

/* Close after a failure noticed by a caller that drives c->ctx itself
 * (Redlock's parallel round trips): logged and counted like conn.c's own
 * failures, and the next lw__conn_ensure() fails fast with rc until the
 * reconnect backoff ends. */
void lw__conn_fail(struct lw_conn *c, int rc, const char *what);

/*
 * Run script id with keys then args (at most 6 in all).  EVALSHA, falling back
 * to EVAL on NOSCRIPT (server restarted or SCRIPT FLUSH).  An I/O error on a
 * connection that was already open is retried once on a new one, since a
 * killed or idle-timed-out connection says nothing about the server;
 * *replayed tells the caller the script may have run twice.  On LW_OK *out is
 * the reply (caller frees); error replies are LW_EREDIS.
 */
int lw__conn_script(struct lw_conn *c, int id, int nkeys, int nargs,
                    const char *const *argv, const size_t *lens,
                    redisReply **out, int *replayed);

/* One plain command of a pipeline. */
struct lw_cmd {
    int argc;
    const char **argv;
    const size_t *lens;
};

/* Send n commands in one round trip and read their n replies into out (the
 * caller frees each).  Same errors and retry as lw__conn_script(). */
int lw__conn_pipeline(struct lw_conn *c, const struct lw_cmd *cmds, int n,
                      redisReply **out, int *replayed);

/* Flags of the _ex forms, for the cluster router.  RAW_ERRORS: hand error
 * replies (MOVED, ASK, ...) back in out with LW_OK instead of LW_EREDIS.
 * ASKING: send ASKING before each command (ASK redirection). */
#define LW_CONN_RAW_ERRORS 1
#define LW_CONN_ASKING     2

int lw__conn_script_ex(struct lw_conn *c, int id, int nkeys, int nargs,
                       const char *const *argv, const size_t *lens, int flags,
                       redisReply **out, int *replayed);
int lw__conn_pipeline_ex(struct lw_conn *c, const struct lw_cmd *cmds, int n,
                         int flags, redisReply **out, int *replayed);

/* Log and count an error reply (the plain forms do it themselves). */
void lw__conn_log_error(const redisReply *r);

#endif

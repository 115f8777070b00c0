/* Connections: open with timeouts, AUTH/SELECT, reconnect with bounded
 * backoff; send requests (scripts by SHA), replaying once on a new
 * connection when a reused one broke. */
#include "net/conn.h"

#include <lockweave.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/log.h"
#include "base/numfmt.h"
#include "base/stats.h"
#include "base/thread.h"
#include "net/script.h"
#include "net/tls.h"

#define BACKOFF_MIN_MS  10
#define BACKOFF_MAX_MS  500
#define SCRIPT_ARGV_MAX 16

struct lw_conn *lw__conn_new_to(const struct lw_url *url)
{
    struct lw_conn *c = calloc(1, sizeof *c);

    if (c != NULL)
        c->url = url;
    return c;
}

struct lw_conn *lw__conn_new(void)
{
    return lw__conn_new_to(NULL);
}

static const struct lw_url *conn_url(const struct lw_conn *c,
                                     const struct lw_settings *s)
{
    return c->url != NULL ? c->url : &s->ep.urls[0];
}

void lw__conn_free(struct lw_conn *c)
{
    if (c == NULL)
        return;
    lw__conn_drop(c);
    lw__resp_free(&c->out);
    free(c);
}

void lw__conn_drop(struct lw_conn *c)
{
    /* In a forked child this closes only the child's copy of the socket; no
     * byte is written, so the parent's connection is untouched. */
    lw__tls_free(c->tls);
    c->tls = NULL;
    if (c->ctx != NULL)
        redisFree(c->ctx);
    c->ctx = NULL;
}

static struct timeval tv_ms(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

static void note_failure(struct lw_conn *c, int rc, const char *what)
{
    char where[256];
    int level = c->failing ? LW_LOG_DEBUG : LW_LOG_WARN;
    int64_t delay_ms;

    /* A connection's first failure starts the backoff from its minimum. */
    if (!c->failing)
        c->backoff = (struct lw_backoff){BACKOFF_MIN_MS, BACKOFF_MAX_MS};
    delay_ms = lw__backoff_step(&c->backoff);
    lw__url_describe(conn_url(c, lw__settings()), where, sizeof where);
    lw__log(level, "Redis %s: %s (retrying in %lld ms)", where, what,
            (long long)delay_ms);
    LW_STAT_ADD(redis_errors, 1);
    c->failing = 1;
    c->last_rc = rc;
    c->retry_at_ms = lw__now_ms() + delay_ms;
}

void lw__conn_fail(struct lw_conn *c, int rc, const char *what)
{
    note_failure(c, rc, what);
    lw__conn_drop(c);
}

/* What c's last I/O error was, for a log line: hiredis reports a read past
 * the command timeout as EAGAIN's text, which says nothing to a reader. */
static const char *io_error(const struct lw_conn *c)
{
    static _Thread_local char buf[96];

    if (c->ctx->err == REDIS_ERR_IO &&
        strcmp(c->ctx->errstr, strerror(EAGAIN)) == 0) {
        snprintf(buf, sizeof buf, "no reply within %d ms (command timeout)",
                 lw__settings()->command_timeout_ms);
        return buf;
    }
    return c->ctx->errstr;
}

/* The TLS session's last failure as c->ctx's I/O error, as hiredis would
 * have set it for a plain socket; returns the session's code (LW_EREDIS or
 * LW_ETLS). */
static int tls_failed(struct lw_conn *c)
{
    const char *what;
    int rc = lw__tls_error(c->tls, &what);

    c->ctx->err = REDIS_ERR_IO;
    snprintf(c->ctx->errstr, sizeof c->ctx->errstr, "%s", what);
    return rc;
}

int lw__conn_send(struct lw_conn *c, const char *p, size_t n)
{
    if (c->tls != NULL) {
        if (lw__tls_write(c->tls, p, n, lw__settings()->command_timeout_ms) ==
            0)
            return 0;
        tls_failed(c);
        return -1;
    }
    /* send(MSG_NOSIGNAL), not hiredis's write(): a server that hung up
     * must cost an EPIPE, not the default SIGPIPE action — the death of the
     * user's process — and a library must not change the process's signal
     * dispositions to prevent it.  Bytes go straight from our buffer. */
    while (n > 0) {
        ssize_t k = send(c->ctx->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            c->ctx->err = REDIS_ERR_IO;
            snprintf(c->ctx->errstr, sizeof c->ctx->errstr, "%s",
                     k < 0 && errno == EAGAIN ? "send timed out"
                     : k < 0                  ? strerror(errno)
                                              : "connection closed");
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Feed up to one read's worth of the TLS session (waiting up to timeout_ms;
 * 0: only what has arrived) to hiredis's reader.  1 fed, 0 nothing there,
 * -1 failed (c->ctx->errstr says why). */
static int tls_feed(struct lw_conn *c, int timeout_ms)
{
    char buf[16 * 1024];
    long n = lw__tls_read(c->tls, buf, sizeof buf, timeout_ms);

    if (n < 0) {
        tls_failed(c);
        return -1;
    }
    if (n == 0)
        return 0;
    if (redisReaderFeed(c->ctx->reader, buf, (size_t)n) != REDIS_OK) {
        c->ctx->err = REDIS_ERR_OOM;
        snprintf(c->ctx->errstr, sizeof c->ctx->errstr, "out of memory");
        return -1;
    }
    return 1;
}

/* The next reply on c, waiting up to the command timeout: redisGetReply()
 * for a plain socket; over TLS, hiredis's reader is fed from the session.
 * REDIS_OK or REDIS_ERR (c->ctx->errstr set), as redisGetReply(). */
static int get_reply(struct lw_conn *c, void **r)
{
    if (c->tls == NULL)
        return redisGetReply(c->ctx, r);
    *r = NULL;
    for (;;) {
        if (redisGetReplyFromReader(c->ctx, r) != REDIS_OK)
            return REDIS_ERR;
        if (*r != NULL)
            return REDIS_OK;
        if (tls_feed(c, lw__settings()->command_timeout_ms) < 0)
            return REDIS_ERR;
    }
}

int lw__conn_read_ready(struct lw_conn *c, void **r)
{
    int fed;

    *r = NULL;
    if (c->tls == NULL) /* poll() said readable: this read() does not block */
        return redisBufferRead(c->ctx) != REDIS_OK
                   ? REDIS_ERR
                   : redisGetReplyFromReader(c->ctx, r);
    while ((fed = tls_feed(c, 0)) > 0)
        ;
    /* A reply that came whole before the server hung up is still its
     * reply, as a plain read() returns the bytes before the EOF; the
     * session's error shows on the next read. */
    if (redisGetReplyFromReader(c->ctx, r) != REDIS_OK)
        return REDIS_ERR;
    return *r == NULL && fed < 0 ? REDIS_ERR : REDIS_OK;
}

/* One command on a context that is being set up: LW_OK, LW_EREDIS when no
 * reply came, or code for an error reply (LW_OK: an error reply is fine).
 * With keep, a reply is handed over there (the caller frees it). */
static int setup_cmd(struct lw_conn *c, int code, int argc, const char **argv,
                     redisReply **keep)
{
    redisReply *r = NULL;
    size_t lens[3];
    int rc = LW_OK;
    char what[200];

    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    c->out.len = 0;
    if (lw__resp_cmd(&c->out, argc, argv, lens) != 0 ||
        lw__conn_send(c, c->out.p, c->out.len) != 0 ||
        get_reply(c, (void **)&r) != REDIS_OK)
        r = NULL;
    c->out.len = 0;
    if (r == NULL) {
        snprintf(what, sizeof what, "%s failed: %s", argv[0], io_error(c));
        /* A server that wants a client certificate refuses a TLS 1.3
         * client only after the handshake, with an alert: LW_ETLS. */
        rc = c->tls != NULL ? lw__tls_error(c->tls, NULL) : LW_EREDIS;
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(what, sizeof what, "%s refused: %s", argv[0], r->str);
        rc = code;
    }
    if (keep != NULL && r != NULL)
        *keep = r;
    else
        freeReplyObject(r);
    if (rc != LW_OK)
        note_failure(c, rc, what);
    return rc;
}

/* Servers already warned about (described), so each is named once. */
static pthread_mutex_t evict_mu = PTHREAD_MUTEX_INITIALIZER;
static char evict_warned[32][128];
static int nevict_warned;

/*
 * Any maxmemory policy but noeviction lets Redis evict a held lock under
 * memory pressure (lock keys carry a TTL, so volatile-* ones too): another
 * caller may then enter while the holder still runs, which learns LW_ELOST
 * only at its next renewal or release.  (An evicted fence counter is
 * harmless: it starts again from the server's clock.)  Ask (INFO, which an
 * ACL may deny: then nothing is known and nothing said) and warn once per
 * server.
 */
static int check_eviction(struct lw_conn *c, const struct lw_url *u)
{
    const char *argv[] = {"INFO", "memory"};
    redisReply *r = NULL;
    char where[128], policy[32] = "";
    const char *p;
    int rc = setup_cmd(c, LW_OK, 2, argv, &r), seen = 0;

    if (rc == LW_OK && r != NULL && r->type == REDIS_REPLY_STRING &&
        (p = strstr(r->str, "maxmemory_policy:")) != NULL)
        sscanf(p + 17, "%31[a-z-]", policy);
    freeReplyObject(r);
    if (policy[0] == '\0' || strcmp(policy, "noeviction") == 0)
        return rc;
    lw__url_describe(u, where, sizeof where);
    lw__fork_register_mutex(&evict_mu);
    pthread_mutex_lock(&evict_mu);
    for (int i = 0; i < nevict_warned; i++)
        seen |= strcmp(evict_warned[i], where) == 0;
    if (!seen && nevict_warned < 32)
        snprintf(evict_warned[nevict_warned++], sizeof evict_warned[0], "%s",
                 where);
    pthread_mutex_unlock(&evict_mu);
    if (!seen)
        lw__log(LW_LOG_WARN,
                "Redis %s has maxmemory-policy %s: under memory pressure it "
                "may evict a held lock and let another caller in while the "
                "holder still runs (which then gets LW_ELOST); use "
                "noeviction",
                where, policy);
    return rc;
}

static int handshake(struct lw_conn *c, const struct lw_url *u)
{
    char db[16];
    int rc = LW_OK;

    if (u->password != NULL) {
        const char *argv[] = {"AUTH", u->user ? u->user : u->password,
                              u->password};
        rc = setup_cmd(c, LW_EAUTH, u->user ? 3 : 2, argv, NULL);
    }
    if (rc == LW_OK && u->db != 0) {
        const char *argv[] = {"SELECT", db};
        snprintf(db, sizeof db, "%d", u->db);
        rc = setup_cmd(c, LW_EAUTH, 2, argv, NULL);
    }
    if (rc == LW_OK)
        rc = check_eviction(c, u);
    return rc;
}

/* TLS on c's new socket; a failure is logged and counted as the
 * connection's (the caller drops it). */
static int start_tls(struct lw_conn *c, const struct lw_settings *s,
                     const struct lw_url *u)
{
    char what[300], where[256];
    int rc = lw__tls_open(&c->tls, s->ssl_ctx, c->ctx->fd, u->host, &s->tls,
                          s->connect_timeout_ms, what, sizeof what);

    if (rc != LW_OK) {
        note_failure(c, rc, what);
        return rc;
    }
    if (s->tls.insecure) {
        lw__url_describe(u, where, sizeof where);
        lw__log(LW_LOG_WARN,
                "Redis %s: TLS without verifying the server's certificate "
                "(LOCKWEAVE_TLS_INSECURE): anyone on the path can pose as "
                "the server",
                where);
    }
    return LW_OK;
}

int lw__conn_ensure(struct lw_conn *c)
{
    const struct lw_settings *s = lw__settings();
    const struct lw_url *u;
    int rc;

    if (s->error != LW_OK)
        return s->error;
    if (c->cfg_gen != s->gen || c->fork_gen != lw__fork_gen) {
        /* New configuration or new process: nothing learnt about the old
         * connection applies, its backoff included. */
        lw__conn_drop(c);
        c->failing = 0;
        c->cfg_gen = s->gen;
        c->fork_gen = lw__fork_gen;
    }
    if (c->ctx != NULL)
        return LW_OK;
    if (c->failing && lw__now_ms() < c->retry_at_ms)
        return c->last_rc; /* fail fast while backing off */

    u = conn_url(c, s);
    if (u->path != NULL)
        c->ctx =
            redisConnectUnixWithTimeout(u->path, tv_ms(s->connect_timeout_ms));
    else
        c->ctx = redisConnectWithTimeout(u->host, u->port,
                                         tv_ms(s->connect_timeout_ms));
    if (c->ctx == NULL)
        return LW_ENOMEM;
    if (c->ctx->err) {
        char what[160];
        snprintf(what, sizeof what, "connect failed: %s", c->ctx->errstr);
        lw__conn_drop(c);
        note_failure(c, LW_EREDIS, what);
        return LW_EREDIS;
    }
    redisSetTimeout(c->ctx, tv_ms(s->command_timeout_ms));
    if (u->path == NULL) /* hiredis 0.14 fails it on unix sockets */
        redisEnableKeepAlive(c->ctx);
    rc = u->tls ? start_tls(c, s, u) : LW_OK;
    if (rc == LW_OK)
        rc = handshake(c, u);
    if (rc != LW_OK) {
        lw__conn_drop(c);
        return rc;
    }
    if (c->failing)
        lw__log(LW_LOG_INFO, "Redis connection restored");
    c->failing = 0;
    c->fresh = 1;
    return LW_OK;
}

static void conn_free_any(void *p)
{
    lw__conn_free(p);
}

int lw__conn_thread(struct lw_conn **out)
{
    struct lw_conn *c = lw__thread()->res[LW_RES_CONN];

    if (c == NULL) {
        if ((c = lw__conn_new()) == NULL)
            return LW_ENOMEM;
        lw__thread_keep(LW_RES_CONN, c, conn_free_any);
    }
    *out = c;
    return lw__conn_ensure(c);
}

void lw__conn_thread_drop(void)
{
    struct lw_conn *c = lw__thread()->res[LW_RES_CONN];

    if (c != NULL)
        lw__conn_drop(c);
}

/* q's EVALSHA (or EVAL, x->eval) in c->out: command, script, numkeys, then
 * the keys and arguments.  0, or -1 out of memory. */
static int format_script(struct lw_conn *c, const struct lw_request *q,
                         const struct lw_exchange *x)
{
    const char *small_argv[SCRIPT_ARGV_MAX], **argv = small_argv;
    size_t small_lens[SCRIPT_ARGV_MAX], *lens = small_lens;
    int n = q->nkeys + q->nargs, rc = -1;
    char nkeys[LW_FMT_U64_MAX];

    if (n + 3 > SCRIPT_ARGV_MAX) { /* the watchdog's batched renewals */
        argv = malloc((size_t)(n + 3) * sizeof *argv);
        lens = malloc((size_t)(n + 3) * sizeof *lens);
        if (argv == NULL || lens == NULL)
            goto cleanup;
    }
    argv[0] = x->eval ? "EVAL" : "EVALSHA";
    argv[1] = x->eval ? q->script->text : lw__script_sha(q->script);
    argv[2] = nkeys;
    lens[0] = x->eval ? 4 : 7;
    lens[1] = x->eval ? q->script->len : 40;
    lens[2] = lw__fmt_dec(nkeys, (uint64_t)q->nkeys);
    for (int i = 0; i < n; i++) {
        argv[3 + i] = q->argv[i];
        lens[3 + i] = q->lens[i];
    }
    rc = lw__resp_cmd(&c->out, n + 3, argv, lens);
cleanup:
    if (argv != small_argv)
        free(argv);
    if (lens != small_lens)
        free(lens);
    return rc;
}

/* With LW_REQ_ASKING every command goes out after an ASKING: the flag it
 * sets on the server lasts for one command only. */
static int put_asking(struct lw_conn *c, const struct lw_request *q)
{
    static const char *const argv[] = {"ASKING"};
    static const size_t lens[] = {6};

    return q->flags & LW_REQ_ASKING ? lw__resp_cmd(&c->out, 1, argv, lens) : 0;
}

/* q in RESP, in c->out; 0, or -1 out of memory. */
static int format(struct lw_conn *c, const struct lw_request *q,
                  const struct lw_exchange *x)
{
    c->out.len = 0;
    if (q->script != NULL)
        return put_asking(c, q) != 0 || format_script(c, q, x) != 0 ? -1 : 0;
    for (int i = 0; i < q->ncmds; i++)
        if (put_asking(c, q) != 0 ||
            lw__resp_cmd(&c->out, q->cmds[i].argc, q->cmds[i].argv,
                         q->cmds[i].lens) != 0)
            return -1;
    return 0;
}

int lw__conn_broke(struct lw_conn *c, struct lw_exchange *x, const char *what)
{
    note_failure(c, LW_EREDIS, what);
    lw__conn_drop(c);
    x->again = !x->fresh && !x->replayed;
    if (x->again) {
        c->failing = 0; /* reconnect now, not after the backoff */
        x->replayed = 1;
    }
    return x->again;
}

int lw__conn_start(struct lw_conn *c, const struct lw_request *q,
                   struct lw_exchange *x)
{
    int rc = lw__conn_ensure(c);

    x->again = 0;
    if (rc != LW_OK)
        return rc;
    x->fresh = c->fresh;
    c->fresh = 0;
    rc = format(c, q, x);
    if (rc == 0) {
        if (!x->sent)
            x->sent_us = lw__now_us();
        x->sent = 1;
        rc = lw__conn_send(c, c->out.p, c->out.len);
    }
    c->out.len = 0;
    if (rc == 0)
        return LW_OK;
    if (!x->sent)
        return LW_ENOMEM;
    lw__conn_broke(c, x, io_error(c));
    return LW_EREDIS;
}

int lw__conn_noscript(const struct lw_request *q, struct lw_exchange *x,
                      redisReply *r)
{
    if (q->script == NULL || x->eval || r->type != REDIS_REPLY_ERROR ||
        strncmp(r->str, "NOSCRIPT", 8) != 0)
        return 0;
    /* The server lost its script cache or never had the script: EVAL
     * sends the text and caches it for every later EVALSHA. */
    freeReplyObject(r);
    x->eval = 1;
    x->again = 1;
    return 1;
}

/* Read q's replies into out, skipping the +OK of each ASKING; -1 on an I/O
 * or protocol error. */
static int read_replies(struct lw_conn *c, const struct lw_request *q,
                        redisReply **out)
{
    int n = lw__request_nreplies(q);

    for (int i = 0; i < n; i++) {
        void *ok;
        if (q->flags & LW_REQ_ASKING) {
            if (get_reply(c, &ok) != REDIS_OK)
                return -1;
            freeReplyObject(ok);
        }
        if (get_reply(c, (void **)&out[i]) != REDIS_OK)
            return -1;
    }
    return 0;
}

/* read_replies(), with the socket watched by the gate if q may block. */
static int read_watched(struct lw_conn *c, const struct lw_request *q,
                        redisReply **out, struct lw_exchange *x)
{
    struct lw_gate_watch w;
    int rc;

    if (!(q->flags & LW_REQ_INTERRUPTIBLE))
        return read_replies(c, q, out);
    lw__gate_watch(&w, c->ctx->fd);
    rc = read_replies(c, q, out);
    x->shut = lw__gate_unwatch(&w);
    return rc;
}

void lw__replies_free(redisReply **out, int n)
{
    for (int i = 0; i < n; i++) {
        if (out[i] != NULL)
            freeReplyObject(out[i]);
        out[i] = NULL;
    }
}

/* s for a log line, runs of 16 or more hex digits cut to their first 4:
 * an error reply may echo a command's arguments ("unknown command ...,
 * with args beginning with: ..."), and a lock token among them must not
 * reach a log at WARN. */
static void mask_tokens(const char *s, char *out, size_t cap)
{
    size_t n = 0;

    while (*s && n + 8 < cap) {
        size_t run = strspn(s, "0123456789abcdefABCDEF");
        if (run >= 16) {
            memcpy(out + n, s, 4);
            memcpy(out + n + 4, "...", 3);
            n += 7;
            s += run;
        } else {
            out[n++] = *s++;
        }
    }
    out[n] = '\0';
}

void lw__conn_log_error(const redisReply *r)
{
    char shown[256];

    mask_tokens(r->str, shown, sizeof shown);
    lw__log(LW_LOG_WARN, "Redis error reply: %s", shown);
    LW_STAT_ADD(redis_errors, 1);
}

int lw__conn_error_rc(const redisReply *r)
{
    lw__conn_log_error(r);
    if (strncmp(r->str, "NOAUTH", 6) == 0) {
        lw__log(LW_LOG_ERROR, "Redis wants a password: put it in the URL "
                              "(redis://:password@host:port, "
                              "unix://:password@/path)");
        return LW_EAUTH;
    }
    if (strncmp(r->str, "NOPERM", 6) == 0) {
        lw__log(LW_LOG_ERROR,
                "the Redis ACL user may not run what lockweave needs "
                "(scripts, and the keys under its prefix): see "
                "docs/operations.md, \"Credentials and ACLs\"");
        return LW_EAUTH;
    }
    return LW_EREDIS;
}

/* LW_OK when no reply in out is an error; else the first one's code
 * (lw__conn_error_rc(), logged). */
static int has_error(redisReply **out, int n)
{
    for (int i = 0; i < n; i++)
        if (out[i]->type == REDIS_REPLY_ERROR) {
            int rc = lw__conn_error_rc(out[i]);
            /* Only the router follows redirections: a plain URL that points
             * at a cluster node gets them as errors.  Say what to do. */
            if (strncmp(out[i]->str, "MOVED ", 6) == 0 ||
                strncmp(out[i]->str, "ASK ", 4) == 0)
                lw__log(LW_LOG_ERROR,
                        "the server is a Redis Cluster node: use "
                        "LOCKWEAVE_REDIS_URL=redis+cluster://host:port");
            return rc;
        }
    return LW_OK;
}

int lw__conn_run(struct lw_conn *c, const struct lw_request *q,
                 redisReply **out, int *replayed)
{
    struct lw_exchange x = {0};
    int n = lw__request_nreplies(q), rc;

    memset(out, 0, (size_t)n * sizeof *out);
    do {
        rc = lw__conn_start(c, q, &x);
        if (rc != LW_OK)
            continue; /* x.again: replay on a new connection */
        if (read_watched(c, q, out, &x) != 0) {
            lw__replies_free(out, n);
            rc = LW_EREDIS;
            if (x.shut) /* lw_shutdown(): not a failure */
                lw__conn_drop(c);
            else
                lw__conn_broke(c, &x, io_error(c));
        } else if (lw__conn_noscript(q, &x, out[0])) {
            out[0] = NULL;
        }
    } while (x.again);
    *replayed = x.replayed;
    c->sent_us = x.sent ? x.sent_us : 0;
    if (rc == LW_OK && !(q->flags & LW_REQ_RAW_ERRORS) &&
        (rc = has_error(out, n)) != LW_OK)
        lw__replies_free(out, n);
    return rc;
}

/* Connections: open with timeouts, AUTH/SELECT, load scripts, reconnect with
 * bounded backoff, run scripts by SHA. */
#include "net/conn.h"

#include <lockweave.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/log.h"
#include "core/scripts.h"
#include "base/stats.h"
#include "base/thread.h"

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

    lw__url_describe(conn_url(c, lw__settings()), where, sizeof where);
    lw__log(level, "Redis %s: %s (retrying in %d ms)", where, what,
            c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_MIN_MS);
    LW_STAT_ADD(redis_errors, 1);
    c->failing = 1;
    c->last_rc = rc;
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (c->backoff_ms > BACKOFF_MAX_MS)
        c->backoff_ms = BACKOFF_MAX_MS;
    c->retry_at_ms =
        lw__now_ms() + c->backoff_ms / 2 + lw__jitter(c->backoff_ms / 2 + 1);
}

void lw__conn_fail(struct lw_conn *c, int rc, const char *what)
{
    note_failure(c, rc, what);
    lw__conn_drop(c);
}

int lw__conn_send(struct lw_conn *c, const char *p, size_t n)
{
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

/* One command on a context that is being set up; LW_OK or code. */
static int setup_cmd(struct lw_conn *c, int code, int argc, const char **argv)
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
        redisGetReply(c->ctx, (void **)&r) != REDIS_OK)
        r = NULL;
    c->out.len = 0;
    if (r == NULL) {
        snprintf(what, sizeof what, "%s failed: %s", argv[0], c->ctx->errstr);
        rc = LW_EREDIS;
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(what, sizeof what, "%s refused: %s", argv[0], r->str);
        rc = code;
    } else if (r->type == REDIS_REPLY_STRING && argc == 3 &&
               strcmp(argv[0], "SCRIPT") == 0) {
        for (int id = 0; id < LW_SCRIPT_COUNT; id++)
            if (lw__script_text(id) == argv[2])
                lw__script_set_sha(id, r->str, r->len);
    }
    freeReplyObject(r);
    if (rc != LW_OK)
        note_failure(c, rc, what);
    return rc;
}

static int handshake(struct lw_conn *c, const struct lw_url *u)
{
    char db[16];
    int rc = LW_OK;

    if (u->password != NULL) {
        const char *argv[] = {"AUTH", u->user ? u->user : u->password,
                              u->password};
        rc = setup_cmd(c, LW_EAUTH, u->user ? 3 : 2, argv);
    }
    if (rc == LW_OK && u->db != 0) {
        const char *argv[] = {"SELECT", db};
        snprintf(db, sizeof db, "%d", u->db);
        rc = setup_cmd(c, LW_EAUTH, 2, argv);
    }
    for (int id = 0; rc == LW_OK && id < LW_SCRIPT_COUNT; id++) {
        const char *argv[] = {"SCRIPT", "LOAD", lw__script_text(id)};
        if (lw__script_sha(id) == NULL)
            rc = setup_cmd(c, LW_EREDIS, 3, argv);
    }
    return rc;
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
        c->backoff_ms = 0;
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
    rc = handshake(c, u);
    if (rc != LW_OK) {
        lw__conn_drop(c);
        return rc;
    }
    if (c->failing)
        lw__log(LW_LOG_INFO, "Redis connection restored");
    c->failing = 0;
    c->backoff_ms = 0;
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

/* argv for EVALSHA/EVAL: command, script, numkeys, then the caller's. */
static int build_argv(int id, int use_sha, int nkeys, int nargs,
                      const char *const *in, const size_t *inlen,
                      const char **argv, size_t *lens, char *nbuf)
{
    const char *script = use_sha ? lw__script_sha(id) : lw__script_text(id);
    int n = nkeys + nargs;

    argv[0] = use_sha ? "EVALSHA" : "EVAL";
    argv[1] = script;
    argv[2] = nbuf;
    lens[0] = strlen(argv[0]);
    lens[1] = strlen(script);
    lens[2] = (size_t)snprintf(nbuf, 16, "%d", nkeys);
    for (int i = 0; i < n; i++) {
        argv[3 + i] = in[i];
        lens[3 + i] = inlen[i];
    }
    return n + 3;
}

/* While c->asking, every command goes out after an ASKING: the flag it sets
 * on the server lasts for one command only. */
static int put_asking(struct lw_conn *c)
{
    static const char *const argv[] = {"ASKING"};
    static const size_t lens[] = {6};

    return c->asking ? lw__resp_cmd(&c->out, 1, argv, lens) : 0;
}

/* Read one reply, skipping the +OK of an ASKING sent before it. */
static int read_asked(struct lw_conn *c, redisReply **out)
{
    void *ok;

    if (redisGetReply(c->ctx, &ok) != REDIS_OK)
        return -1;
    freeReplyObject(ok);
    return redisGetReply(c->ctx, (void **)out) == REDIS_OK ? 0 : -1;
}

/* Send what c->out holds, then read n replies into out; -1 on I/O error. */
static int send_and_read(struct lw_conn *c, redisReply **out, int n)
{
    int rc = lw__conn_send(c, c->out.p, c->out.len);

    c->out.len = 0;
    if (__builtin_expect(c->asking, 0)) {
        for (int i = 0; rc == 0 && i < n; i++)
            rc = read_asked(c, &out[i]);
        return rc;
    }
    for (int i = 0; rc == 0 && i < n; i++)
        if (redisGetReply(c->ctx, (void **)&out[i]) != REDIS_OK)
            rc = -1;
    return rc;
}

static redisReply *run_script(struct lw_conn *c, int id, int nkeys, int nargs,
                              const char *const *in, const size_t *inlen)
{
    const char *small_argv[SCRIPT_ARGV_MAX], **argv = small_argv;
    size_t small_lens[SCRIPT_ARGV_MAX], *lens = small_lens;
    size_t cap = (size_t)(nkeys + nargs + 3);
    char nbuf[16];
    int use_sha = lw__script_sha(id) != NULL;
    redisReply *r = NULL;
    int argc;

    if (cap > SCRIPT_ARGV_MAX) { /* the watchdog's batched renewals */
        argv = malloc(cap * sizeof *argv);
        lens = malloc(cap * sizeof *lens);
        if (argv == NULL || lens == NULL)
            goto cleanup;
    }
    argc = build_argv(id, use_sha, nkeys, nargs, in, inlen, argv, lens, nbuf);
    if (put_asking(c) != 0 || lw__resp_cmd(&c->out, argc, argv, lens) != 0 ||
        send_and_read(c, &r, 1) != 0)
        goto cleanup;
    if (use_sha && r->type == REDIS_REPLY_ERROR &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* The server lost its script cache: EVAL sends the text and caches
         * it again for every later EVALSHA. */
        freeReplyObject(r);
        r = NULL;
        argc = build_argv(id, 0, nkeys, nargs, in, inlen, argv, lens, nbuf);
        if (put_asking(c) != 0 ||
            lw__resp_cmd(&c->out, argc, argv, lens) != 0 ||
            send_and_read(c, &r, 1) != 0)
            goto cleanup;
    }
cleanup:
    c->out.len = 0;
    if (argv != small_argv)
        free(argv);
    if (lens != small_lens)
        free(lens);
    return r;
}

/* What one attempt sends: a script, or a pipeline of plain commands. */
struct request {
    int script; /* script id, or -1 for cmds */
    int nkeys, nargs;
    const char *const *argv;
    const size_t *lens;
    const struct lw_cmd *cmds;
    int ncmds;
    int flags; /* LW_CONN_... */
};

/* Send req and read its replies into out; -1 on an I/O error. */
static int attempt(struct lw_conn *c, const struct request *req,
                   redisReply **out)
{
    if (req->script >= 0) {
        out[0] = run_script(c, req->script, req->nkeys, req->nargs, req->argv,
                            req->lens);
        return out[0] ? 0 : -1;
    }
    for (int i = 0; i < req->ncmds; i++)
        if (put_asking(c) != 0 ||
            lw__resp_cmd(&c->out, req->cmds[i].argc, req->cmds[i].argv,
                         req->cmds[i].lens) != 0) {
            c->out.len = 0;
            return -1;
        }
    return send_and_read(c, out, req->ncmds);
}

static void free_replies(redisReply **out, int n)
{
    for (int i = 0; i < n; i++) {
        if (out[i] != NULL)
            freeReplyObject(out[i]);
        out[i] = NULL;
    }
}

void lw__conn_log_error(const redisReply *r)
{
    lw__log(LW_LOG_WARN, "Redis error reply: %s", r->str);
    LW_STAT_ADD(redis_errors, 1);
}

static int has_error(redisReply **out, int n)
{
    for (int i = 0; i < n; i++)
        if (out[i]->type == REDIS_REPLY_ERROR) {
            lw__conn_log_error(out[i]);
            /* Only the router follows redirections: a plain URL that points
             * at a cluster node gets them as errors.  Say what to do. */
            if (strncmp(out[i]->str, "MOVED ", 6) == 0 ||
                strncmp(out[i]->str, "ASK ", 4) == 0)
                lw__log(LW_LOG_ERROR,
                        "the server is a Redis Cluster node: use "
                        "LOCKWEAVE_REDIS_URL=redis+cluster://host:port");
            return 1;
        }
    return 0;
}

/* One request, retried once on a new connection when a reused one fails:
 * a killed or idle-timed-out connection says nothing about the server. */
static int run(struct lw_conn *c, const struct request *req, redisReply **out,
               int *replayed)
{
    int n = req->script >= 0 ? 1 : req->ncmds;

    memset(out, 0, (size_t)n * sizeof *out);
    *replayed = 0;
    for (int i = 0; i < 2; i++) {
        int rc = lw__conn_ensure(c);
        int was_fresh = c->fresh;

        if (rc != LW_OK)
            return rc;
        c->fresh = 0;
        c->asking = (req->flags & LW_CONN_ASKING) != 0;
        rc = attempt(c, req, out);
        c->asking = 0;
        if (rc == 0) {
            if ((req->flags & LW_CONN_RAW_ERRORS) || !has_error(out, n))
                return LW_OK;
            free_replies(out, n);
            return LW_EREDIS;
        }
        free_replies(out, n);
        note_failure(c, LW_EREDIS, c->ctx->errstr);
        lw__conn_drop(c);
        if (was_fresh)
            return LW_EREDIS;
        c->failing = 0;
        *replayed = 1;
    }
    return LW_EREDIS;
}

int lw__conn_script_ex(struct lw_conn *c, int id, int nkeys, int nargs,
                       const char *const *argv, const size_t *lens, int flags,
                       redisReply **out, int *replayed)
{
    struct request req = {.script = id,
                          .nkeys = nkeys,
                          .nargs = nargs,
                          .argv = argv,
                          .lens = lens,
                          .flags = flags};
    return run(c, &req, out, replayed);
}

int lw__conn_pipeline_ex(struct lw_conn *c, const struct lw_cmd *cmds, int n,
                         int flags, redisReply **out, int *replayed)
{
    struct request req = {
        .script = -1, .cmds = cmds, .ncmds = n, .flags = flags};
    return run(c, &req, out, replayed);
}

int lw__conn_script(struct lw_conn *c, int id, int nkeys, int nargs,
                    const char *const *argv, const size_t *lens,
                    redisReply **out, int *replayed)
{
    return lw__conn_script_ex(c, id, nkeys, nargs, argv, lens, 0, out,
                              replayed);
}

int lw__conn_pipeline(struct lw_conn *c, const struct lw_cmd *cmds, int n,
                      redisReply **out, int *replayed)
{
    return lw__conn_pipeline_ex(c, cmds, n, 0, out, replayed);
}

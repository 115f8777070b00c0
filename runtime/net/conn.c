/* A connection's life and its I/O: made closed, dropped and freed; bytes
 * out and replies in, over the socket or its TLS session; and its failures,
 * logged and spaced by the reconnect backoff.  Opening it is open.c's, a
 * request's round trip exchange.c's. */
#include "net/conn.h"

#include <lockweave.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "net/tls.h"

#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 500

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

const struct lw_url *lw__conn_url(const struct lw_conn *c,
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
    c->wait_ms = 0; /* a new socket gets open.c's timeouts */
}

/* How long a reply may take, in ms, wait_ms past the command timeout. */
static int timeout_plus(int wait_ms)
{
    int64_t ms = (int64_t)lw__settings()->command_timeout_ms + wait_ms;

    return ms < INT_MAX ? (int)ms : INT_MAX;
}

static int read_timeout_ms(const struct lw_conn *c)
{
    return timeout_plus(c->wait_ms);
}

void lw__conn_set_wait(struct lw_conn *c, int wait_ms)
{
    struct timeval tv;
    int ms;

    if (wait_ms < 0)
        wait_ms = 0;
    if (c->ctx == NULL || c->wait_ms == wait_ms)
        return;
    ms = timeout_plus(wait_ms);
    tv.tv_sec = ms / 1000;
    tv.tv_usec = ms % 1000 * 1000;
    /* The receive side only: a write still fails after the command
     * timeout.  Should this fail (it does not on an open socket), the
     * reply is waited for as long as before, and a late one fails as a
     * timeout. */
    if (setsockopt(c->ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
        lw__log(LW_LOG_DEBUG, "setsockopt(SO_RCVTIMEO): %s", strerror(errno));
        return;
    }
    c->wait_ms = wait_ms;
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
    lw__url_describe(lw__conn_url(c, lw__settings()), where, sizeof where);
    lw__log(level, "Redis %s: %s (retrying in %lld ms)", where, what,
            (long long)delay_ms);
    LW_STAT_ADD(redis_errors, 1);
    c->failing = 1;
    c->last_rc = rc;
    c->retry_at_ms = lw__now_ms() + delay_ms;
}

void lw__conn_fail(struct lw_conn *c, int rc, const char *what)
{
    /* what may be c->ctx->errstr (lw__conn_io_error()): logged before the
     * context goes. */
    note_failure(c, rc, what);
    lw__conn_drop(c);
}

const char *lw__conn_io_error(const struct lw_conn *c)
{
    static _Thread_local char buf[96];

    /* hiredis reports a read past the command timeout as EAGAIN's text,
     * which says nothing to a reader. */
    if (c->ctx->err == REDIS_ERR_IO &&
        strcmp(c->ctx->errstr, strerror(EAGAIN)) == 0) {
        if (c->wait_ms > 0)
            snprintf(buf, sizeof buf,
                     "no reply within %d ms (command timeout + %d ms "
                     "the server may wait)",
                     read_timeout_ms(c), c->wait_ms);
        else
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

int lw__conn_reply(struct lw_conn *c, void **r)
{
    if (c->tls == NULL)
        return redisGetReply(c->ctx, r);
    *r = NULL;
    for (;;) {
        if (redisGetReplyFromReader(c->ctx, r) != REDIS_OK)
            return REDIS_ERR;
        if (*r != NULL)
            return REDIS_OK;
        if (tls_feed(c, read_timeout_ms(c)) < 0)
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

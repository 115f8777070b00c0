/* Opening a connection (lw__conn_ensure()): the socket with its timeouts,
 * TLS for rediss://, then handshake.c's commands.  One opened under another
 * configuration or in the parent of a fork is opened again; while the
 * reconnect backoff runs, a closed one fails fast. */
#include "net/conn.h"

#include <lockweave.h>
#include <stdio.h>
#include <sys/time.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/log.h"
#include "net/handshake.h"
#include "net/tls.h"

static struct timeval tv_ms(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* TLS on c's new socket; a failure is c's (lw__conn_fail()). */
static int start_tls(struct lw_conn *c, const struct lw_settings *s,
                     const struct lw_url *u)
{
    struct lw_tls_opts opts = s->tls;
    char what[300], where[256];
    int rc;

    /* LOCKWEAVE_TLS_SERVER_NAME names the data nodes, whose addresses the
     * sentinels report; a sentinel is checked against the URL's name for
     * it, the one the user wrote. */
    if (u->role == LW_URL_SENTINEL)
        opts.server_name = NULL;
    rc = lw__tls_open(&c->tls, s->ssl_ctx, c->ctx->fd, u->host, &opts,
                      s->connect_timeout_ms, what, sizeof what);

    if (rc != LW_OK) {
        lw__conn_fail(c, rc, what);
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

    u = lw__conn_url(c, s);
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
        lw__conn_fail(c, LW_EREDIS, what);
        return LW_EREDIS;
    }
    redisSetTimeout(c->ctx, tv_ms(s->command_timeout_ms));
    if (u->path == NULL) /* hiredis 0.14 fails it on unix sockets */
        redisEnableKeepAlive(c->ctx);
    rc = u->tls ? start_tls(c, s, u) : LW_OK;
    if (rc == LW_OK)
        rc = lw__handshake(c, u);
    if (rc != LW_OK)
        return rc; /* c failed, and was closed */
    if (c->failing)
        lw__log(LW_LOG_INFO, "Redis connection restored");
    c->failing = 0;
    c->fresh = 1;
    return LW_OK;
}

/* A request's round trip on a connection: written, its replies read, with
 * the replay rule (a reused connection that breaks is tried once more on a
 * new one) and the NOSCRIPT rule (EVALSHA, then EVAL when a server does not
 * know the script). */
#include "net/conn.h"

#include <lockweave.h>
#include <string.h>

#include "base/clock.h"
#include "base/gate.h"
#include "net/reply.h"
#include "net/request.h"

int lw__conn_broke(struct lw_conn *c, struct lw_exchange *x, const char *what)
{
    lw__conn_fail(c, LW_EREDIS, what);
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
    lw__conn_set_wait(c, q->wait_ms);
    x->fresh = c->fresh;
    c->fresh = 0;
    rc = lw__request_format(&c->out, q, x->eval);
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
    lw__conn_broke(c, x, lw__conn_io_error(c));
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
            if (lw__conn_reply(c, &ok) != REDIS_OK)
                return -1;
            freeReplyObject(ok);
        }
        if (lw__conn_reply(c, (void **)&out[i]) != REDIS_OK)
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
                lw__conn_broke(c, &x, lw__conn_io_error(c));
        } else if (lw__conn_noscript(q, &x, out[0])) {
            out[0] = NULL;
        }
    } while (x.again);
    *replayed = x.replayed;
    c->sent_us = x.sent ? x.sent_us : 0;
    if (rc == LW_OK && !(q->flags & LW_REQ_RAW_ERRORS) &&
        (rc = lw__replies_error(out, n)) != LW_OK)
        lw__replies_free(out, n);
    return rc;
}

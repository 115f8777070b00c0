/* A request's round trip on a connection: written, its replies read, with
 * the replay rule (a reused connection that breaks is tried once more on a
 * new one) and the NOSCRIPT rule (EVALSHA, then EVAL when a server does not
 * know the script). */
#include "net/conn.h"

#include <lockweave.h>
#include <stdlib.h>
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

/* Write what c->out holds (emptied either way), the exchange's first write
 * stamping x->sent_us: what it asks ran no earlier (lease arithmetic).
 * 0, or -1 on an I/O error. */
static int send_out(struct lw_conn *c, struct lw_exchange *x)
{
    int rc;

    if (!x->sent)
        x->sent_us = lw__now_us();
    x->sent = 1;
    rc = lw__conn_send(c, c->out.p, c->out.len);
    c->out.len = 0;
    return rc;
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
    if (rc == 0)
        rc = send_out(c, x);
    c->out.len = 0;
    if (rc == 0)
        return LW_OK;
    if (!x->sent)
        return LW_ENOMEM;
    lw__conn_broke(c, x, lw__conn_io_error(c));
    return LW_EREDIS;
}

/* Is r the NOSCRIPT answer to q sent as EVALSHA (not eval)?  The one test
 * of the NOSCRIPT rule, for a request alone and for a pipeline's. */
static int noscript(const struct lw_request *q, int eval, const redisReply *r)
{
    return q->script != NULL && !eval && r->type == REDIS_REPLY_ERROR &&
           strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int lw__conn_noscript(const struct lw_request *q, struct lw_exchange *x,
                      redisReply *r)
{
    if (!noscript(q, x->eval, r))
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
            lw__replies_free(out + 1, n - 1); /* all sent again */
        }
    } while (x.again);
    *replayed = x.replayed;
    c->sent_us = x.sent ? x.sent_us : 0;
    if (rc == LW_OK && !(q->flags & LW_REQ_RAW_ERRORS) &&
        (rc = lw__replies_error(out, n)) != LW_OK)
        lw__replies_free(out, n);
    return rc;
}

/* Every request of a pipeline still to be answered (rcs[i] PENDING) ends
 * with rc. */
#define PENDING 1
static void fail_pending(int *rcs, int n, int rc)
{
    for (int i = 0; i < n; i++)
        if (rcs[i] == PENDING)
            rcs[i] = rc;
}

/* Write every request of q[0..n) still pending (each as EVALSHA, or as EVAL
 * where eval[i] says the server did not know it) in one write: 0, or -1
 * (x.again tells whether to try again, rcs[] set if not). */
static int write_pending(struct lw_conn *c, const struct lw_request *const *q,
                         int n, const unsigned char *eval, int *rcs,
                         struct lw_exchange *x)
{
    int rc;

    c->out.len = 0;
    for (int i = 0; i < n; i++)
        if (rcs[i] == PENDING && lw__request_append(&c->out, q[i], eval[i])) {
            c->out.len = 0;
            /* Nothing of this write went out: what was sent before (a
             * pipeline's earlier try) may have run, but its replies are
             * lost either way. */
            fail_pending(rcs, n, x->sent ? LW_EREDIS : LW_ENOMEM);
            return -1;
        }
    rc = send_out(c, x);
    if (rc == 0)
        return 0;
    if (!lw__conn_broke(c, x, lw__conn_io_error(c)))
        fail_pending(rcs, n, LW_EREDIS);
    return -1;
}

int lw__conn_run_many(struct lw_conn *c, const struct lw_request *const *q,
                      int n, redisReply **out, int *rcs, int *replayed)
{
    struct lw_exchange x = {0};
    unsigned char *eval = calloc((size_t)n + 1, 1);
    int wait_ms = 0;

    for (int i = 0; i < n; i++) {
        out[i] = NULL;
        rcs[i] = PENDING;
        if (lw__request_nreplies(q[i]) != 1 ||
            (q[i]->flags & (LW_REQ_ASKING | LW_REQ_INTERRUPTIBLE)))
            rcs[i] = LW_EINVAL; /* not for a pipeline */
        if (q[i]->wait_ms > wait_ms)
            wait_ms = q[i]->wait_ms;
    }
    *replayed = 0;
    if (eval == NULL) {
        fail_pending(rcs, n, LW_ENOMEM);
        return LW_ENOMEM;
    }
    do {
        int rc = lw__conn_ensure(c);
        x.again = 0;
        if (rc != LW_OK) {
            fail_pending(rcs, n, rc);
            break;
        }
        lw__conn_set_wait(c, wait_ms);
        x.fresh = c->fresh;
        c->fresh = 0;
        if (write_pending(c, q, n, eval, rcs, &x) != 0)
            continue; /* x.again: all of them again, on a new connection */
        /* The replies come in the order the requests went. */
        for (int i = 0; i < n; i++) {
            redisReply *r;
            if (rcs[i] != PENDING)
                continue;
            if (lw__conn_reply(c, (void **)&r) != REDIS_OK) {
                /* What was answered stays answered; the rest go again on a
                 * new connection, or fail. */
                if (!lw__conn_broke(c, &x, lw__conn_io_error(c)))
                    fail_pending(rcs, n, LW_EREDIS);
                break;
            }
            if (noscript(q[i], eval[i], r)) {
                freeReplyObject(r);
                eval[i] = 1; /* the text next time, which caches it */
                x.again = 1;
                continue;
            }
            out[i] = r;
            rcs[i] = LW_OK;
            if (!(q[i]->flags & LW_REQ_RAW_ERRORS) &&
                (rcs[i] = lw__replies_error(&out[i], 1)) != LW_OK)
                lw__replies_free(&out[i], 1);
        }
    } while (x.again);
    free(eval);
    *replayed = x.replayed;
    c->sent_us = x.sent ? x.sent_us : 0;
    return LW_OK;
}

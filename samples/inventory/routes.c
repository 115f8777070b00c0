/*
 * The HTTP API:
 *   GET  /stock/{sku}                  {"sku":..., "stock":N}
 *   PUT  /stock/{sku}?qty=N            set the stock (seeding), or {"qty":N}
 *   POST /stock/{sku}/deduct?qty=N     deduct, or body {"qty":N}
 *        200 remaining stock, 409 insufficient, 404 unknown SKU,
 *        503 lock not had (lw_strerror text), 500 database error
 *   POST /orders?sku=S&qty=N           deduct once per Idempotency-Key
 *        header: the deduction's answers; a replay gets the first one
 *        (Idempotent-Replayed: true); 501 on the event loop
 *   GET  /metrics                      Prometheus text
 *   GET  /health                       {"status":"ok","guarded":...}
 *   GET  /ping                         {"pong":true}, touching nothing
 * Bad SKU, qty or body: 400.  Unknown path: 404.  Wrong method: 405.
 */
/* clock_gettime() is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "inventory.h"
#include "metrics.h"
#include "parse.h"
#include "service.h"
#include "store.h"

#include <lockweave.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STOCK_PREFIX  "/stock/"
#define DEDUCT_SUFFIX "/deduct"
#define DEDUCT_MAX    1000000 /* one order; larger is surely a client bug */

void inv_reply_error(struct inv_reply *rep, int status, const char *msg)
{
    rep->status = status;
    inv_buf_printf(&rep->body, "{\"error\":");
    inv_buf_json_str(&rep->body, msg);
    inv_buf_printf(&rep->body, "}\n");
}

uint64_t inv_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* qty from the query string or a JSON body: exactly one of them. */
static int request_qty(const struct inv_request *req, long min, long max,
                       long *qty, struct inv_reply *rep)
{
    char err[160];
    int rc;
    if (req->qty && req->body_len > 0) {
        inv_reply_error(rep, 400, "qty given both in the query and the body");
        return -1;
    }
    if (req->qty)
        rc = inv_parse_qty(req->qty, min, max, qty, err, sizeof err);
    else if (req->body_len > 0)
        rc = inv_json_qty(req->body, req->body_len, min, max, qty, err,
                          sizeof err);
    else {
        rc = -1;
        snprintf(err, sizeof err,
                 "missing qty: use ?qty=N or a body {\"qty\": N}");
    }
    if (rc != 0)
        inv_reply_error(rep, 400, err);
    return rc;
}

static void get_stock(const struct inv_service *svc, const char *sku,
                      struct inv_reply *rep)
{
    int64_t qty = 0;
    int rc = inv_store_get(svc->store, sku, &qty);
    if (rc == INV_STORE_MISSING) {
        inv_reply_error(rep, 404, "unknown sku");
        return;
    }
    if (rc != INV_STORE_OK) {
        inv_reply_error(rep, 500, "stock database error");
        return;
    }
    rep->status = 200;
    inv_buf_printf(&rep->body, "{\"sku\":\"%s\",\"stock\":%lld}\n", sku,
                   (long long)qty);
}

static void put_stock(const struct inv_service *svc, const char *sku,
                      const struct inv_request *req, struct inv_reply *rep)
{
    long qty;
    if (request_qty(req, 0, INV_QTY_MAX, &qty, rep) != 0)
        return;
    if (inv_store_set(svc->store, sku, qty) != INV_STORE_OK) {
        inv_reply_error(rep, 500, "stock database error");
        return;
    }
    rep->status = 200;
    inv_buf_printf(&rep->body, "{\"sku\":\"%s\",\"stock\":%ld}\n", sku, qty);
}

/* The reply to a deduction (order_key NULL; why == lw_rc) or an order
 * (lw_rc the mark's word, LW_EDONE for a replay; why the stock lock's, set
 * when the run took it or tried); counts it in the metrics (a replayed
 * order as a replay, not a deduction). */
static void deduction_reply(const char *order_key, const char *sku, long qty,
                            int rc, int lw_rc, int why, uint64_t took_us,
                            struct inv_reply *rep)
{
    int replayed = order_key && lw_rc == LW_EDONE;

    if (replayed) {
        rep->replayed = 1;
        inv_metrics_order_replayed();
    }
    if (rc >= 0) {
        rep->status = 200;
        inv_buf_printf(&rep->body, "{");
        if (order_key)
            inv_buf_printf(&rep->body, "\"order\":\"%s\",", order_key);
        inv_buf_printf(&rep->body,
                       "\"sku\":\"%s\",\"deducted\":%ld,"
                       "\"stock\":%d",
                       sku, qty, rc);
        int warn = replayed ? LW_OK : lw_rc != LW_OK ? lw_rc : why;
        if (warn != LW_OK) {
            /* The write happened, but another caller may have run beside
             * it: say so rather than pretend. */
            inv_buf_printf(&rep->body, ",\"warning\":");
            inv_buf_json_str(&rep->body, lw_strerror(warn));
            inv_metrics_deduct(INV_OUT_LOCK_LOST, took_us);
        } else if (!replayed) {
            inv_metrics_deduct(INV_OUT_OK, took_us);
        }
        inv_buf_printf(&rep->body, "}\n");
        return;
    }
    enum inv_outcome out;
    switch (rc) {
    case INV_INSUFFICIENT:
        out = INV_OUT_INSUFFICIENT;
        inv_reply_error(rep, 409, "insufficient stock");
        break;
    case INV_NOT_FOUND:
        out = INV_OUT_NOT_FOUND;
        inv_reply_error(rep, 404, "unknown sku");
        break;
    case INV_LOCK_FAILED:
        out = INV_OUT_LOCK_FAILED;
        /* A run that could not take the stock lock: why; else the mark's
         * (or, for a deduction, the lock's) error. */
        inv_reply_error(
            rep, 503,
            lw_strerror(lw_rc == LW_OK || lw_rc == LW_ELOST ? why : lw_rc));
        break;
    default:
        out = INV_OUT_STORE_ERROR;
        inv_reply_error(rep, 500, "stock database error");
        break;
    }
    if (!replayed)
        inv_metrics_deduct(out, took_us);
}

void inv_deduct_reply(const char *sku, long qty, int rc, int lw_rc,
                      uint64_t took_us, struct inv_reply *rep)
{
    deduction_reply(NULL, sku, qty, rc, lw_rc, lw_rc, took_us, rep);
}

static void post_deduct(const struct inv_service *svc, const char *sku,
                        const struct inv_request *req, struct inv_reply *rep)
{
    long qty;
    if (request_qty(req, 1, DEDUCT_MAX, &qty, rep) != 0)
        return;

    if (svc->guarded && svc->deduct_later) {
        /* The front end answers once the lock is had (or not): nothing
         * here may wait for it. */
        rep->status = 0;
        svc->deduct_later(svc, req, sku, (int)qty);
        return;
    }
    uint64_t t0 = inv_now_us();
    int rc = svc->guarded
                 ? deduct(sku, (int)qty, svc->store, svc->work_ms)
                 : deduct_unguarded(sku, (int)qty, svc->store, svc->work_ms);
    /* Read at once: anything lockweave does later on this thread would
     * overwrite it. */
    int lw_rc = svc->guarded ? lw_last_error() : LW_OK;
    inv_deduct_reply(sku, qty, rc, lw_rc, inv_now_us() - t0, rep);
}

/* POST /orders?sku=S&qty=N (or body {"qty":N}) with an Idempotency-Key
 * header: place_order(), once per key; a replay gets the first answer. */
static void post_order(const struct inv_service *svc,
                       const struct inv_request *req, struct inv_reply *rep)
{
    const char *key = req->idempotency_key, *sku = req->sku;
    long qty;

    if (svc->deduct_later) {
        /* A front end on which nothing may wait: REDIS_ONCE waits for the
         * mark on the calling thread, and does not run with loop = yet. */
        inv_reply_error(rep, 501,
                        "POST /orders is served by inventory-service: "
                        "REDIS_ONCE does not run on an event loop yet");
        return;
    }
    if (!key) {
        inv_reply_error(rep, 400, "missing Idempotency-Key header");
        return;
    }
    if (!inv_sku_valid(key, strlen(key))) {
        inv_reply_error(rep, 400,
                        "bad Idempotency-Key: 1 to 64 characters of "
                        "A-Z a-z 0-9 _ -");
        return;
    }
    if (!sku || !inv_sku_valid(sku, strlen(sku))) {
        inv_reply_error(rep, 400,
                        "missing or bad sku: ?sku= 1 to 64 characters of "
                        "A-Z a-z 0-9 _ -");
        return;
    }
    if (request_qty(req, 1, DEDUCT_MAX, &qty, rep) != 0)
        return;

    uint64_t t0 = inv_now_us();
    int why = LW_OK, lw_rc = LW_OK, rc;
    if (svc->guarded) {
        rc = place_order(key, sku, (int)qty, svc->store, svc->work_ms, &why);
        lw_rc = lw_last_error(); /* the mark's; LW_EDONE: a replay */
    } else {
        rc =
            place_order_unguarded(key, sku, (int)qty, svc->store, svc->work_ms);
    }
    deduction_reply(key, sku, qty, rc, lw_rc, why, inv_now_us() - t0, rep);
}

static int method_is(const struct inv_request *req, const char *m)
{
    return strcmp(req->method, m) == 0;
}

static void wrong_method(struct inv_reply *rep, const char *allow)
{
    char msg[96];
    snprintf(msg, sizeof msg, "method not allowed here; allowed: %s", allow);
    rep->allow = allow;
    inv_reply_error(rep, 405, msg);
}

static void stock_routes(const struct inv_service *svc,
                         const struct inv_request *req, struct inv_reply *rep)
{
    const char *sku = req->path + strlen(STOCK_PREFIX);
    const char *slash = strchr(sku, '/');
    size_t sku_len = slash ? (size_t)(slash - sku) : strlen(sku);
    int is_deduct = slash && strcmp(slash, DEDUCT_SUFFIX) == 0;

    if (slash && !is_deduct) {
        inv_reply_error(rep, 404, "no such route");
        return;
    }
    if (!inv_sku_valid(sku, sku_len)) {
        inv_reply_error(rep, 400,
                        "bad sku: 1 to 64 characters of "
                        "A-Z a-z 0-9 _ -");
        return;
    }
    char skubuf[INV_SKU_MAX + 1];
    memcpy(skubuf, sku, sku_len);
    skubuf[sku_len] = '\0';

    if (is_deduct) {
        if (method_is(req, "POST"))
            post_deduct(svc, skubuf, req, rep);
        else
            wrong_method(rep, "POST");
    } else if (method_is(req, "GET") || method_is(req, "HEAD")) {
        get_stock(svc, skubuf, rep);
    } else if (method_is(req, "PUT")) {
        put_stock(svc, skubuf, req, rep);
    } else {
        wrong_method(rep, "GET, HEAD, PUT");
    }
}

void inv_route(const struct inv_service *svc, const struct inv_request *req,
               struct inv_reply *rep)
{
    const char *path = req->path;
    int read_only = method_is(req, "GET") || method_is(req, "HEAD");

    if (strncmp(path, STOCK_PREFIX, strlen(STOCK_PREFIX)) == 0) {
        stock_routes(svc, req, rep);
    } else if (strcmp(path, "/orders") == 0) {
        if (method_is(req, "POST"))
            post_order(svc, req, rep);
        else
            wrong_method(rep, "POST");
    } else if (strcmp(path, "/metrics") == 0) {
        if (!read_only) {
            wrong_method(rep, "GET, HEAD");
            return;
        }
        rep->status = 200;
        rep->content_type = "text/plain; version=0.0.4";
        inv_metrics_render(&rep->body, svc->guarded);
    } else if (strcmp(path, "/health") == 0) {
        if (!read_only) {
            wrong_method(rep, "GET, HEAD");
            return;
        }
        rep->status = 200;
        inv_buf_printf(&rep->body,
                       "{\"status\":\"ok\",\"guarded\":%s,\"work_ms\":%d,"
                       "\"front\":\"%s\"}\n",
                       svc->guarded ? "true" : "false", svc->work_ms,
                       svc->front ? svc->front : "");
    } else if (strcmp(path, "/ping") == 0) {
        /* Liveness of the front end itself: no store, no lock. */
        if (!read_only) {
            wrong_method(rep, "GET, HEAD");
            return;
        }
        rep->status = 200;
        inv_buf_printf(&rep->body, "{\"pong\":true}\n");
    } else {
        inv_reply_error(rep, 404, "no such route");
    }
}

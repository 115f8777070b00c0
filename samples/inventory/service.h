/* One service instance: its settings, and a request as the routes see it,
 * free of any HTTP library. */
#ifndef INV_SERVICE_H
#define INV_SERVICE_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

struct inv_store;
struct inv_request;

struct inv_service {
    struct inv_store *store;
    int guarded;       /* 0 with --no-lock: deductions race */
    int work_ms;       /* "business work" inside the critical section */
    const char *front; /* the HTTP front end, for /health */
    /* NULL: a guarded deduction runs deduct() on the calling thread, which
     * waits for the lock.  Set by a front end that answers deductions
     * later (the event loop's): a valid guarded POST /stock/{sku}/deduct is
     * handed to it instead, and inv_route() leaves rep->status 0 — the
     * front end answers req->handle itself, once the deduction is done. */
    void (*deduct_later)(const struct inv_service *svc,
                         const struct inv_request *req, const char *sku,
                         int qty);
};

struct inv_request {
    const char *method;
    const char *path;            /* without the query string */
    const char *qty;             /* ?qty=..., NULL when absent */
    const char *sku;             /* ?sku=... (POST /orders), NULL when absent */
    const char *idempotency_key; /* the Idempotency-Key header, or NULL */
    const char *body; /* NULL or body_len bytes, not NUL-terminated */
    size_t body_len;
    void *handle; /* the HTTP library's request, for deduct_later */
};

struct inv_reply {
    int status;               /* 0: deferred to deduct_later, which answers */
    const char *content_type; /* NULL: application/json */
    const char *allow;        /* Allow header for 405 */
    int replayed; /* an order's earlier outcome: Idempotent-Replayed: true */
    struct inv_buf body;
};

/* Answer one request.  Thread-safe. */
void inv_route(const struct inv_service *svc, const struct inv_request *req,
               struct inv_reply *rep);

/* A JSON error reply: {"error": msg}. */
void inv_reply_error(struct inv_reply *rep, int status, const char *msg);

/* The reply to a deduction of qty units of sku that deduct() (or its twin
 * on the loop) answered rc, lw_rc being lockweave's word on it (LW_OK, the
 * reason the lock was not had, or LW_ELOST), took_us from the request to
 * the answer; counts it in the metrics.  Thread-safe. */
void inv_deduct_reply(const char *sku, long qty, int rc, int lw_rc,
                      uint64_t took_us, struct inv_reply *rep);

/* Monotonic microseconds. */
uint64_t inv_now_us(void);

#endif /* INV_SERVICE_H */

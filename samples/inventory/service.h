/* One service instance: its settings, and a request as the routes see it,
 * free of any HTTP library. */
#ifndef INV_SERVICE_H
#define INV_SERVICE_H

#include "buf.h"

#include <stddef.h>

struct inv_store;

struct inv_service {
    struct inv_store *store;
    int guarded; /* 0 with --no-lock: deductions race */
    int work_ms; /* "business work" inside the critical section */
};

struct inv_request {
    const char *method;
    const char *path; /* without the query string */
    const char *qty;  /* ?qty=..., NULL when absent */
    const char *body; /* NULL or body_len bytes, not NUL-terminated */
    size_t body_len;
};

struct inv_reply {
    int status;
    const char *content_type; /* NULL: application/json */
    const char *allow;        /* Allow header for 405 */
    struct inv_buf body;
};

/* Answer one request.  Thread-safe. */
void inv_route(const struct inv_service *svc, const struct inv_request *req,
               struct inv_reply *rep);

/* A JSON error reply: {"error": msg}. */
void inv_reply_error(struct inv_reply *rep, int status, const char *msg);

#endif /* INV_SERVICE_H */

/* libmicrohttpd glue: collect the request, hand it to inv_route(), send the
 * reply.  Everything HTTP-library specific stays in this file. */
#include "http.h"
#include "metrics.h"
#include "service.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_MAX         4096 /* requests are tiny; more is a client error */
#define CONNECTION_LIMIT 1024 /* one thread each */
#define IDLE_TIMEOUT_S   60   /* keep-alive connections idle longer close */

struct inv_http {
    struct MHD_Daemon *d;
    const struct inv_service *svc;
    int port;
};

/* Per request, between MHD's calls of the handler. */
struct req_ctx {
    char body[BODY_MAX];
    size_t len;
    int too_large;
};

static enum MHD_Result send_reply(struct MHD_Connection *c,
                                  struct inv_reply *rep)
{
    if (rep->body.oom) {
        inv_buf_free(&rep->body);
        rep->status = 500;
        inv_buf_printf(&rep->body, "{\"error\":\"out of memory\"}\n");
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(
        rep->body.len, rep->body.p ? rep->body.p : (char *)"",
        MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rep->content_type ? rep->content_type
                                              : "application/json");
    if (rep->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rep->allow);
    if (rep->replayed)
        MHD_add_response_header(r, "Idempotent-Replayed", "true");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)rep->status, r);
    MHD_destroy_response(r);
    inv_metrics_status(rep->status);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    struct inv_http *h = cls;
    struct req_ctx *ctx = *con_cls;
    (void)version;

    /* First call: headers only.  Keep a context for the body. */
    if (!ctx) {
        ctx = calloc(1, sizeof *ctx);
        if (!ctx)
            return MHD_NO;
        *con_cls = ctx;
        return MHD_YES;
    }
    /* Body chunks: gather, remembering an overflow to answer 413 at the
     * end (answering mid-upload would break keep-alive). */
    if (*upload_data_size > 0) {
        if (ctx->len + *upload_data_size > BODY_MAX)
            ctx->too_large = 1;
        else {
            memcpy(ctx->body + ctx->len, upload_data, *upload_data_size);
            ctx->len += *upload_data_size;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }

    struct inv_reply rep = {0};
    if (ctx->too_large) {
        inv_reply_error(&rep, 413, "request body larger than 4096 bytes");
    } else {
        struct inv_request req = {
            .method = method,
            .path = url,
            .qty = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "qty"),
            .sku = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sku"),
            .idempotency_key = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                           "Idempotency-Key"),
            .body = ctx->body,
            .body_len = ctx->len,
        };
        inv_route(h->svc, &req, &rep);
    }
    enum MHD_Result ok = send_reply(c, &rep);
    inv_buf_free(&rep.body);
    return ok;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

struct inv_http *inv_http_start(const struct inv_service *svc, const char *addr,
                                int port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "inventory: bad listen address %s (IPv4 expected)\n",
                addr);
        return NULL;
    }
    struct inv_http *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->svc = svc;
    h->d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
            MHD_USE_POLL | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, &sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!h->d) {
        fprintf(stderr, "inventory: cannot listen on %s:%d\n", addr, port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    return h;
}

int inv_http_port(const struct inv_http *h)
{
    return h->port;
}

void inv_http_stop(struct inv_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}

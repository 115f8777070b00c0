/* libevent glue (evhttp) for the event-loop front end: collect the request,
 * hand it to inv_route(), send the reply — or, for a guarded deduction, let
 * deduct_on_loop() answer later.  Everything libevent specific stays here
 * and in main_loop.c.  All of it runs on the loop's one thread. */
/* getsockname(), inet_pton() are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "loop.h"
#include "metrics.h"
#include "service.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/queue.h> /* TAILQ_INIT, for evkeyvalq */
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_MAX       4096      /* requests are tiny; more is a client error */
#define BODY_HARD_MAX  (1 << 20) /* past this, evhttp answers 413 itself */
#define IDLE_TIMEOUT_S 60        /* keep-alive connections idle longer close */

struct inv_event_http {
    struct evhttp *http;
    struct evhttp_bound_socket *sock;
    const struct inv_service *svc;
    int port;
};

static const char *method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "OTHER"; /* not allowed: evhttp answers 405 itself */
    }
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return "Unknown";
    }
}

static void send_reply(struct evhttp_request *req, struct inv_reply *rep)
{
    if (rep->body.oom) {
        inv_buf_free(&rep->body);
        rep->status = 500;
        inv_buf_printf(&rep->body, "{\"error\":\"out of memory\"}\n");
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type",
                      rep->content_type ? rep->content_type
                                        : "application/json");
    if (rep->allow)
        evhttp_add_header(h, "Allow", rep->allow);
    if (rep->body.len)
        evbuffer_add(evhttp_request_get_output_buffer(req), rep->body.p,
                     rep->body.len);
    /* Queued: written when the handler is back on the loop.  evhttp keeps
     * req until then (and frees it, also when the client has gone). */
    evhttp_send_reply(req, rep->status, reason(rep->status), NULL);
    inv_metrics_status(rep->status);
}

void inv_loop_answer(struct evhttp_request *req, char *sku, int qty, int rc,
                     int lw_rc, uint64_t t0_us)
{
    struct inv_reply rep = {0};
    inv_deduct_reply(sku, qty, rc, lw_rc, inv_now_us() - t0_us, &rep);
    send_reply(req, &rep);
    inv_buf_free(&rep.body);
    free(sku);
}

void inv_loop_deduct(const struct inv_service *svc,
                     const struct inv_request *req, const char *sku, int qty)
{
    size_t n = strlen(sku) + 1;
    char *copy = malloc(n);
    if (!copy) {
        struct inv_reply rep = {0};
        inv_reply_error(&rep, 500, "out of memory");
        send_reply(req->handle, &rep);
        inv_buf_free(&rep.body);
        return;
    }
    memcpy(copy, sku, n);
    /* Returns at once.  The body, or on_fail, answers the request on this
     * loop once the lock is had or cannot be (or here, before this
     * returns, when the request cannot even be made). */
    deduct_on_loop(req->handle, copy, qty, svc->store, svc->work_ms,
                   inv_now_us());
}

static void handle(struct evhttp_request *req, void *arg)
{
    struct inv_event_http *h = arg;
    struct inv_reply rep = {0};
    struct evkeyvalq query;
    char *path = NULL;
    TAILQ_INIT(&query);

    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t body_len = evbuffer_get_length(in);
    const char *raw_path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *raw_query = uri ? evhttp_uri_get_query(uri) : NULL;

    if (body_len > BODY_MAX) {
        inv_reply_error(&rep, 413, "request body larger than 4096 bytes");
    } else if (!(path = evhttp_uridecode(raw_path ? raw_path : "", 0, NULL))) {
        inv_reply_error(&rep, 500, "out of memory");
    } else if (raw_query && evhttp_parse_query_str(raw_query, &query) != 0) {
        inv_reply_error(&rep, 400, "bad query string");
    } else {
        struct inv_request r = {
            .method = method_name(evhttp_request_get_command(req)),
            .path = path,
            .qty = evhttp_find_header(&query, "qty"),
            .body = body_len ? (const char *)evbuffer_pullup(in, -1) : NULL,
            .body_len = body_len,
            .handle = req,
        };
        inv_route(h->svc, &r, &rep);
    }
    /* status 0: a deduction went to inv_loop_deduct(), which answers (may
     * have answered already): req is not ours to touch any more. */
    if (rep.status != 0)
        send_reply(req, &rep);
    inv_buf_free(&rep.body);
    evhttp_clear_headers(&query);
    free(path);
}

struct inv_event_http *inv_event_http_start(struct event_base *base,
                                            const struct inv_service *svc,
                                            const char *addr, int port)
{
    struct in_addr a;
    if (inet_pton(AF_INET, addr, &a) != 1) {
        fprintf(stderr,
                "inventory-loop: bad listen address %s (IPv4 "
                "expected)\n",
                addr);
        return NULL;
    }
    struct inv_event_http *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->svc = svc;
    h->http = evhttp_new(base);
    if (!h->http) {
        free(h);
        return NULL;
    }
    /* The router answers 405 for these; evhttp for anything else. */
    evhttp_set_allowed_methods(
        h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                     EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                     EVHTTP_REQ_PATCH);
    evhttp_set_max_body_size(h->http, BODY_HARD_MAX);
    evhttp_set_timeout(h->http, IDLE_TIMEOUT_S);
    evhttp_set_gencb(h->http, handle, h);
    struct evhttp_bound_socket *sock =
        evhttp_bind_socket_with_handle(h->http, addr, (ev_uint16_t)port);
    if (!sock) {
        fprintf(stderr, "inventory-loop: cannot listen on %s:%d\n", addr, port);
        evhttp_free(h->http);
        free(h);
        return NULL;
    }
    h->sock = sock;
    /* The port bound, port 0 included. */
    struct sockaddr_storage ss;
    ev_socklen_t len = sizeof ss;
    h->port = port;
    if (getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&ss,
                    &len) == 0 &&
        ss.ss_family == AF_INET)
        h->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return h;
}

int inv_event_http_port(const struct inv_event_http *h)
{
    return h->port;
}

void inv_event_http_stop_accepting(struct inv_event_http *h)
{
    if (h && h->sock) {
        evhttp_del_accept_socket(h->http, h->sock);
        h->sock = NULL;
    }
}

void inv_event_http_stop(struct inv_event_http *h)
{
    if (!h)
        return;
    evhttp_free(h->http);
    free(h);
}

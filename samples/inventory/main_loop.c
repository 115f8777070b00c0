/*
 * inventory-loop: the inventory service on an event loop.  One thread runs a
 * libevent loop; evhttp serves the same HTTP API as inventory-service, and
 * a deduction is a woven `loop =` function (deduct_loop.c): the handler
 * returns to the loop at once and the deduction's body runs on it once the
 * Redis lock "stock:{sku}" is held.  Run it beside inventory-service
 * instances with the same --db and the same Redis: they all take the same
 * lock, so they exclude each other.
 */
#include "loop.h"
#include "options.h"
#include "service.h"
#include "store.h"

#include <event2/event.h>
#include <lockweave/event.h>

#include <signal.h>
#include <stdio.h>

#define PROG "inventory-loop"

lw_loop *inv_loop;

static void on_stop(evutil_socket_t sig, short what, void *base)
{
    (void)sig, (void)what;
    event_base_loopbreak(base);
}

int main(int argc, char **argv)
{
    struct inv_options o;
    if (inv_options_parse(PROG, argc, argv, &o) != 0) {
        inv_options_usage(PROG, stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up is not fatal */

    int status = 1;
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL;
    struct inv_event_http *http = NULL;
    char err[512];
    struct inv_store *store = inv_store_sqlite_open(o.db, err, sizeof err);
    if (!store) {
        fprintf(stderr, PROG ": %s\n", err);
        goto cleanup;
    }
    base = event_base_new();
    if (!base || !(inv_loop = lw_loop_event(base))) {
        fprintf(stderr, PROG ": cannot set up the event loop\n");
        goto cleanup;
    }
    /* --no-lock: deduct_unguarded() right in the handler, on the loop. */
    struct inv_service svc = {store, o.guarded, o.work_ms, "event-loop",
                              inv_loop_deduct};
    http = inv_event_http_start(base, &svc, o.bind, o.port);
    if (!http)
        goto cleanup;
    /* SIGINT, SIGTERM: leave the loop, then clean up below. */
    sigint = evsignal_new(base, SIGINT, on_stop, base);
    sigterm = evsignal_new(base, SIGTERM, on_stop, base);
    if (!sigint || !sigterm || evsignal_add(sigint, NULL) != 0 ||
        evsignal_add(sigterm, NULL) != 0) {
        fprintf(stderr, PROG ": cannot watch signals\n");
        goto cleanup;
    }
    int port = inv_event_http_port(http);
    if (o.port_file && inv_write_port_file(o.port_file, port) != 0) {
        fprintf(stderr, PROG ": cannot write %s\n", o.port_file);
        goto cleanup;
    }
    printf(PROG ": http://%s:%d, %s, db %s, work %d ms, one event loop\n",
           o.bind, port,
           o.guarded ? "deduct guarded by lock:stock:{sku} (loop =)"
                     : "UNGUARDED (--no-lock)",
           o.db, o.work_ms);
    fflush(stdout);

    if (event_base_dispatch(base) == 0)
        status = 0;

cleanup:
    /* Shutting down: take no new connection; end the deductions still
     * waiting for the lock (their on_fail answers 503 with
     * lw_strerror(LW_ECANCELED); no callback runs after lw_loop_free()
     * returns); then one pass of the loop writes those answers out.  A
     * request that still comes on an open connection then finds no loop:
     * on_fail at the call, 503 (LW_EINVAL). */
    inv_event_http_stop_accepting(http);
    if (inv_loop) {
        lw_loop_free(inv_loop);
        inv_loop = NULL;
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
    inv_event_http_stop(http);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    if (base)
        event_base_free(base);
    inv_store_close(store);
    lw_shutdown();
    return status;
}

/*
 * inventory-service: one instance of the inventory HTTP service, a thread
 * per connection (libmicrohttpd).  Run several on different ports with the
 * same --db and the same Redis ($LOCKWEAVE_REDIS_URL) to stand for several
 * hosts; inventory-loop (main_loop.c) is the event-loop front end of the
 * same service and runs beside them.
 */
/* sigwait(), sigprocmask() are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "http.h"
#include "options.h"
#include "service.h"
#include "store.h"

#include <lockweave.h>

#include <signal.h>
#include <stdio.h>

#define PROG "inventory-service"

int main(int argc, char **argv)
{
    struct inv_options o;
    if (inv_options_parse(PROG, argc, argv, &o) != 0) {
        inv_options_usage(PROG, stderr);
        return 2;
    }

    /* Block the stop signals before any thread starts, so every thread
     * inherits the mask and only sigwait() below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up is not fatal */

    int status = 1;
    struct inv_http *http = NULL;
    char err[512];
    struct inv_store *store = inv_store_sqlite_open(o.db, err, sizeof err);
    if (!store) {
        fprintf(stderr, PROG ": %s\n", err);
        goto cleanup;
    }
    struct inv_service svc = {store, o.guarded, o.work_ms, "threads", NULL};
    http = inv_http_start(&svc, o.bind, o.port);
    if (!http)
        goto cleanup;
    int port = inv_http_port(http);
    if (o.port_file && inv_write_port_file(o.port_file, port) != 0) {
        fprintf(stderr, PROG ": cannot write %s\n", o.port_file);
        goto cleanup;
    }
    printf(PROG ": http://%s:%d, %s, db %s, work %d ms\n", o.bind, port,
           o.guarded ? "deduct guarded by lock:stock:{sku}"
                     : "UNGUARDED (--no-lock)",
           o.db, o.work_ms);
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    status = 0;

cleanup:
    inv_http_stop(http); /* first: no request may still use the store */
    inv_store_close(store);
    lw_shutdown();
    return status;
}

/*
 * inventory-service: one instance of the inventory HTTP service.  Run several
 * on different ports with the same --db and the same Redis
 * ($LOCKWEAVE_REDIS_URL) to stand for several hosts.
 */
/* sigwait(), sigprocmask() and rename() targets are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "http.h"
#include "parse.h"
#include "service.h"
#include "store.h"

#include <lockweave.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORK_MS_DEFAULT 3 /* enough for the unguarded race to show at once */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: inventory-service [options]\n"
        "  --port N        TCP port (default 8080; 0 picks a free one)\n"
        "  --bind ADDR     IPv4 address to listen on (default 127.0.0.1)\n"
        "  --db PATH       SQLite file shared by all instances "
        "(default inventory.db)\n"
        "  --work-ms N     \"business work\" inside deduct() (default %d)\n"
        "  --no-lock       deduct without the Redis lock, to show the race\n"
        "  --port-file F   write the bound port to F once listening\n"
        "Redis: $LOCKWEAVE_REDIS_URL (default redis://127.0.0.1:6379)\n",
        WORK_MS_DEFAULT);
}

struct options {
    int port;
    const char *bind;
    const char *db;
    const char *port_file;
    int work_ms;
    int guarded;
};

static int parse_args(int argc, char **argv, struct options *o)
{
    char err[160];
    long v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-lock") == 0) {
            o->guarded = 0;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (!val) {
            fprintf(stderr,
                    "inventory-service: %s needs a value (or is "
                    "unknown)\n",
                    a);
            return -1;
        }
        i++;
        if (strcmp(a, "--port") == 0) {
            if (inv_parse_qty(val, 0, 65535, &v, err, sizeof err) != 0)
                goto bad;
            o->port = (int)v;
        } else if (strcmp(a, "--work-ms") == 0) {
            if (inv_parse_qty(val, 0, 10000, &v, err, sizeof err) != 0)
                goto bad;
            o->work_ms = (int)v;
        } else if (strcmp(a, "--bind") == 0) {
            o->bind = val;
        } else if (strcmp(a, "--db") == 0) {
            o->db = val;
        } else if (strcmp(a, "--port-file") == 0) {
            o->port_file = val;
        } else {
            fprintf(stderr, "inventory-service: unknown option %s\n", a);
            return -1;
        }
        continue;
    bad:
        /* The parser speaks of "qty"; the user typed an option. */
        fprintf(stderr, "inventory-service: bad value for %s: %s\n", a, val);
        return -1;
    }
    return 0;
}

/* Write then rename, so a reader polling for the file never sees it half
 * written. */
static int write_port_file(const char *path, int port)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%d\n", port) > 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o = {8080, "127.0.0.1",     "inventory.db",
                        NULL, WORK_MS_DEFAULT, 1};
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
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
        fprintf(stderr, "inventory-service: %s\n", err);
        goto cleanup;
    }
    struct inv_service svc = {store, o.guarded, o.work_ms};
    http = inv_http_start(&svc, o.bind, o.port);
    if (!http)
        goto cleanup;
    int port = inv_http_port(http);
    if (o.port_file && write_port_file(o.port_file, port) != 0) {
        fprintf(stderr, "inventory-service: cannot write %s\n", o.port_file);
        goto cleanup;
    }
    printf("inventory-service: http://%s:%d, %s, db %s, work %d ms\n", o.bind,
           port,
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

/* The options of both front ends: stdio and string work, plain C11. */
#include "options.h"

#include "parse.h"

#include <stdlib.h>
#include <string.h>

void inv_options_usage(const char *prog, FILE *f)
{
    fprintf(
        f,
        "usage: %s [options]\n"
        "  --port N        TCP port (default 8080; 0 picks a free one)\n"
        "  --bind ADDR     IPv4 address to listen on (default 127.0.0.1)\n"
        "  --db PATH       SQLite file shared by all instances "
        "(default inventory.db)\n"
        "  --work-ms N     \"business work\" inside the lock (default %d)\n"
        "  --no-lock       deduct without the Redis lock, to show the race\n"
        "  --port-file F   write the bound port to F once listening\n"
        "Redis: $LOCKWEAVE_REDIS_URL (default redis://127.0.0.1:6379)\n",
        prog, INV_WORK_MS_DEFAULT);
}

int inv_options_parse(const char *prog, int argc, char **argv,
                      struct inv_options *o)
{
    *o = (struct inv_options){8080, "127.0.0.1",         "inventory.db",
                              NULL, INV_WORK_MS_DEFAULT, 1};
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
            inv_options_usage(prog, stdout);
            exit(0);
        }
        if (!val) {
            fprintf(stderr, "%s: %s needs a value (or is unknown)\n", prog, a);
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
            fprintf(stderr, "%s: unknown option %s\n", prog, a);
            return -1;
        }
        continue;
    bad:
        /* The parser speaks of "qty"; the user typed an option. */
        fprintf(stderr, "%s: bad value for %s: %s\n", prog, a, val);
        return -1;
    }
    return 0;
}

int inv_write_port_file(const char *path, int port)
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

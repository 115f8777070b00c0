/* The command line both front ends share (inventory-service, inventory-loop),
 * and the port file they write once listening. */
#ifndef INV_OPTIONS_H
#define INV_OPTIONS_H

#include <stdio.h>

#define INV_WORK_MS_DEFAULT 3 /* enough for the unguarded race to show */

struct inv_options {
    int port;
    const char *bind;
    const char *db;
    const char *port_file;
    int work_ms;
    int guarded;
};

/* Defaults, then argv.  0, or -1 with the reason printed (prog names the
 * program); --help prints the usage and exits. */
int inv_options_parse(const char *prog, int argc, char **argv,
                      struct inv_options *o);

void inv_options_usage(const char *prog, FILE *f);

/* Write the port to path through a rename, so a reader polling for the file
 * never sees it half written.  0 or -1. */
int inv_write_port_file(const char *path, int port);

#endif /* INV_OPTIONS_H */

/*
 * lockweave-gen: weave REDIS_LOCK annotations into a copy of a C file.
 *
 *   lockweave-gen [options] INPUT.c -o OUTPUT.c [-- compiler flags...]
 *   lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...
 *
 * The first form reads INPUT.c and writes the woven copy; the second is a
 * compiler launcher (lockweave_generate() makes it the target's): it weaves
 * the source of the compile it is given and runs that compile on the
 * result.  Either way, a file whose text and headers never mention
 * REDIS_LOCK (prescan.c) is not parsed and is compiled with LW__MODE_UNPARSED;
 * one that does is parsed with libclang using the compiler flags, every
 * annotation is checked, and each annotated definition is woven.  On any
 * error: diagnostics on stderr, exit status 1, nothing written or compiled.
 *
 * This is the front end, which every compile goes through.  The parse
 * lives in lockweave-gen-scan (main_scan.c): loading libclang (libLLVM's
 * relocations and static constructors) costs ~20 ms, more than the whole
 * path of a file without REDIS_LOCK, so only a file that needs the parse
 * pays for it.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Replace this process with lockweave-gen-scan, installed beside it, on the
 * same command line.  Returns 1, only on failure. */
static int exec_scan(char **argv)
{
    char front[PATH_MAX], scan[PATH_MAX];
    if (self_paths(front, scan, sizeof scan) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot find its own path\n");
        return 1;
    }
    argv[0] = scan;
    execv(scan, argv);
    fprintf(stderr, "lockweave-gen: error: cannot run %s: %s\n", scan,
            strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    lw_cli cl;
    int status = cli_start(&cl, argc, argv);
    if (status < 0)
        status = cli_prescan(&cl) ? exec_scan(argv) : cli_unparsed(&cl);
    return cli_finish(&cl, status);
}

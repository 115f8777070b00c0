/*
 * What lockweave-gen (main_front.c) and lockweave-gen-scan (main_scan.c)
 * share.  Both take the same command line, in either of its forms,
 *
 *   lockweave-gen [options] INPUT.c -o OUTPUT.c [-- compiler flags...]
 *   lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...
 *
 * read the input and its compiler flags alike, and give a file in which the
 * prescan finds no REDIS_LOCK the same output.  They differ in what happens
 * to a file that needs the parse: the front end hands it to the scanner,
 * which parses and weaves it.
 */
#ifndef LW_CLI_H
#define LW_CLI_H

#include "args.h"

typedef struct lw_cli {
    int launch; /* the --launch form */
    /* The file-to-file form. */
    const char *output;  /* -o as written: the depfile's target */
    char *output_abs;    /* owned */
    const char *depfile; /* --depfile, or NULL */
    int touch;           /* --touch */
    /* The --launch form: the compile command to run. */
    lw_compile compile;
    /* Both forms. */
    const char *input;  /* as the command line names it */
    char *input_abs;    /* owned */
    const char *resdir; /* clang's resource directory */
    lw_buf src;         /* the input's text */
    lw_argv flags;      /* the compiler flags the parse gets */
    lw_argv seen;       /* the files the prescan read */
} lw_cli;

/* Read the command line into cl and, when it names a file to weave, that
 * file and its compiler flags.  Returns -1 when there is a file to weave,
 * else the exit status: --help, --version, a usage error, an unreadable
 * input, or a compile with nothing to weave (run here).  cli_finish()
 * releases cl either way. */
int cli_start(lw_cli *cl, int argc, char **argv);
/* Whether the input or a header it includes mentions REDIS_LOCK. */
int cli_prescan(lw_cli *cl);
/* The input, compiled or written as it is under LW_MODE_UNPARSED (a file
 * the prescan ruled out).  Returns the exit status. */
int cli_unparsed(lw_cli *cl);
/* The file-to-file form's output: write out to -o, and the depfile naming
 * deps.  0, or 1 after saying why not. */
int cli_write(const lw_cli *cl, const lw_buf *out, const char *const *deps,
              int ndeps);
/* After a failure with errors reported, say how many and that nothing was
 * written or compiled; release cl.  Returns status. */
int cli_finish(lw_cli *cl, int status);

#endif

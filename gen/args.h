/* Command-line and compiler-flag handling (args.c). */
#ifndef LW_ARGS_H
#define LW_ARGS_H

#include "lwgen.h"

typedef struct lw_argv {
    char **v; /* NULL-terminated */
    int n, cap;
} lw_argv;

void argv_push(lw_argv *v, const char *s);
void argv_free(lw_argv *v);

/* Append to out the flags of in[0..n) that matter to a parse: drops output
 * options, dependency options, other inputs and GCC-only options; makes
 * include paths absolute against dir (NULL: leave them). */
void flags_filter(lw_argv *out, char *const *in, int n, const char *dir,
                  const char *input);

/* Append the filtered flags compile_commands.json in build_dir gives for
 * input_abs.  0, or -1 after printing why. */
int compdb_flags(const char *build_dir, const char *input_abs, lw_argv *out);

/* ---- launch.c: a compile command run through lockweave-gen --launch ---- */

typedef struct lw_compile {
    char **argv; /* [launcher...] compiler args... */
    int argc;
    int first_opt;       /* argv[0..first_opt): the launchers and compiler */
    int src;             /* index of the last C or C++ source, -1: none */
    int nsrc;            /* C and C++ sources on the command line */
    int cxx;             /* argv[src] is C++ */
    int other_input;     /* an input of another language (-x c-header) */
    int compile_only;    /* -c, -S, -E or -fsyntax-only: no link */
    const char *obj;     /* -o, or NULL */
    const char *depfile; /* -MF (or -Wp,-MD,), or NULL */
    int md;              /* -MD or -MMD: a depfile, -MF's or named after -o */
} lw_compile;

void compile_parse(lw_compile *c, int argc, char **argv);
/* Whether a source's name says C++ (.cpp, .cc, ...), as a compiler
 * driver decides its language. */
int is_cxx_source(const char *path);
/* The woven copy of a compile's source lives outside the build tree, where
 * no wildcard, clean rule or rmdir of the object directory meets it: in
 * $TMPDIR/lockweave-<uid>/, in a directory named after the object, under
 * the source's own name, for the length of the compile. */
typedef struct lw_copy {
    char *file;  /* what the compiler reads */
    char *shown; /* the name the wrappers' #line gives; where
                  * LOCKWEAVE_KEEP_WOVEN keeps the copy */
    char *dir;   /* file's directory, removed after the compile */
} lw_copy;

/* Choose, and make the directory of, the woven copy of c's source.  0, or
 * -1 with errno. */
int copy_place(const lw_compile *c, lw_copy *cp);
void copy_free(lw_copy *cp);
/* Run c's command with its source replaced by copy->file (copy NULL: kept),
 * pre after the compiler and post at the end.  With neither a copy nor a
 * depfile it execs the compiler; otherwise it waits, then makes the
 * depfile name input (the source as given) for the copy and adds this
 * generator's two executables to it, and removes the copy.  Returns the
 * compiler's exit status. */
int compile_run(const lw_compile *c, const char *input, const lw_copy *copy,
                const lw_argv *pre, const lw_argv *post);
/* Paths of lockweave-gen and lockweave-gen-scan, the one running and its
 * sibling.  0 or -1. */
int self_paths(char *front, char *scan, size_t size);

/* prescan.c: 1 when REDIS_LOCK appears in text (the file at path) or in a
 * project header it includes (by text, without preprocessing).  Appends
 * every file read to seen. */
int prescan_mentions(const char *path, const char *text, const lw_argv *flags,
                     lw_argv *seen);
#endif

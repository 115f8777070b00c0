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

/* prescan.c: 1 when REDIS_LOCK appears in text (the file at path) or in a
 * project header it includes (by text, without preprocessing).  Appends
 * every file read to seen. */
int prescan_mentions(const char *path, const char *text, const lw_argv *flags,
                     lw_argv *seen);
#endif

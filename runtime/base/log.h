#ifndef LW_LOG_H
#define LW_LOG_H

#include <stddef.h>

/* The lowest level logged, LW_LOG_...; -1 until LOCKWEAVE_LOG is read.
 * Read it through lw__log_on(). */
extern int lw__log_min;

/* Read LOCKWEAVE_LOG unless it was (warning at once about a value that
 * names no level); the lowest level logged. */
int lw__log_start(void);

/* Whether a line at level would be logged: a load and a compare, for a
 * caller to test before it gathers what a line says (debug lines on the
 * lock's path). */
static inline int lw__log_on(int level)
{
    int min = __atomic_load_n(&lw__log_min, __ATOMIC_RELAXED);

    return level >= (min >= 0 ? min : lw__log_start());
}

/* Emit one log line through the user's hook (or stderr) if level is enabled. */
void lw__log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* s for a log line into out (cap bytes, NUL-terminated, cut short if it
 * does not fit), each run of 16 or more hex digits cut to its first 4 and
 * "...": text a server sends back may echo a command's arguments ("unknown
 * command ..., with args beginning with: ..."), and a lock token among them
 * must not reach a log. */
void lw__log_mask_tokens(const char *s, char *out, size_t cap);

#endif

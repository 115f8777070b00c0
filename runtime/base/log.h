#ifndef LW_LOG_H
#define LW_LOG_H

#include <stddef.h>

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

#ifndef LW_KEYNAMES_H
#define LW_KEYNAMES_H

#include <stddef.h>

#define LW_FENCE_SUFFIX ":fence"
#define LW_WAKE_SUFFIX  ":wake"

/* Write the companion name of key into buf (cap bytes) or, if it does not
 * fit, a malloc()ed buffer; returns it (free it if != buf), NULL on ENOMEM.
 * Not NUL-terminated: *outlen has the length. */
char *lw__keyname(const char *key, size_t len, const char *suffix, char *buf,
                  size_t cap, size_t *outlen);

#endif

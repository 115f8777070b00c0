#ifndef LW_SHA1_H
#define LW_SHA1_H

#include <stddef.h>

/* SHA-1 of p[0..n) as 40 lowercase hex digits and a NUL in hex (41 bytes):
 * the name Redis gives a script (EVALSHA), so a client can run a script by
 * its SHA without asking the server for it first.  Not for security. */
void lw__sha1_hex(const void *p, size_t n, char hex[41]);

#endif

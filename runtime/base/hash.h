#ifndef LW_HASH_H
#define LW_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a of p[0..n): cheap, and good enough for the few lock keys a
 * process's threads hold or wait for at once. */
static inline uint64_t lw__hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

#endif

#ifndef LW_HASH_H
#define LW_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a of p[0..n), mixed so that its low bits depend on all: cheap, and
 * good enough for the few lock keys a process's threads hold or wait for
 * at once.  Callers take it modulo a small table's size, and FNV-1a's own
 * low k bits depend only on the low k bits of the bytes (it xors a byte in
 * and multiplies): keys that differ only in their bytes' higher bits ("k:0"
 * and "k:8") would share a bucket. */
static inline uint64_t lw__hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    /* MurmurHash3's finalizer: every output bit depends on every input
     * bit. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

#endif

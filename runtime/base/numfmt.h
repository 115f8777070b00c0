#ifndef LW_NUMFMT_H
#define LW_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes lw__fmt_dec() may write: 20 digits and the NUL. */
#define LW_FMT_U64_MAX 21

/* v in base 10 (lw__fmt_dec) or 16, lowercase (lw__fmt_hex), into out,
 * NUL-terminated; returns the length.  Not snprintf(): numbers are
 * formatted on every lock's path, and a printf costs more than the rest of
 * building its command.  The bases are constants, so no division is left. */
static inline size_t lw__fmt_dec(char *out, uint64_t v)
{
    char rev[LW_FMT_U64_MAX];
    size_t n = 0;

    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

static inline size_t lw__fmt_hex(char *out, uint64_t v)
{
    char rev[LW_FMT_U64_MAX];
    size_t n = 0;

    do {
        rev[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

#endif

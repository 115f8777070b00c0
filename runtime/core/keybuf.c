/* The key inside a guard: inline up to LW_GUARD_INLINE_KEY bytes, heap beyond,
 * never truncated.  Appends after an error are no-ops so the woven wrapper can
 * build the whole key and check once, in lw_guard_enter(). */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "core/guard.h"

static int reserve(struct lw_gimpl *g, size_t extra)
{
    size_t need = g->keylen + extra, cap;
    char *p;

    if (g->status != LW_OK)
        return -1;
    /* Checked before the capacity: a buffer that grew by doubling may hold
     * more than LW_KEY_MAX, and the limit is on the key, not the buffer. */
    if (need > LW_KEY_MAX || need < extra) {
        g->status = LW_EINVAL;
        return -1;
    }
    if (need <= g->keycap)
        return 0;
    cap = g->keycap * 2 > need ? g->keycap * 2 : need;
    if (cap > LW_KEY_MAX)
        cap = LW_KEY_MAX;
    p = g->key == g->inline_key ? malloc(cap) : realloc(g->key, cap);
    if (p == NULL) {
        g->status = LW_ENOMEM;
        return -1;
    }
    if (g->key == g->inline_key)
        memcpy(p, g->inline_key, g->keylen);
    g->key = p;
    g->keycap = cap;
    return 0;
}

void lw_guard_key_bytes(lw_guard *gu, const void *p, size_t n)
{
    struct lw_gimpl *g = lw__gimpl(gu);

    if (p == NULL && n != 0) {
        g->status = g->status ? g->status : LW_EINVAL;
        return;
    }
    if (n == 0 || reserve(g, n))
        return;
    memcpy(g->key + g->keylen, p, n);
    g->keylen += n;
}

void lw_guard_key_str(lw_guard *gu, const char *s)
{
    if (s == NULL) {
        struct lw_gimpl *g = lw__gimpl(gu);
        g->status = g->status ? g->status : LW_EINVAL;
        return;
    }
    lw_guard_key_bytes(gu, s, strlen(s));
}

void lw_guard_key_u64(lw_guard *gu, uint64_t v)
{
    char buf[20], *p = buf + sizeof buf;

    do
        *--p = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    lw_guard_key_bytes(gu, p, (size_t)(buf + sizeof buf - p));
}

void lw_guard_key_i64(lw_guard *gu, int64_t v)
{
    if (v < 0) {
        lw_guard_key_bytes(gu, "-", 1);
        /* Negate in unsigned arithmetic: -INT64_MIN overflows int64_t. */
        lw_guard_key_u64(gu, (uint64_t)0 - (uint64_t)v);
        return;
    }
    lw_guard_key_u64(gu, (uint64_t)v);
}

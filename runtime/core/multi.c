/*
 * Several guards entered as one lock (a function with several REDIS_LOCK
 * annotations).  Deadlock freedom comes from order: every caller takes its
 * keys sorted by their full Redis keys, so two callers that want the same
 * two keys both ask for the smaller one first, and one of them waits there
 * holding nothing the other needs.  All or none: a key that cannot be had
 * within the wait gives back those already taken.
 */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/thread.h"
#include "core/guard.h"

#define MULTI_MAX 64

static int key_cmp(const struct lw_gimpl *a, const struct lw_gimpl *b)
{
    size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
    int c = memcmp(a->key, b->key, n);

    if (c != 0)
        return c;
    return (a->keylen > b->keylen) - (a->keylen < b->keylen);
}

static int guard_cmp(const void *x, const void *y)
{
    return key_cmp(lw__gimpl(*(lw_guard *const *)x),
                   lw__gimpl(*(lw_guard *const *)y));
}

int lw_guard_enter_all(lw_guard **g, int n)
{
    int64_t deadline_us;
    uint32_t wait_ms = UINT32_MAX;
    int i, rc = LW_OK;

    if (g == NULL || n < 1 || n > MULTI_MAX)
        return lw__thread()->last_error = LW_EINVAL;
    for (i = 0; i < n; i++)
        if (g[i] == NULL || lw__gimpl(g[i])->state != LW_G_INIT ||
            lw__gimpl(g[i])->opts.once_window_ms > 0) /* run once: alone */
            rc = LW_EINVAL;
        else if (lw__gimpl(g[i])->opts.wait_ms < wait_ms)
            wait_ms = lw__gimpl(g[i])->opts.wait_ms;
    if (rc != LW_OK) {
        for (i = 0; i < n; i++)
            if (g[i] != NULL)
                lw_guard_discard(g[i]);
        return lw__thread()->last_error = rc;
    }
    /* Insertion order is the caller's; sort for the global order.  Keys
     * are only compared here, after every guard has its whole key. */
    qsort(g, (size_t)n, sizeof *g, guard_cmp);
    deadline_us = lw__now_us() + (int64_t)wait_ms * 1000;
    for (i = 0; i < n; i++) {
        /* What is left of the one wait; 0 once it is spent (one try). */
        int64_t left_ms = (deadline_us - lw__now_us()) / 1000;
        lw__gimpl(g[i])->opts.wait_ms = left_ms > 0 ? (uint32_t)left_ms : 0;
        rc = lw_guard_enter(g[i]);
        if (rc != LW_OK)
            break;
    }
    if (rc == LW_OK)
        return LW_OK;
    /* g[i] finished itself: give back g[0..i) in reverse, drop the rest. */
    for (int k = i - 1; k >= 0; k--)
        lw_guard_leave(g[k]);
    for (int k = i + 1; k < n; k++)
        lw_guard_discard(g[k]);
    return lw__thread()->last_error = rc;
}

int lw_guard_leave_all(lw_guard **g, int n)
{
    int rc = LW_OK;

    if (g == NULL || n < 1 || n > MULTI_MAX)
        return lw__thread()->last_error = LW_EINVAL;
    for (int i = n - 1; i >= 0; i--) {
        int r = lw_guard_leave(g[i]);
        if (rc == LW_OK)
            rc = r;
    }
    return lw__thread()->last_error = rc;
}

/* The lease: what a held lock is, independent of how it was taken. */
#include "core/lease.h"

#include <stdio.h>

void lw__lease_init(struct lw_lease *l, const struct lw_backend *be,
                    const struct lw_settings *cfg, const char *key,
                    size_t keylen, size_t prefix_len, const lw_lock_opts *opts)
{
    l->cfg = cfg;
    l->be = be;
    l->key = key;
    l->keylen = keylen;
    l->prefix_len = prefix_len;
    l->toklen = 0;
    l->expire_ms = opts->expire_ms;
    l->expire_len =
        snprintf(l->expire_str, sizeof l->expire_str, "%u", opts->expire_ms);
    l->drift_ms = 0;
    l->renews_left = opts->max_renew;
    l->valid_until_ms = 0;
    l->heap_idx = -1;
    l->fifo = -1;
    l->inflight = 0;
    l->lost = 0;
    l->ended = 0;
}

void lw__lease_mark_lost(struct lw_lease *l)
{
    __atomic_store_n(&l->lost, 1, __ATOMIC_RELEASE);
}

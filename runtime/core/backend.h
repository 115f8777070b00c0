#ifndef LW_BACKEND_H
#define LW_BACKEND_H

#include <lockweave.h>
#include <stdint.h>

#include "core/hold.h"

/*
 * How locks are taken, kept and given back on one kind of deployment: the
 * queue protocol on one server or a Redis Cluster (acquire.c, release.c,
 * renew.c), or Redlock over independent masters (redlock.c).  The guard
 * and the watchdog see only this.
 */
struct lw_backend {
    /* Take l (from lw__hold_init()), waiting up to opts->wait_ms.  LW_OK
     * with l->token, l->valid_until_ms and *fence set, or why not. */
    int (*acquire)(struct lw_hold *l, const lw_lock_opts *opts,
                   uint64_t *fence);
    /* Give l back (its watchdog renewals already stopped): LW_OK, or
     * LW_ELOST when it was not ours any more. */
    int (*release)(struct lw_hold *l);
    /* Renew v[0..n) (watchdog thread): results[i] LW_OK renewed, LW_ELOST
     * not ours any more, another code when no usable answer came. */
    void (*renew)(struct lw_hold *const *v, int n, int *results);
    /* While l is held: n more fences for the key, *first the lowest, all
     * above the holder's and below the next holder's (sections handed on
     * inside the process, cohort.c), minted only if the key is still ours
     * in Redis: LW_ELOST when it is not.  NULL: no fences (lw_fence() is
     * 0). */
    int (*fences)(struct lw_hold *l, uint32_t n, uint64_t *first);
    /* Is l, a mutex's lease, still ours in Redis right now?  LW_OK, LW_ELOST
     * (gone, or another owner's), or another code when no usable answer
     * came.  What a section handed on inside the process ends with. */
    int (*check)(struct lw_hold *l);
    /* check, and while nobody waits for the key in Redis, n more fences as
     * fences gives them (a run an event loop hands on, loop/turn.c):
     * LW_OK with *first, LW_R_BUSY (ours, but someone waits), or as check.
     * NULL: check alone. */
    int (*more)(struct lw_hold *l, uint32_t n, uint64_t *first);
    /* Callers wait in a queue in Redis, which a release hands the key on
     * from: a caller may ask while a release is on its way.  0 (Redlock):
     * it would only find the key still held there. */
    int queues;
};

/* The backend for cfg's topology. */
const struct lw_backend *lw__backend_for(const struct lw_settings *cfg);

#endif

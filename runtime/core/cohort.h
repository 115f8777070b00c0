#ifndef LW_COHORT_H
#define LW_COHORT_H

#include <lockweave.h>
#include <stdint.h>

#include "core/hold.h"

/*
 * In-process cohorts: the threads of one process that want the same lock
 * share one place in the Redis queue, and the lock goes from one to the next
 * without a round trip, a bounded number of times (cohort.c).
 */

/* Take l as l->be->acquire() does (l from lw__hold_init()): from Redis, or
 * from another thread of this process that holds it.  LW_OK with the lease
 * and *fence set; LW_ETIMEOUT, LW_ESHUTDOWN or the backend's error. */
int lw__cohort_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                       uint64_t *fence);

/* Give l back as l->be->release() does (its renewals stopped): to the next
 * thread of this process waiting for it (LW_OK), or through Redis. */
int lw__cohort_release(struct lw_hold *l);

/* 1 when no thread of this process holds or waits for key (the full Redis
 * key) under cfg through a cohort, right now: a take that goes straight to
 * Redis (an event loop's pipelined try, take.c) would then not race one of
 * ours for it.  0 when one does. */
struct lw_settings;
int lw__cohort_idle(const struct lw_settings *cfg, const char *key,
                    size_t keylen);

#endif

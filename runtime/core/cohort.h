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

#endif

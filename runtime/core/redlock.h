#ifndef LW_REDLOCK_H
#define LW_REDLOCK_H

#include <lockweave.h>
#include <stdint.h>

#include "core/hold.h"

/*
 * The Redlock backend, over the independent masters of LOCKWEAVE_REDIS_URL
 * (a comma-separated list): a lock is held when a quorum (N/2 + 1) of the
 * masters granted it within its validity (see backend.h for the contract).
 * The fence is always 0: a fence has no safe meaning across independent
 * masters.
 */
int lw__redlock_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                        uint64_t *fence);
int lw__redlock_release(struct lw_hold *l);
void lw__redlock_renew(struct lw_hold *const *v, int n, int *results);
int lw__redlock_check(struct lw_hold *l);

#endif

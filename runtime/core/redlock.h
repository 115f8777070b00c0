#ifndef LW_REDLOCK_H
#define LW_REDLOCK_H

#include "core/guard.h"
#include "core/lease.h"

/*
 * Redlock over the independent masters of LOCKWEAVE_REDIS_URL (a comma-
 * separated list): a lock is held when a quorum (N/2 + 1) of the masters
 * granted it within its validity.  Used by lw__acquire(), lw__release() and
 * the watchdog when the configuration's topology is LW_TOPO_REDLOCK.
 */

/* Same contract as lw__acquire(); g->fence is 0: a fence has no safe
 * meaning across independent masters. */
int lw__redlock_acquire(struct lw_gimpl *g);

/* Same contract as lw__release(): delete our token on every master. */
int lw__redlock_release(struct lw_gimpl *g);

/* Renew l on every master (watchdog thread): 1 renewed on a quorum, 0 lost,
 * -1 no usable answer (retry). */
int lw__redlock_renew(struct lw_lease *l);

#endif

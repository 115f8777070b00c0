#ifndef LW_WATCHDOG_H
#define LW_WATCHDOG_H

#include "core/lease.h"

/* Start keeping l alive (renew at expire/3, at most renews_left times), and
 * mark it lost when a renewal finds the key gone or the lease runs out.
 * Starts the watchdog thread on first use.  LW_OK or LW_ENOMEM. */
int lw__watchdog_add(struct lw_lease *l);

/* Mark l as known to no watchdog queue, so lw__watchdog_remove() (which
 * every release starts with) finds nothing to take out.  Before acquiring. */
static inline void lw__lease_detach(struct lw_lease *l)
{
    l->heap_idx = -1;
    l->fifo = -1;
    l->inflight = 0;
}

/* Stop renewing l; returns once no renewal of l is in flight, so a release
 * that follows can never race a PEXPIRE of the same key. */
void lw__watchdog_remove(struct lw_lease *l);

static inline int lw__lease_lost(const struct lw_lease *l)
{
    return __atomic_load_n(&l->lost, __ATOMIC_ACQUIRE);
}

void lw__lease_mark_lost(struct lw_lease *l);

/* Stop the thread and forget every lease (lw_shutdown, fork child). */
void lw__watchdog_stop(void);

#endif

#ifndef LW_WATCHDOG_H
#define LW_WATCHDOG_H

#include "core/hold.h"

/* The most leases renewed in one batch (one backend call). */
#define LW_WATCHDOG_BATCH_MAX 256

/* Start keeping l alive (renew at expire/3, at most renews_left times), and
 * mark it lost when a renewal finds the key gone or the lease runs out.
 * Starts the watchdog thread on first use.  LW_OK, LW_ENOMEM or
 * LW_ESYSTEM (no thread). */
int lw__watchdog_add(struct lw_hold *l);

/* Stop renewing l; returns once no renewal of l is in flight, so a release
 * that follows can never race a PEXPIRE of the same key.  A lease from
 * lw__hold_init() that was never added is fine. */
void lw__watchdog_remove(struct lw_hold *l);

/* lw__watchdog_remove() without the wait: 1 when l is out of the watchdog,
 * 0 (nothing done) while a renewal of l is in flight. */
int lw__watchdog_try_remove(struct lw_hold *l);

/* Stop the thread and forget every lease (lw_shutdown). */
void lw__watchdog_stop(void);

#endif

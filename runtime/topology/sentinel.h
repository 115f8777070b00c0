#ifndef LW_SENTINEL_H
#define LW_SENTINEL_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "base/config.h"
#include "net/conn.h"

/*
 * Redis Sentinel (redis[s]+sentinel://): requests go to the master the
 * sentinels name, on the calling thread's own connection to it.
 *
 * The master's address is asked of the sentinels (SENTINEL
 * get-master-addr-by-name, each in turn, the one that answered last
 * first), once for the process, and kept: a request costs no round trip
 * to a sentinel.  Every connection to the master says ROLE in its
 * handshake (net/handshake.c), so a server that is no longer master is
 * refused when connecting.  The sentinels are asked again when the master
 * cannot be reached, answers ROLE as a replica, or refuses a request with
 * READONLY (a demoted master), NOREPLICAS (min-replicas-to-write: it lost
 * its replicas, maybe to a partition that a failover follows),
 * MASTERDOWN or LOADING; the request is sent again to the master they
 * name then, with a short backoff, until deadline_us.
 */

/*
 * Same results as lw__conn_run() (with LW_REQ_RAW_ERRORS, an error reply
 * that is not one of those above comes back in out with LW_OK, not
 * logged), plus LW_ECONFIG when no sentinel knows the master's name (at
 * once, logged with the name), LW_EAUTH or LW_ETLS at once when the
 * sentinels refuse the credentials or fail verification, and LW_EREDIS
 * when no master could be had by deadline_us (lw__now_us() time; 0: one command
 * timeout from now). *replayed is set when the request may have run on a master
 * that then failed (it was sent again), and *sent_us to when the earliest
 * attempt that may have run was written, as lw__route_run() does.
 */
int lw__sentinel_run(const struct lw_settings *s, const struct lw_request *q,
                     redisReply **out, int *replayed, int64_t *sent_us,
                     int64_t deadline_us);

/* The master the sentinels name under s: the one known, else asked of them
 * now, trying until deadline_us.  LW_OK with *out valid until lw_shutdown()
 * (lockweave-ctl's one server), or why there is none (as above). */
int lw__sentinel_master(const struct lw_settings *s, int64_t deadline_us,
                        const struct lw_url **out);

/* Forget every master learnt and close the connections to the sentinels
 * (lw_shutdown). */
void lw__sentinel_shutdown(void);

#endif

#ifndef LW_ROUTE_H
#define LW_ROUTE_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "net/conn.h"

/*
 * Redis Cluster routing: send a request about one slot to the master that
 * serves it, on the calling thread's own connection to that node.
 *
 * The slot map is learnt with CLUSTER SLOTS from any known node (the seeds of
 * LOCKWEAVE_REDIS_URL first) and shared by the process.  A MOVED reply
 * re-sends the request to the node it names and refreshes the map
 * (rate-limited); ASK re-sends it once to the importing node after ASKING;
 * TRYAGAIN (keys of one script split by a migration), CLUSTERDOWN and LOADING
 * (a failover in progress) and a node that cannot be reached (killed master)
 * are retried with a short backoff and a fresh map until deadline_us, except
 * that a request flagged LW_REQ_SPLIT_OK returns LW_R_SPLIT at TRYAGAIN.
 *
 * Same results as lw__conn_run() (with LW_REQ_RAW_ERRORS, an error reply
 * that is neither a redirection nor worth retrying comes back in out with
 * LW_OK, not logged: the caller reads it), plus
 * LW_R_ASKED (base/result.h) for a pipeline met by ASK: its commands are
 * separate, and ASKING each on the importing node could create there a key (the
 * fence counter) that still lives on the migrating one, so the caller re-sends
 * the work as one script instead, which Redis redirects as a whole.
 * *replayed is set when a request may have run on a node that then became
 * unreachable, and *sent_us to when the earliest attempt that may have run
 * was written (the one answered, or one lost with its connection): its
 * effects, a lease's start among them, are no older.
 */
int lw__route_run(const struct lw_settings *s, int slot,
                  const struct lw_request *q, redisReply **out, int *replayed,
                  int64_t *sent_us, int64_t deadline_us);

/* Learn the map again now (rate-limited: at most every 100 ms).  LW_OK when
 * the current map is newer than when called. */
int lw__route_refresh(const struct lw_settings *s);

/* Close this thread's node connections (lw_shutdown). */
void lw__route_thread_drop(void);

/* Free every slot map (lw_shutdown). */
void lw__route_shutdown(void);

#endif

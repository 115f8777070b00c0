#ifndef LW_SEND_H
#define LW_SEND_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "net/conn.h"

/*
 * The one way the lock protocol reaches Redis: a request about one key goes
 * to that key's server, whatever the topology behind it.  With one server
 * that is a connection; in a Redis Cluster, the router and the key's slot;
 * behind Sentinel, the master the sentinels name (topology/sentinel.h).
 * (Redlock asks several independent servers and has its own backend.)
 */
struct lw_settings;

struct lw_target {
    const struct lw_settings *cfg;
    struct lw_conn *conn; /* one server: the connection to send on (NULL
                             in a Cluster and behind Sentinel) */
    int slot;             /* Redis Cluster: the key's slot */
    int64_t sent_us;      /* set by lw__send(): when the request whose
                             replies came back (or an earlier one that may
                             have run) was written; what it did on the
                             server is no older (lease arithmetic) */
};

/* The target for key under cfg: its slot in a cluster, nothing yet behind
 * Sentinel, else this thread's connection, opened if needed.  LW_OK or
 * lw__conn_thread()'s error. */
int lw__target_for(struct lw_target *t, const struct lw_settings *cfg,
                   const char *key, size_t keylen);

/* Send q to t and read its replies into out (the caller frees them), as
 * lw__conn_run() does.  In a cluster, redirections, failovers and an
 * unreachable node are followed until deadline_us (lw__now_us() time; 0:
 * one command timeout from now), and a pipeline met by ASK is LW_R_ASKED
 * (see topology/route.h); behind Sentinel, a failover is followed the same
 * way (topology/sentinel.h); one server ignores deadline_us, its
 * connection's timeouts bound the call. */
int lw__send(struct lw_target *t, const struct lw_request *q,
             int64_t deadline_us, redisReply **out, int *replayed);

/* Send q[0..n) to t, a single server's connection, as one pipeline
 * (lw__conn_run_many(): each answered by one reply, rcs[i] and out[i] as
 * lw__send() would give for q[i] alone); t->sent_us when it was first
 * written.  In a cluster or behind Sentinel: LW_EINVAL (every rcs[i] too),
 * nothing sent: their requests go key by key through the router. */
int lw__send_many(struct lw_target *t, const struct lw_request *const *q, int n,
                  redisReply **out, int *rcs, int *replayed);

/* Run script (KEYS argv[0..nkeys), then nargs ARGV) on the node of
 * argv[0]'s key under cfg, as lw__send() does: LW_OK with *r its integer
 * reply (the caller frees it), LW_R_SPLIT (flags LW_REQ_SPLIT_OK: its keys
 * are split by a slot migration), or an error (no usable answer), *r NULL.
 * *replayed is set when it may have run twice, and left as it was else. */
int lw__send_script(const struct lw_settings *cfg, struct lw_script *script,
                    int nkeys, int nargs, const char *const *argv,
                    const size_t *lens, int flags, int64_t deadline_us,
                    redisReply **r, int *replayed);

#endif

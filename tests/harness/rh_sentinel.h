/*
 * Redis Sentinel for one test process: a master and two replicas, watched
 * by three sentinels (quorum 2), each an rh_server on a free loopback port,
 * stopped by its PID.  The sentinels run with a short
 * down-after-milliseconds and failover-timeout, and SENTINEL DEBUG periods
 * of a tenth of a second or so, so a killed master's replica is promoted
 * within a few seconds and a master that comes back is made a replica in
 * about two.
 *
 * Start it from the main thread (see redis_harness.h).
 */
#ifndef LW_RH_SENTINEL_H
#define LW_RH_SENTINEL_H

#include "redis_harness.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RH_SENTINEL_NODES   3 /* the first master, then its replicas */
#define RH_SENTINELS        3
#define RH_SENTINEL_NAME    "lwmaster" /* the master's name */
#define RH_SENTINEL_DOWN_MS 500        /* down-after-milliseconds */

typedef struct rh_sentinel_opts {
    /* The data nodes' requirepass (their masterauth too, and the
     * sentinels' auth-pass): NULL for none. */
    const char *password;
    /* The sentinels' own requirepass (and sentinel-pass, which they use
     * with each other): NULL for none. */
    const char *sentinel_password;
    /* Non-NULL: every server TLS only (rh_opts.tls, with tls->node, which
     * names localhost and 127.0.0.1), replication and the sentinels' own
     * links included; url is then rediss+sentinel://localhost:... */
    const rh_tls *tls;
    /* With tls: the data nodes' certificate and key (NULL: tls->node). */
    const char *node_cert, *node_key;
} rh_sentinel_opts;

typedef struct rh_sentinel {
    rh_sentinel_opts opts;
    rh_server node[RH_SENTINEL_NODES];
    rh_server sentinel[RH_SENTINELS];
    const char *node_args[RH_SENTINEL_NODES][16];
    const char *sentinel_args[8];
    char first_master[16]; /* node[0]'s port, as replicaof takes it */
    char conf[RH_SENTINELS][1024];
    /* redis[s]+sentinel://host:port,.../RH_SENTINEL_NAME, no credentials */
    char url[256];
} rh_sentinel;

/* Start the data nodes (node[0] the master), wait until both replicas are
 * in sync, start the sentinels and wait until each knows the master, both
 * replicas and the other two sentinels.  opts NULL: none.  Returns 0, or
 * -1 after printing why (all servers stopped). */
int rh_sentinel_start(rh_sentinel *s, const rh_sentinel_opts *opts);

/* Stop every server still running (by PID) and remove their directories. */
void rh_sentinel_stop(rh_sentinel *s);

/* The data node that live sentinel k names master now (k < 0: the first
 * live one that answers), or NULL. */
rh_server *rh_sentinel_master_by(rh_sentinel *s, int k);

/* Wait until every live sentinel names one master, not `old`, that says
 * ROLE master.  Returns it, or NULL after timeout_ms (printed). */
rh_server *rh_sentinel_wait_failover(rh_sentinel *s, const rh_server *old,
                                     int timeout_ms);

/* Wait until n says ROLE slave with its link to a master up.  0, or -1
 * after timeout_ms (printed). */
int rh_sentinel_wait_replica(rh_server *n, int timeout_ms);

/* 1 when n says ROLE slave with its link to a master up and its sync done,
 * else 0 (unreachable too). */
int rh_sentinel_synced_replica(rh_server *n);

/* A switchover: SENTINEL FAILOVER through live sentinel k until old, the
 * master, is demoted (a synced replica: from then on it refuses writes).
 * Asked again on -INPROG (a failover still winding down) or -NOGOODSLAVE
 * (the sentinel's view of a replica not fresh yet), and when a failover it
 * accepted has not demoted old after a while with sentinel k still naming
 * old: aborted (a promotion that outlasts failover-timeout on a loaded
 * machine), with nobody to ask for another.  0, or -1 after timeout_ms
 * (printed, with the sentinel's last refusal). */
int rh_sentinel_switchover(rh_sentinel *s, int k, rh_server *old,
                           int timeout_ms);

/* Wait until every replica of master m has every write m took before
 * the call (WAIT for RH_SENTINEL_NODES - 1 replicas, after a write of
 * this call's own: WAIT counts the replicas that have the calling
 * connection's writes, and the replication stream is ordered).  What a
 * test runs before failing m over when a key must be on the promoted
 * replica: replication is asynchronous, and on a loaded machine a write
 * can take a while to reach a replica.  0, or -1 after timeout_ms
 * (printed, with how many replicas had it). */
int rh_sentinel_wait_replicated(rh_server *m, int timeout_ms);

/* 1 when n says ROLE master, else 0 (unreachable too). */
int rh_sentinel_is_master(rh_server *n);

#ifdef __cplusplus
}
#endif

#endif

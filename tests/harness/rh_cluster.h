/*
 * A real Redis Cluster for one test process: masters x (1 + replicas)
 * redis-servers on free loopback ports (each an rh_server, stopped by its
 * PID), joined with `redis-cli --cluster create`.  Nodes run with a short
 * cluster-node-timeout so a killed master's replica takes over within a few
 * seconds, and with cluster-require-full-coverage off, so slots whose master
 * is alive keep serving while another master fails over.
 *
 * Start it from the main thread (see redis_harness.h).  With LW_TEST_TLS=1
 * (see redis_harness.h) every node serves TLS only, the cluster bus and
 * replication included, and url is rediss+cluster://.
 */
#ifndef LW_RH_CLUSTER_H
#define LW_RH_CLUSTER_H

#include "redis_harness.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RH_CLUSTER_MAX     12
#define RH_CLUSTER_NODE_MS 1000 /* cluster-node-timeout */

typedef struct rh_cluster {
    int n;       /* servers */
    int masters; /* as created; roles change with failovers */
    rh_server node[RH_CLUSTER_MAX];
    const char *args[RH_CLUSTER_MAX][24]; /* each node's extra_args */
    char id[RH_CLUSTER_MAX][48];          /* each node's CLUSTER MYID */
    char bus_port[RH_CLUSTER_MAX][12];    /* its cluster bus port */
    char url[RH_CLUSTER_MAX * 24 + 32];   /* redis+cluster://h:p,h:p,... */
} rh_cluster;

/* Start masters * (1 + replicas_per_master) servers, create the cluster and
 * wait until every node reports cluster_state:ok with all 16384 slots
 * assigned and every replica has finished its first sync.  Returns 0, or -1
 * after printing why (all servers stopped). */
int rh_cluster_start(rh_cluster *c, int masters, int replicas_per_master);

/* Stop every server still running (by PID) and remove their directories. */
void rh_cluster_stop(rh_cluster *c);

/* The node whose master serves slot now, by CLUSTER SLOTS asked of a live
 * node; NULL if none is known. */
rh_server *rh_cluster_master_of(rh_cluster *c, int slot);

/* Wait until every live node says cluster_state:ok and they agree on who
 * serves every slot, none of it on a dead node.  0, or -1 after timeout_ms
 * (printed). */
int rh_cluster_wait_ok(rh_cluster *c, int timeout_ms);

/* SIGKILL the master serving slot, then wait (up to timeout_ms) until a
 * replica serves its slots and the cluster is ok again.  Returns the killed
 * node, or NULL (printed). */
rh_server *rh_cluster_kill_master_of(rh_cluster *c, int slot, int timeout_ms);

/* CLUSTER KEYSLOT key, asked of a live node; -1 on error. */
int rh_cluster_keyslot(rh_cluster *c, const char *key, size_t len);

/* A command on the master of the key's slot (binary-safe argv form; the
 * slot is given by the caller).  Reply or NULL (printed). */
redisReply *rh_cluster_cmd_argv(rh_cluster *c, int slot, int argc,
                                const char **argv, const size_t *lens);

/* Path of redis-cli (next to redis-server, or on $PATH), or NULL. */
const char *rh_cli_path(void);

/* A slot moved by hand, as an operator's resharding does: begin (dst
 * IMPORTING from src, src MIGRATING to dst; keys stay where they are),
 * move keys one MIGRATE at a time (n keys, lens their lengths), end (the
 * slot given to dst: dst first, it bumps its epoch, then every master;
 * replicas learn it by gossip).  Each returns 0, or -1 after printing the
 * reply that refused it. */
int rh_cluster_migrate_begin(rh_cluster *c, rh_server *src, rh_server *dst,
                             int slot);
int rh_cluster_migrate_keys(rh_server *src, rh_server *dst, int n,
                            const char *const *keys, const size_t *lens);
int rh_cluster_migrate_end(rh_cluster *c, rh_server *dst, int slot);

/* 1 if s is a master now (ROLE), 0 if not or unreachable. */
int rh_cluster_is_master(rh_server *s);

#ifdef __cplusplus
}
#endif

#endif

/* A Redis Cluster of rh_servers, created with redis-cli --cluster create. */
#include "rh_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rh_internal.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

static const char *const cluster_args[] = {
    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
    "--cluster-node-timeout", STR(RH_CLUSTER_NODE_MS),
    "--cluster-require-full-coverage", "no",
    /* Replicas of a killed master must be allowed to take over however long
     * they were idle. */
    "--cluster-replica-validity-factor", "0", NULL};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *rh_cli_path(void)
{
    static char path[4096];
    const char *srv = rh_server_path();
    const char *slash = srv ? strrchr(srv, '/') : NULL;

    if (slash != NULL) {
        snprintf(path, sizeof path, "%.*s/redis-cli", (int)(slash - srv), srv);
        if (access(path, X_OK) == 0)
            return path;
    }
    if (access("/usr/bin/redis-cli", X_OK) == 0)
        return "/usr/bin/redis-cli";
    return NULL;
}

/* Run redis-cli --cluster create over every node; its output goes to the
 * first node's log.  0 or -1. */
static int create(rh_cluster *c, int replicas)
{
    const char *cli = rh_cli_path();
    const rh_tls *tls = rh__tls_from_env();
    const char *argv[RH_CLUSTER_MAX + 16];
    char addr[RH_CLUSTER_MAX][32], reps[16];
    int n = 0, status;
    pid_t pid;

    if (cli == NULL) {
        fprintf(stderr, "redis harness: redis-cli not found (apt-get install "
                        "redis-tools)\n");
        return -1;
    }
    snprintf(reps, sizeof reps, "%d", replicas);
    argv[n++] = cli;
    if (tls != NULL) {
        argv[n++] = "--tls";
        argv[n++] = "--cacert";
        argv[n++] = tls->ca;
        argv[n++] = "--cert";
        argv[n++] = tls->client;
        argv[n++] = "--key";
        argv[n++] = tls->client_key;
    }
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < c->n; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", c->node[i].port);
        argv[n++] = addr[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = reps;
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int log = open(c->node[0].log_path, O_WRONLY | O_APPEND);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr,
                "redis harness: redis-cli --cluster create failed "
                "(status 0x%x); see %s\n",
                status, c->node[0].log_path);
        return -1;
    }
    return 0;
}

/* "field:value" of CLUSTER INFO as a number, or -1. */
static long info_field(rh_server *s, const char *field)
{
    redisReply *r = rh_cmd(s, "CLUSTER INFO");
    long v = -1;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING &&
        (p = strstr(r->str, field)) != NULL) {
        p += strlen(field);
        if (*p == ':')
            v = strncmp(p + 1, "ok", 2) == 0 ? 1 : strtol(p + 1, NULL, 10);
    }
    freeReplyObject(r);
    return v;
}

/* Which of c's nodes serves each slot according to s, in owner[] (-1: a
 * node not ours).  Nodes are told apart by ID, not by the port in the
 * reply: a TLS-only node tells a client on its unix socket port 0 (its
 * plaintext port).  0 or -1. */
static int slots_of(rh_cluster *c, rh_server *s, int *owner)
{
    redisReply *r = rh_cmd(s, "CLUSTER SLOTS");
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY;

    for (int i = 0; i < 16384; i++)
        owner[i] = -1;
    for (size_t i = 0; ok && i < r->elements; i++) {
        redisReply *e = r->element[i], *m;
        int who = -1;
        if (e->elements < 3 || e->element[2]->elements < 3)
            continue;
        m = e->element[2]->element[2];
        for (int j = 0; j < c->n; j++)
            if (m->type == REDIS_REPLY_STRING && strcmp(m->str, c->id[j]) == 0)
                who = j;
        for (long long k = e->element[0]->integer;
             k <= e->element[1]->integer && k < 16384; k++)
            owner[k] = who;
    }
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static rh_server *by_index(rh_cluster *c, int i)
{
    return i >= 0 && i < c->n ? &c->node[i] : NULL;
}

static rh_server *any_live(rh_cluster *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->node[i].pid > 0)
            return &c->node[i];
    return NULL;
}

/* 1 when every live node is ok and all agree on a live owner per slot; -1
 * when a slot is served by a node that is not ours. */
static int settled(rh_cluster *c, char *why, size_t n)
{
    static int first[16384], other[16384];
    rh_server *ref = NULL;

    for (int i = 0; i < c->n; i++) {
        rh_server *s = &c->node[i];
        if (s->pid <= 0)
            continue;
        if (info_field(s, "cluster_state") != 1) {
            snprintf(why, n, "node %d not ok", s->port);
            return 0;
        }
        if (slots_of(c, s, ref ? other : first) != 0) {
            snprintf(why, n, "node %d: no CLUSTER SLOTS", s->port);
            return 0;
        }
        if (ref == NULL) {
            ref = s;
            for (int k = 0; k < 16384; k++) {
                rh_server *o = by_index(c, first[k]);
                if (o == NULL) {
                    /* Another test's node: a port race mixed clusters. */
                    snprintf(why, n, "slot %d served by a foreign node", k);
                    return -1;
                }
                if (o->pid <= 0) {
                    snprintf(why, n, "slot %d served by %d (dead)", k, o->port);
                    return 0;
                }
            }
        } else if (memcmp(first, other, sizeof first) != 0) {
            snprintf(why, n, "nodes %d and %d disagree", ref->port, s->port);
            return 0;
        }
    }
    return ref != NULL;
}

int rh_cluster_wait_ok(rh_cluster *c, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;
    char why[128] = "";
    int ok;

    while ((ok = settled(c, why, sizeof why)) != 1) {
        if (ok < 0 || mono_ms() >= deadline) {
            fprintf(stderr, "redis harness: cluster not ok after %d ms: %s\n",
                    timeout_ms, why);
            return -1;
        }
        rh__sleep_ms(50);
    }
    return 0;
}

/* 1 when s is a master, or a replica done with its initial sync: a replica
 * promoted before that would serve its slots empty. */
static int in_sync(rh_server *s)
{
    redisReply *r = rh_cmd(s, "INFO replication");
    int ok = r != NULL && r->type == REDIS_REPLY_STRING &&
             (strstr(r->str, "role:master") != NULL ||
              (strstr(r->str, "master_link_status:up") != NULL &&
               strstr(r->str, "master_sync_in_progress:0") != NULL));

    freeReplyObject(r);
    return ok;
}

static int wait_replicas_synced(rh_cluster *c, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;

    for (int i = 0; i < c->n; i++)
        while (c->node[i].pid > 0 && !in_sync(&c->node[i])) {
            if (mono_ms() >= deadline) {
                fprintf(stderr, "redis harness: replica %d not in sync\n",
                        c->node[i].port);
                return -1;
            }
            rh__sleep_ms(20);
        }
    return 0;
}

/* CLUSTER MYID of node i, kept in c->id[i]; 0 or -1. */
static int node_id(rh_cluster *c, int i)
{
    redisReply *r = rh_cmd(&c->node[i], "CLUSTER MYID");
    int ok =
        r != NULL && r->type == REDIS_REPLY_STRING && r->len < sizeof c->id[i];

    if (ok)
        snprintf(c->id[i], sizeof c->id[i], "%s", r->str);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* One try at starting the cluster; 0 or -1 (servers stopped). */
static int start_once(rh_cluster *c)
{
    const rh_tls *tls = rh__tls_from_env();
    rh_opts o;
    int len;

    for (int i = 0; i < c->n; i++) {
        /* The bus port is not left to its default (port + 10000), which
         * does not exist for ephemeral ports above 55535. */
        int k = 0, bus = rh_free_port();
        if (bus < 0)
            goto fail;
        snprintf(c->bus_port[i], sizeof c->bus_port[i], "%d", bus);
        for (const char *const *a = cluster_args; *a; a++)
            c->args[i][k++] = *a;
        c->args[i][k++] = "--cluster-port";
        c->args[i][k++] = c->bus_port[i];
        if (tls != NULL) { /* the bus and replication over TLS too */
            c->args[i][k++] = "--tls-cluster";
            c->args[i][k++] = "yes";
            c->args[i][k++] = "--tls-replication";
            c->args[i][k++] = "yes";
        }
        c->args[i][k] = NULL;
        rh_opts_init(&o);
        o.extra_args = c->args[i];
        if (rh_start(&c->node[i], &o) != 0 || node_id(c, i) != 0)
            goto fail;
    }
    if (create(c, c->n / c->masters - 1) != 0 || rh_cluster_wait_ok(c, 30000) ||
        wait_replicas_synced(c, 30000))
        goto fail;
    len = snprintf(c->url, sizeof c->url, "%s",
                   tls ? "rediss+cluster://" : "redis+cluster://");
    for (int i = 0; i < c->n; i++)
        len += snprintf(c->url + len, sizeof c->url - (size_t)len,
                        "%s127.0.0.1:%d", i ? "," : "", c->node[i].port);
    return 0;
fail:
    rh_cluster_stop(c);
    return -1;
}

int rh_cluster_start(rh_cluster *c, int masters, int replicas_per_master)
{
    memset(c, 0, sizeof *c);
    c->masters = masters;
    c->n = masters * (1 + replicas_per_master);
    if (masters < 3 || c->n > RH_CLUSTER_MAX) {
        fprintf(stderr, "redis harness: a cluster needs 3..%d nodes\n",
                RH_CLUSTER_MAX);
        return -1;
    }
    /* A port probed free may be taken by a parallel test before our server
     * binds it (the bus port is not retried by rh_start): start afresh. */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (start_once(c) == 0)
            return 0;
        fprintf(stderr, "redis harness: cluster start failed, %s\n",
                attempt < 2 ? "retrying" : "giving up");
        for (int i = 0; i < c->n; i++)
            memset(&c->node[i], 0, sizeof c->node[i]);
    }
    return -1;
}

void rh_cluster_stop(rh_cluster *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->node[i].dir[0] != '\0')
            rh_stop(&c->node[i]);
}

rh_server *rh_cluster_master_of(rh_cluster *c, int slot)
{
    static int owner[16384];
    rh_server *s = any_live(c);

    if (s == NULL || slot < 0 || slot >= 16384 || slots_of(c, s, owner) != 0)
        return NULL;
    return by_index(c, owner[slot]);
}

rh_server *rh_cluster_kill_master_of(rh_cluster *c, int slot, int timeout_ms)
{
    rh_server *m = rh_cluster_master_of(c, slot);

    if (m == NULL || rh_kill(m) != 0) {
        fprintf(stderr, "redis harness: no master of slot %d to kill\n", slot);
        return NULL;
    }
    return rh_cluster_wait_ok(c, timeout_ms) == 0 ? m : NULL;
}

int rh_cluster_keyslot(rh_cluster *c, const char *key, size_t len)
{
    const char *argv[] = {"CLUSTER", "KEYSLOT", key};
    size_t lens[] = {7, 7, len};
    rh_server *s = any_live(c);
    redisReply *r = s ? rh_cmd_argv(s, 3, argv, lens) : NULL;
    int slot = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;

    freeReplyObject(r);
    return slot;
}

redisReply *rh_cluster_cmd_argv(rh_cluster *c, int slot, int argc,
                                const char **argv, const size_t *lens)
{
    rh_server *m = rh_cluster_master_of(c, slot);

    if (m == NULL) {
        fprintf(stderr, "redis harness: slot %d has no live master\n", slot);
        return NULL;
    }
    return rh_cmd_argv(m, argc, argv, lens);
}

static const char *id_of(rh_cluster *c, rh_server *s)
{
    return c->id[s - c->node];
}

int rh_cluster_is_master(rh_server *s)
{
    redisReply *r = rh_cmd(s, "ROLE");
    int m = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            strcmp(r->element[0]->str, "master") == 0;

    if (r != NULL)
        freeReplyObject(r);
    return m;
}

int rh_cluster_migrate_begin(rh_cluster *c, rh_server *src, rh_server *dst,
                             int slot)
{
    if (rh_ok(
            rh_cmd(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, id_of(c, src)),
            "IMPORTING") != 0)
        return -1;
    return rh_ok(
        rh_cmd(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, id_of(c, dst)),
        "MIGRATING");
}

int rh_cluster_migrate_keys(rh_server *src, rh_server *dst, int n,
                            const char *const *keys, const size_t *lens)
{
    enum { HEAD = 7 };
    const char *argv[HEAD + 64];
    size_t argl[HEAD + 64];
    char port[16];
    const char *head[HEAD] = {"MIGRATE", "127.0.0.1", port,  "",
                              "0",       "5000",      "KEYS"};

    if (n < 1 || n > 64)
        return -1;
    snprintf(port, sizeof port, "%d", dst->port);
    for (int i = 0; i < HEAD; i++) {
        argv[i] = head[i];
        argl[i] = strlen(head[i]);
    }
    for (int i = 0; i < n; i++) {
        argv[HEAD + i] = keys[i];
        argl[HEAD + i] = lens[i];
    }
    return rh_ok(rh_cmd_argv(src, HEAD + n, argv, argl), "MIGRATE");
}

int rh_cluster_migrate_end(rh_cluster *c, rh_server *dst, int slot)
{
    if (rh_ok(rh_cmd(dst, "CLUSTER SETSLOT %d NODE %s", slot, id_of(c, dst)),
              "SETSLOT NODE") != 0)
        return -1;
    for (int i = 0; i < c->n; i++)
        if (&c->node[i] != dst && rh_cluster_is_master(&c->node[i]) &&
            rh_ok(rh_cmd(&c->node[i], "CLUSTER SETSLOT %d NODE %s", slot,
                         id_of(c, dst)),
                  "SETSLOT NODE") != 0)
            return -1;
    return 0;
}

/* Redis Sentinel of rh_servers: a master, its replicas, three sentinels. */
#include "rh_sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rh_internal.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

/* Sentinel's timers, shortened (SENTINEL DEBUG, Redis 7): periods of
 * PING, INFO and hello messages, so that a failover takes a second or two
 * and a master that came back is made a replica in about two (four
 * publish periods: not less, or the sentinels not leading a switchover
 * turn its promoted replica back before the leader's hello tells them);
 * TILT (a sentinel pausing for 30 s when its timer ran late, as on a
 * loaded test machine) made all but impossible.  Not a shorter PING
 * period: a failover counts a replica only if its INFO is fresher than
 * five of them, and asks replicas for INFO once a second then, whatever
 * info-period says. */
#define TUNING                                                                 \
    "SENTINEL DEBUG info-period 100 ping-period 300 ask-period 100 "           \
    "publish-period 500 tilt-trigger 60000 tilt-period 100 "                   \
    "election-timeout 1000 slave-reconf-timeout 2000 "                         \
    "min-link-reconnect-period 100"

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int live(const rh_server *n)
{
    return n->pid > 0;
}

int rh_sentinel_is_master(rh_server *n)
{
    redisReply *r = live(n) ? rh_cmd(n, "ROLE") : NULL;
    int m = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "master") == 0;

    freeReplyObject(r);
    return m;
}

int rh_sentinel_synced_replica(rh_server *n)
{
    redisReply *r = live(n) ? rh_cmd(n, "INFO replication") : NULL;
    int ok = r != NULL && r->type == REDIS_REPLY_STRING &&
             strstr(r->str, "role:slave") != NULL &&
             strstr(r->str, "master_link_status:up") != NULL &&
             strstr(r->str, "master_sync_in_progress:0") != NULL;

    freeReplyObject(r);
    return ok;
}

int rh_sentinel_wait_replica(rh_server *n, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;

    while (!rh_sentinel_synced_replica(n)) {
        if (mono_ms() >= deadline) {
            fprintf(stderr,
                    "redis harness: :%d is not a synced replica after %d ms\n",
                    n->port, timeout_ms);
            return -1;
        }
        rh__sleep_ms(20);
    }
    return 0;
}

int rh_sentinel_wait_replicated(rh_server *m, int timeout_ms)
{
    /* A connection of our own: the write and the WAIT must share one. */
    redisContext *c = rh_connect(m);
    redisReply *r = NULL;
    long long acked = -1;

    if (c == NULL)
        return -1;
    r = redisCommand(c, "INCR rh:replicated");
    if (r != NULL && r->type == REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        r = redisCommand(c, "WAIT %d %d", RH_SENTINEL_NODES - 1, timeout_ms);
        if (r != NULL && r->type == REDIS_REPLY_INTEGER)
            acked = r->integer;
    }
    if (acked != RH_SENTINEL_NODES - 1)
        fprintf(stderr,
                "redis harness: :%d: %lld of %d replicas have its writes "
                "after %d ms (%s)\n",
                m->port, acked, RH_SENTINEL_NODES - 1, timeout_ms,
                r == NULL                      ? c->errstr
                : r->type == REDIS_REPLY_ERROR ? r->str
                                               : "WAIT answered");
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return acked == RH_SENTINEL_NODES - 1 ? 0 : -1;
}

/* Field name of SENTINEL MASTER's reply (a flat list of names and
 * values), as a number; -1 when absent. */
static long master_field(const redisReply *r, const char *name)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i]->str, name) == 0 &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            return strtol(r->element[i + 1]->str, NULL, 10);
    return -1;
}

/* 1 when sentinel k sees the master, every replica and the other
 * sentinels. */
static int sentinel_ready(rh_sentinel *s, int k)
{
    redisReply *r =
        rh_cmd(&s->sentinel[k], "SENTINEL MASTER %s", RH_SENTINEL_NAME);
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY &&
             master_field(r, "num-slaves") == RH_SENTINEL_NODES - 1 &&
             master_field(r, "num-other-sentinels") == RH_SENTINELS - 1;

    freeReplyObject(r);
    return ok;
}

rh_server *rh_sentinel_master_by(rh_sentinel *s, int k)
{
    for (int i = k < 0 ? 0 : k; i < (k < 0 ? RH_SENTINELS : k + 1); i++) {
        redisReply *r;
        int port = -1;
        if (!live(&s->sentinel[i]))
            continue;
        r = rh_cmd(&s->sentinel[i], "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                   RH_SENTINEL_NAME);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING)
            port = atoi(r->element[1]->str);
        freeReplyObject(r);
        for (int n = 0; n < RH_SENTINEL_NODES; n++)
            if (port > 0 && s->node[n].port == port)
                return &s->node[n];
    }
    return NULL;
}

/* How long an accepted failover may take to demote the old master before
 * it is asked for again (failover-timeout is 3 s). */
#define SWITCHOVER_RETRY_MS 8000

int rh_sentinel_switchover(rh_sentinel *s, int k, rh_server *old,
                           int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;
    char why[128] = "no refusal";

    for (;;) {
        long long until = deadline;
        if (rh_sentinel_master_by(s, k) == old) {
            redisReply *r = rh_cmd(&s->sentinel[k], "SENTINEL FAILOVER %s",
                                   RH_SENTINEL_NAME);
            int accepted = r != NULL && r->type == REDIS_REPLY_STATUS;
            if (r != NULL && r->type == REDIS_REPLY_ERROR)
                snprintf(why, sizeof why, "%s", r->str);
            freeReplyObject(r);
            until = mono_ms() + (accepted ? SWITCHOVER_RETRY_MS : 100);
        } /* else switched already: the demotion is on its way */
        while (mono_ms() < until && mono_ms() < deadline) {
            if (rh_sentinel_synced_replica(old))
                return 0;
            rh__sleep_ms(20);
        }
        if (mono_ms() >= deadline) {
            fprintf(stderr,
                    "redis harness: :%d not demoted by a switchover after "
                    "%d ms (last refusal: %s)\n",
                    old->port, timeout_ms, why);
            return -1;
        }
    }
}

rh_server *rh_sentinel_wait_failover(rh_sentinel *s, const rh_server *old,
                                     int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;

    for (;;) {
        rh_server *m = NULL;
        int agree = 1;
        for (int k = 0; k < RH_SENTINELS && agree; k++) {
            rh_server *said;
            if (!live(&s->sentinel[k]))
                continue;
            said = rh_sentinel_master_by(s, k);
            agree = said != NULL && said != old && (m == NULL || said == m);
            m = said;
        }
        if (agree && m != NULL && rh_sentinel_is_master(m))
            return m;
        if (mono_ms() >= deadline) {
            fprintf(stderr,
                    "redis harness: no failover from :%d within %d ms\n",
                    old ? old->port : 0, timeout_ms);
            for (int k = 0; k < RH_SENTINELS; k++)
                if (live(&s->sentinel[k]))
                    rh__print_log(&s->sentinel[k]);
            return NULL;
        }
        rh__sleep_ms(20);
    }
}

/* The data nodes: node 0 the master, the others its replicas.  0 or -1. */
static int start_nodes(rh_sentinel *s)
{
    rh_opts o;

    for (int i = 0; i < RH_SENTINEL_NODES; i++) {
        const char **a = s->node_args[i];
        int k = 0;
        /* Diskless, at once: a replica is in sync in milliseconds, not
         * after the default 5 s delay. */
        a[k++] = "--repl-diskless-sync";
        a[k++] = "yes";
        a[k++] = "--repl-diskless-sync-delay";
        a[k++] = "0";
        if (s->opts.password != NULL) {
            a[k++] = "--masterauth";
            a[k++] = s->opts.password;
        }
        if (s->opts.tls != NULL) {
            a[k++] = "--tls-replication";
            a[k++] = "yes";
        }
        if (i > 0) {
            a[k++] = "--replicaof";
            a[k++] = "127.0.0.1";
            a[k++] = s->first_master;
        }
        a[k] = NULL;
        rh_opts_init(&o);
        o.password = s->opts.password;
        o.extra_args = a;
        o.tls = s->opts.tls;
        if (o.tls != NULL) {
            o.tls_cert = s->opts.node_cert ? s->opts.node_cert : o.tls->node;
            o.tls_key = s->opts.node_key ? s->opts.node_key : o.tls->node_key;
        }
        if (rh_start(&s->node[i], &o) != 0)
            return -1;
        if (i == 0)
            snprintf(s->first_master, sizeof s->first_master, "%d",
                     s->node[0].port);
    }
    for (int i = 1; i < RH_SENTINEL_NODES; i++)
        if (rh_sentinel_wait_replica(&s->node[i], 20000) != 0)
            return -1;
    return 0;
}

static int start_sentinels(rh_sentinel *s)
{
    long long deadline;
    rh_opts o;
    int len, k = 0;

    if (s->opts.tls != NULL) { /* to the data nodes and each other */
        s->sentinel_args[k++] = "--tls-replication";
        s->sentinel_args[k++] = "yes";
    }
    s->sentinel_args[k] = NULL;
    for (int i = 0; i < RH_SENTINELS; i++) {
        char *c = s->conf[i];
        size_t cap = sizeof s->conf[i];
        len = snprintf(
            c, cap,
            "sentinel monitor " RH_SENTINEL_NAME " 127.0.0.1 %d 2\n"
            "sentinel down-after-milliseconds " RH_SENTINEL_NAME " " STR(
                RH_SENTINEL_DOWN_MS) "\n"
                                     "sentinel "
                                     "failover-timeout " RH_SENTINEL_NAME
                                     " 3000\n"
                                     "sentinel parallel-syncs " RH_SENTINEL_NAME
                                     " 2\n",
            s->node[0].port);
        if (s->opts.password != NULL)
            len += snprintf(c + len, cap - (size_t)len,
                            "sentinel auth-pass " RH_SENTINEL_NAME " %s\n",
                            s->opts.password);
        if (s->opts.sentinel_password != NULL)
            snprintf(c + len, cap - (size_t)len, "sentinel sentinel-pass %s\n",
                     s->opts.sentinel_password);
        rh_opts_init(&o);
        o.sentinel_conf = c;
        o.password = s->opts.sentinel_password;
        o.extra_args = s->sentinel_args;
        o.tls = s->opts.tls;
        if (o.tls != NULL) {
            o.tls_cert = o.tls->node;
            o.tls_key = o.tls->node_key;
        }
        if (rh_start(&s->sentinel[i], &o) != 0 ||
            rh_ok(rh_cmd(&s->sentinel[i], TUNING), "SENTINEL DEBUG") != 0)
            return -1;
    }
    deadline = mono_ms() + 20000;
    for (int i = 0; i < RH_SENTINELS; i++)
        while (!sentinel_ready(s, i)) {
            if (mono_ms() >= deadline) {
                fprintf(stderr,
                        "redis harness: sentinel :%d does not see the "
                        "master, its replicas and the other sentinels\n",
                        s->sentinel[i].port);
                return -1;
            }
            rh__sleep_ms(20);
        }
    len = snprintf(s->url, sizeof s->url, "%s",
                   s->opts.tls ? "rediss+sentinel://" : "redis+sentinel://");
    for (int i = 0; i < RH_SENTINELS; i++)
        len += snprintf(s->url + len, sizeof s->url - (size_t)len, "%s%s:%d",
                        i ? "," : "", s->opts.tls ? "localhost" : "127.0.0.1",
                        s->sentinel[i].port);
    snprintf(s->url + len, sizeof s->url - (size_t)len, "/" RH_SENTINEL_NAME);
    return 0;
}

int rh_sentinel_start(rh_sentinel *s, const rh_sentinel_opts *opts)
{
    memset(s, 0, sizeof *s);
    if (opts != NULL)
        s->opts = *opts;
    if (start_nodes(s) == 0 && start_sentinels(s) == 0)
        return 0;
    rh_sentinel_stop(s);
    return -1;
}

void rh_sentinel_stop(rh_sentinel *s)
{
    /* Sentinels first: none fails over a master being stopped. */
    for (int i = 0; i < RH_SENTINELS; i++)
        if (s->sentinel[i].dir[0] != '\0')
            rh_stop(&s->sentinel[i]);
    for (int i = 0; i < RH_SENTINEL_NODES; i++)
        if (s->node[i].dir[0] != '\0')
            rh_stop(&s->node[i]);
}

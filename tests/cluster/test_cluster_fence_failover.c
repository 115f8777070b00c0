/*
 * Fences across a Cluster failover to a replica that missed the last writes
 * (DESIGN.md, "Fences across failover"): sections on a key, the key's
 * master's replica cut off (its link killed on the master while the replica
 * is frozen, so it cannot reconnect and catch up), more sections on the
 * master, the master killed, the replica thawed and promoted; then every
 * fence lockweave gets for the key must be above the highest handed out by
 * the dead master.  The promoted replica's counter is first checked to be
 * below that highest fence: it really missed the last ones.
 *
 * Fences are minted as max(counter + 1, the server's TIME in microseconds):
 * the promise holds as long as the failover took longer than the servers'
 * clocks differ.  Here one machine, one clock, and at least FAILOVER_MS of
 * wall time between the kill and the next section (an election takes about
 * the node timeout, 1 s; a forced takeover far less).
 */
#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/keynames.h"
#include "rh_cluster.h"
#include "topology/slot.h"

#define KEY         "fenced"
#define LOCK_KEY    "lock:" KEY
#define BEFORE      20 /* sections the replica sees */
#define LOST        50 /* sections it misses */
#define AFTER       20 /* sections on the promoted replica */
#define FAILOVER_MS 20
/* How long the replica gets to win an election by itself before it is told
 * to take over: generous, a loaded machine is slow to gossip. */
#define AUTO_FAILOVER_MS 15000

static rh_cluster cl;
static struct lw_names names; /* the key's fence counter is names.fence */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void configure(void)
{
    lw_config cfg;

    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    cfg.connect_timeout_ms = 300;
    cfg.command_timeout_ms = 2000;
    CHECK_RC(lw_configure(&cfg), LW_OK);
}

/* The key's fence counter on s as stored (0 when there is none). */
static unsigned long long fence_counter(rh_server *s)
{
    const char *argv[] = {"GET", names.fence};
    size_t lens[] = {3, names.fencelen};
    unsigned long long v = 0;
    redisReply *r;

    /* A replica answers reads of its master's slots only after READONLY
     * (else MOVED); a master ignores it. */
    r = rh_cmd(s, "READONLY");
    CHECK_MSG(r != NULL && r->type == REDIS_REPLY_STATUS,
              "READONLY on :%d failed", s->port);
    freeReplyObject(r);
    r = rh_cmd_argv(s, 2, argv, lens);
    CHECK_MSG(r != NULL &&
                  (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL),
              "GET of the fence counter on :%d failed", s->port);
    if (r->type == REDIS_REPLY_STRING)
        v = strtoull(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

/* n sections on KEY, one after another: fences strictly increasing, each
 * above `above`.  Returns the highest. */
static unsigned long long sections(int n, unsigned long long above,
                                   const char *when)
{
    unsigned long long prev = above;

    for (int i = 0; i < n; i++) {
        lw_lock_opts o;
        lw_guard g;

        memset(&o, 0, sizeof o);
        o.expire_ms = 5000;
        o.wait_ms = 5000;
        o.max_renew = -1;
        CHECK_RC(lw_lock(&g, KEY, strlen(KEY), &o), LW_OK);
        unsigned long long f = lw_fence();
        CHECK_MSG(f > above,
                  "%s: section #%d got fence %llu, not above %llu, the "
                  "highest handed out before: a fence handed out again",
                  when, i, f, above);
        CHECK_MSG(f > prev, "%s: section #%d got fence %llu after %llu", when,
                  i, f, prev);
        prev = f;
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    return prev;
}

/* The node replicating m (ROLE: "slave", host, m's port, ...); NULL if
 * none. */
static rh_server *replica_of(rh_server *m)
{
    for (int i = 0; i < cl.n; i++) {
        rh_server *s = &cl.node[i];
        redisReply *r;
        int yes;

        if (s == m || s->pid <= 0)
            continue;
        r = rh_cmd(s, "ROLE");
        yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
              strcmp(r->element[0]->str, "slave") == 0 &&
              r->element[2]->type == REDIS_REPLY_INTEGER &&
              r->element[2]->integer == m->port;
        freeReplyObject(r);
        if (yes)
            return s;
    }
    return NULL;
}

int main(void)
{
    int slot = lw__key_slot(LOCK_KEY, strlen(LOCK_KEY));
    rh_server *master, *replica;
    redisReply *r;

    CHECK_EQ(lw__names_init(&names, LOCK_KEY, strlen(LOCK_KEY), 5, 1), LW_OK);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    master = rh_cluster_master_of(&cl, slot);
    CHECK(master != NULL);
    replica = replica_of(master);
    CHECK_MSG(replica != NULL, "master :%d has no replica", master->port);
    configure();

    unsigned long long seen = sections(BEFORE, 0, "replicated");
    /* The replica has every fence so far (polled: WAIT waits for the
     * writes of the connection that sends it, and the harness's makes
     * none)... */
    for (int waited = 0; fence_counter(replica) != fence_counter(master);
         waited += 10) {
        CHECK_MSG(waited < 10000,
                  "the replica's fence counter not the master's within 10 s");
        usleep(10000);
    }
    /* ...and none after: frozen, then its link cut, it cannot reconnect and
     * sync (what was already on the wire before the cut it reads once
     * thawed; nothing after it). */
    CHECK_EQ(rh_pause(replica), 0);
    CHECK_EQ(rh_cmd_int(master, "CLIENT KILL TYPE replica"), 1);
    unsigned long long highest = sections(LOST, seen, "not replicated");
    unsigned long long on_master = fence_counter(master);
    /* Nothing but lockweave's acquisitions from here on (no thread of it
     * may reach a frozen node): a clean start after the failover. */
    lw_shutdown();

    CHECK_EQ(rh_kill(master), 0);
    long long killed_ms = now_ms();
    CHECK_EQ(rh_resume(replica), 0);
    if (rh_cluster_wait_ok(&cl, AUTO_FAILOVER_MS) != 0 ||
        !rh_cluster_is_master(replica)) {
        printf("the replica did not take over by itself within %d ms: "
               "CLUSTER FAILOVER TAKEOVER\n",
               AUTO_FAILOVER_MS);
        r = rh_cmd(replica, "CLUSTER FAILOVER TAKEOVER");
        CHECK_MSG(r != NULL && r->type == REDIS_REPLY_STATUS,
                  "CLUSTER FAILOVER TAKEOVER refused");
        freeReplyObject(r);
        CHECK_EQ(rh_cluster_wait_ok(&cl, 30000), 0);
    }
    CHECK(rh_cluster_is_master(replica));
    CHECK(rh_cluster_master_of(&cl, slot) == replica);
    unsigned long long promoted = fence_counter(replica);
    CHECK_MSG(promoted >= seen && promoted < highest,
              "the promoted replica's counter is %llu: not what it had when "
              "cut off (%llu..%llu; the dead master's was %llu)",
              promoted, seen, highest - 1, on_master);

    while (now_ms() - killed_ms < FAILOVER_MS)
        usleep(1000);
    configure();
    unsigned long long last = sections(AFTER, highest, "after the failover");
    printf("cluster fence failover: highest fence %llu on the dead master "
           "(counter %llu), the promoted replica's counter %llu (%llu "
           "behind), fences after up to %llu\n",
           highest, on_master, promoted, highest - promoted, last);
    lw_shutdown();
    lw__names_free(&names);
    rh_cluster_stop(&cl);
    return 0;
}

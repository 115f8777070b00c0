/*
 * Fences across failover (DESIGN.md): lw_fence() keeps increasing per key
 * when the server that mints the next fence has forgotten the last ones.
 * - restart from an older snapshot: sections, SAVE, more sections, SIGKILL
 *   (the later writes are lost), the server comes back from the RDB file;
 * - a replica detached and promoted: sections on the master until the
 *   replica has them all, REPLICAOF NO ONE on the replica, more sections on
 *   the master, then lockweave pointed at the former replica.
 * In both the counter the new server holds is first checked to be below the
 * highest fence handed out (else the case proves nothing), then every fence
 * it mints must be above that highest one: a fence handed out twice lets a
 * stale holder's writes pass the fencing check of the storage it guards.
 *
 * Fences are minted as max(counter + 1, the server's TIME in microseconds):
 * the promise holds as long as the failover took longer than the servers'
 * clocks differ.  Here one machine, one clock, and FAILOVER_MS of wall time
 * between the event and the next section models the failover taking time.
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The fence counter every key of the default prefix draws from on one
 * server (runtime/core/keynames.c). */
#define FENCES_KEY "{lockweave}lock:fences"

#define BEFORE      20 /* sections the new server will have seen */
#define LOST        50 /* sections it will not have seen */
#define AFTER       20 /* sections on the new server */
#define FAILOVER_MS 20

/* Masters start a full sync at once, not after the default 5 s. */
static const char *const master_args[] = {"--repl-diskless-sync-delay", "0",
                                          NULL};

/* The fence counter on s as stored (0 when there is none). */
static unsigned long long fence_counter(rh_server *s)
{
    redisReply *r = rh_cmd(s, "GET %s", FENCES_KEY);
    unsigned long long v = 0;

    CHECK_MSG(r != NULL &&
                  (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL),
              "GET %s failed", FENCES_KEY);
    if (r->type == REDIS_REPLY_STRING)
        v = strtoull(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

/* n sections on key, one after another: fences strictly increasing, each
 * above `above` (what was handed out before the event; 0 for none).
 * Returns the highest. */
static unsigned long long sections(const char *key, int n,
                                   unsigned long long above, const char *when)
{
    unsigned long long prev = above;

    for (int i = 0; i < n; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, key, 5000, 2000), LW_OK);
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

static void older_snapshot(void)
{
    rh_server srv;

    /* No AOF (rh_opts_init's default): a restart loads dump.rdb from the
     * server's directory, which only the SAVE below writes (the harness
     * turns automatic snapshots off). */
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    unsigned long long before = sections("snap", BEFORE, 0, "before SAVE");
    redisReply *r = rh_cmd(&srv, "SAVE");
    CHECK_MSG(r != NULL && r->type == REDIS_REPLY_STATUS, "SAVE failed");
    freeReplyObject(r);
    unsigned long long saved = fence_counter(&srv);
    unsigned long long highest = sections("snap", LOST, before, "after SAVE");

    /* A crash: the sections after the SAVE are gone with it. */
    lw_shutdown();
    CHECK_EQ(rh_kill(&srv), 0);
    CHECK_EQ(rh_start_again(&srv), 0);
    unsigned long long restored = fence_counter(&srv);
    CHECK_MSG(restored == saved && restored < highest,
              "the restart did not bring back the older counter: %llu, "
              "saved %llu, highest fence %llu",
              restored, saved, highest);

    sleep_ms(FAILOVER_MS);
    use_server(&srv);
    unsigned long long last =
        sections("snap", AFTER, highest, "restarted from the snapshot");
    printf("older snapshot: highest fence %llu before the kill, counter back "
           "at %llu (%llu behind), fences after the restart up to %llu\n",
           highest, restored, highest - restored, last);
    lw_shutdown();
    rh_stop(&srv);
}

/* The replica has the master's fence counter as it is now.  (Not WAIT: it
 * waits for the writes of the connection that sends it, and the harness's
 * own makes none; nor "state=online", which a master reports before a
 * diskless sync's replica streams its writes.) */
static rh_server *pair[2]; /* master, replica */

static int caught_up(void *arg)
{
    (void)arg;
    return fence_counter(pair[1]) == fence_counter(pair[0]);
}

static void replica_promoted(void)
{
    rh_server master, replica;
    rh_opts o;
    char port[16];
    const char *args[4];

    rh_opts_init(&o);
    o.extra_args = master_args;
    CHECK_EQ(rh_start(&master, &o), 0);
    snprintf(port, sizeof port, "%d", master.port);
    args[0] = "--replicaof";
    args[1] = "127.0.0.1";
    args[2] = port;
    args[3] = NULL;
    o.extra_args = args;
    CHECK_EQ(rh_start(&replica, &o), 0);
    pair[0] = &master;
    pair[1] = &replica;

    use_server(&master);
    unsigned long long seen = sections("promo", BEFORE, 0, "replicated");
    /* Every fence so far is on the replica before it is cut off. */
    CHECK_MSG(wait_until(caught_up, NULL, 10000) >= 0,
              "the replica's fence counter not the master's within 10 s");
    redisReply *r = rh_cmd(&replica, "REPLICAOF NO ONE");
    CHECK_MSG(r != NULL && r->type == REDIS_REPLY_STATUS,
              "REPLICAOF NO ONE failed");
    freeReplyObject(r);
    unsigned long long highest =
        sections("promo", LOST, seen, "not replicated");
    unsigned long long detached = fence_counter(&replica);
    CHECK_MSG(detached >= seen && detached < highest,
              "the former replica's counter is %llu: not what it had when "
              "detached (%llu..%llu, highest fence %llu)",
              detached, seen, highest - 1, highest);

    /* The master is given up for the promoted replica. */
    lw_shutdown();
    sleep_ms(FAILOVER_MS);
    use_server(&replica);
    unsigned long long last =
        sections("promo", AFTER, highest, "on the promoted replica");
    printf("promoted replica: highest fence %llu on the master, the replica's "
           "counter %llu (%llu behind), fences on it up to %llu\n",
           highest, detached, highest - detached, last);
    lw_shutdown();
    rh_stop(&replica);
    rh_stop(&master);
}

int main(void)
{
    older_snapshot();
    replica_promoted();
    printf("fence_failover: ok\n");
    return 0;
}

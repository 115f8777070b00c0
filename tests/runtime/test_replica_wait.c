/*
 * Replica-safe acquire (wait_replicas): a master and one replica.  With the
 * replica up, the lock is granted and is on the replica before the body
 * runs; with the replica frozen (SIGSTOP) the acquisition fails with
 * LW_EREPLICAS, the body does not run, and the key is not left on the
 * master; asking for more replicas than exist fails the same way; without
 * the option a frozen replica changes nothing.
 */
#include "util.h"

#include <string.h>

#define WAIT_MS 200

static rh_server master, replica;
static int entered;

static void configure(int wait_replicas)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = master.url;
    cfg.connect_timeout_ms = 500;
    cfg.command_timeout_ms = 2000; /* > WAIT_MS: WAIT answers first */
    cfg.wait_replicas = wait_replicas;
    cfg.wait_timeout_ms = WAIT_MS;
    CHECK_RC(lw_configure(&cfg), LW_OK);
}

static int replica_linked(void *arg)
{
    (void)arg;
    redisReply *r = rh_cmd(&replica, "INFO replication");
    int up = r != NULL && r->type == REDIS_REPLY_STRING &&
             strstr(r->str, "master_link_status:up") != NULL;
    if (r != NULL)
        freeReplyObject(r);
    return up;
}

/* A guarded call; inside it, check the key already reached the replica. */
static int guarded(const char *key, int expect_on_replica)
{
    lw_guard g;
    int rc = lock_str(&g, key, 5000, 0);
    if (rc != LW_OK)
        return rc;
    entered++;
    if (expect_on_replica)
        CHECK_MSG(lock_exists(&replica, key) == 1,
                  "lock:%s granted but not on the replica", key);
    return lw_guard_leave(&g);
}

int main(void)
{
    static char port[16];
    static const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};

    CHECK_EQ(rh_start(&master, NULL), 0);
    snprintf(port, sizeof port, "%d", master.port);
    rh_opts o;
    rh_opts_init(&o);
    o.extra_args = args;
    CHECK_EQ(rh_start(&replica, &o), 0);
    CHECK_MSG(wait_until(replica_linked, NULL, 10000) >= 0,
              "replica did not link to its master within 10 s");

    /* Replica up: granted, and the replica has it inside the body. */
    configure(1);
    CHECK_RC(guarded("up", 1), LW_OK);
    CHECK_EQ(entered, 1);
    CHECK_EQ(lock_exists(&master, "up"), 0);

    /* Replica frozen: not confirmed, body not run, nothing left behind. */
    CHECK_EQ(rh_pause(&replica), 0);
    int64_t t0 = now_ms();
    int rc = guarded("frozen", 0);
    printf("replica frozen: %s after %lld ms (WAIT timeout %d ms)\n",
           lw_strerror(rc), (long long)(now_ms() - t0), WAIT_MS);
    CHECK_RC(rc, LW_EREPLICAS);
    CHECK_RC(lw_last_error(), LW_EREPLICAS);
    CHECK_EQ(entered, 1);
    CHECK_EQ(lock_exists(&master, "frozen"), 0);

    /* Without the option the frozen replica does not matter. */
    configure(0);
    CHECK_RC(guarded("nowait", 0), LW_OK);
    CHECK_EQ(entered, 2);
    CHECK_EQ(rh_resume(&replica), 0);

    /* Back: granted again (the replica catches up on resume). */
    configure(1);
    CHECK_RC(guarded("resumed", 1), LW_OK);
    CHECK_EQ(entered, 3);

    /* More replicas than there are: never confirmed. */
    configure(2);
    CHECK_RC(guarded("two", 0), LW_EREPLICAS);
    CHECK_EQ(lock_exists(&master, "two"), 0);
    CHECK_EQ(entered, 3);

    lw_shutdown();
    rh_stop(&replica);
    rh_stop(&master);
    printf("replica_wait: ok\n");
    return 0;
}

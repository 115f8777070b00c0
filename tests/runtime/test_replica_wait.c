/*
 * Replica-safe acquire (wait_replicas): a master and one replica.  With the
 * replica up, the lock is granted and is on the replica before the body
 * runs; with the replica frozen (SIGSTOP) the acquisition fails with
 * LW_EREPLICAS, the body does not run, and the key is not left on the
 * master; asking for more replicas than exist fails the same way; without
 * the option a frozen replica changes nothing.  A read lock and a
 * semaphore the same, up and frozen.  Then Redlock over three
 * masters with a replica each: WAIT on every master, a quorum of masters
 * must confirm (one replica frozen: granted; two: LW_EREPLICAS).  A WAIT
 * timeout longer than the command timeout is waited for in full, on one
 * master and under Redlock: LW_EREPLICAS, not a read timed out (LW_EREDIS).
 * With LW_TEST_TLS=1 (runtime_tls_replica_wait) every server and the
 * replication links are TLS.
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* WAIT timeouts: generous where the replicas are expected to answer (a
 * loaded CI machine), short where a frozen one makes WAIT run out. */
#define WAIT_OK_MS   2000
#define WAIT_FAIL_MS 300
/* A WAIT that outlasts the command timeout (SHORT_CMD_MS), with room for a
 * slow machine on both sides. */
#define WAIT_LONG_MS 2500
#define SHORT_CMD_MS 1000

#define RL 3

static rh_server master, replica;
static rh_server rl_master[RL], rl_replica[RL];
static char rl_url[RL * 64];
static int entered;

static void configure_cmd(const char *url, int wait_replicas, int wait_ms,
                          int command_ms)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 500;
    cfg.command_timeout_ms = command_ms;
    cfg.wait_replicas = wait_replicas;
    cfg.wait_timeout_ms = wait_ms;
    CHECK_RC(lw_configure(&cfg), LW_OK);
}

static void configure_url(const char *url, int wait_replicas, int wait_ms)
{
    configure_cmd(url, wait_replicas, wait_ms, 5000);
}

static void configure(int wait_replicas, int wait_ms)
{
    configure_url(master.url, wait_replicas, wait_ms);
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

/* A read lock and a semaphore (their own renewals go before WAIT): each
 * granted and on the replica inside the body (expect LW_OK), or not
 * confirmed, the body not run and nothing left behind. */
static void other_kinds(int expect)
{
    lw_lock_opts o = lock_opts(5000, 0, -1);
    const char *keys[] = {"kind-read", "kind-sem"};
    lw_guard g;

    for (int i = 0; i < 2; i++) {
        o.flags = i == 0 ? LW_LOCK_READ : 0;
        o.permits = i == 1 ? 2 : 0;
        int rc = lw_lock(&g, keys[i], strlen(keys[i]), &o);
        CHECK_MSG(rc == expect, "%s: %s", keys[i], lw_strerror(rc));
        if (rc != LW_OK) {
            CHECK_EQ(lock_exists(&master, keys[i]), 0);
            continue;
        }
        CHECK_MSG(lock_exists(&replica, keys[i]) == 1,
                  "lock:%s granted but not on the replica", keys[i]);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
}

/* Redlock: a guarded call; inside, how many replicas already have it. */
static int rl_guarded(const char *key, int *on_replicas)
{
    lw_guard g;
    int rc = lock_str(&g, key, 5000, 0);
    if (rc != LW_OK)
        return rc;
    entered++;
    *on_replicas = 0;
    for (int i = 0; i < RL; i++)
        if (!rl_replica[i].paused)
            *on_replicas += lock_exists(&rl_replica[i], key);
    return lw_guard_leave(&g);
}

static int rl_masters_holding(const char *key)
{
    int n = 0;
    for (int i = 0; i < RL; i++)
        n += lock_exists(&rl_master[i], key);
    return n;
}

static void redlock_with_replicas(void)
{
    static char ports[RL][16];
    static const char *args[RL][PAIR_ARGS];
    size_t len = 0;
    int on = 0;

    for (int i = 0; i < RL; i++) {
        start_pair(&rl_master[i], &rl_replica[i], ports[i], args[i]);
        len += (size_t)snprintf(rl_url + len, sizeof rl_url - len, "%s%s",
                                i ? "," : "", rl_master[i].url);
    }
    configure_url(rl_url, 1, WAIT_OK_MS);
    int before = entered;
    CHECK_RC(rl_guarded("rl-up", &on), LW_OK);
    CHECK(on >= RL / 2 + 1); /* WAIT confirmed on a quorum at least */

    CHECK_EQ(rh_pause(&rl_replica[0]), 0);
    configure_url(rl_url, 1, WAIT_OK_MS / 2); /* the frozen one runs out */
    CHECK_RC(rl_guarded("rl-one-frozen", &on), LW_OK);
    CHECK(on >= RL / 2);

    CHECK_EQ(rh_pause(&rl_replica[1]), 0);
    configure_url(rl_url, 1, WAIT_FAIL_MS);
    CHECK_RC(rl_guarded("rl-two-frozen", &on), LW_EREPLICAS);
    CHECK_RC(lw_last_error(), LW_EREPLICAS);
    CHECK_EQ(rl_masters_holding("rl-two-frozen"), 0);
    printf("redlock, 3 masters with a replica each: granted with 1 replica "
           "frozen, %s with 2\n",
           lw_strerror(LW_EREPLICAS));

    /* The WAIT round outlasts the command timeout: waited for in full. */
    configure_cmd(rl_url, 1, WAIT_LONG_MS, SHORT_CMD_MS);
    int64_t t0 = now_ms();
    int rc = rl_guarded("rl-long", &on);
    printf("redlock, WAIT %d ms > command timeout %d ms: %s after %lld ms\n",
           WAIT_LONG_MS, SHORT_CMD_MS, lw_strerror(rc),
           (long long)(now_ms() - t0));
    CHECK_RC(rc, LW_EREPLICAS);
    CHECK(now_ms() - t0 >= WAIT_LONG_MS);
    CHECK_EQ(rl_masters_holding("rl-long"), 0);
    CHECK_EQ(rh_resume(&rl_replica[0]), 0);
    CHECK_EQ(rh_resume(&rl_replica[1]), 0);
    configure_url(rl_url, 1, WAIT_OK_MS);
    CHECK_RC(rl_guarded("rl-back", &on), LW_OK);
    CHECK_EQ(entered, before + 3);
    for (int i = 0; i < RL; i++) {
        rh_stop(&rl_replica[i]);
        rh_stop(&rl_master[i]);
    }
}

int main(void)
{
    static char port[16];
    static const char *args[PAIR_ARGS];

    start_pair(&master, &replica, port, args);

    /* Replica up: granted, and the replica has it inside the body. */
    configure(1, WAIT_OK_MS);
    CHECK_RC(guarded("up", 1), LW_OK);
    CHECK_EQ(entered, 1);
    CHECK_EQ(lock_exists(&master, "up"), 0);
    other_kinds(LW_OK);

    /* Replica frozen: not confirmed, body not run, nothing left behind. */
    CHECK_EQ(rh_pause(&replica), 0);
    configure(1, WAIT_FAIL_MS);
    int64_t t0 = now_ms();
    int rc = guarded("frozen", 0);
    printf("replica frozen: %s after %lld ms (WAIT timeout %d ms)\n",
           lw_strerror(rc), (long long)(now_ms() - t0), WAIT_FAIL_MS);
    CHECK_RC(rc, LW_EREPLICAS);
    CHECK_RC(lw_last_error(), LW_EREPLICAS);
    CHECK_EQ(entered, 1);
    CHECK_EQ(lock_exists(&master, "frozen"), 0);
    other_kinds(LW_EREPLICAS);

    /* A WAIT timeout above the command timeout: the server answers WAIT
     * only when it runs out, and the reply is waited for that long.  Not
     * confirmed (LW_EREPLICAS, not a read timed out: LW_EREDIS), body not
     * run, nothing left behind. */
    configure_cmd(master.url, 1, WAIT_LONG_MS, SHORT_CMD_MS);
    t0 = now_ms();
    rc = guarded("frozen-long", 0);
    printf("replica frozen, WAIT %d ms > command timeout %d ms: %s after "
           "%lld ms\n",
           WAIT_LONG_MS, SHORT_CMD_MS, lw_strerror(rc),
           (long long)(now_ms() - t0));
    CHECK_RC(rc, LW_EREPLICAS);
    CHECK_RC(lw_last_error(), LW_EREPLICAS);
    CHECK(now_ms() - t0 >= WAIT_LONG_MS);
    CHECK_EQ(entered, 1);
    CHECK_EQ(lock_exists(&master, "frozen-long"), 0);

    /* Without the option the frozen replica does not matter. */
    configure(0, WAIT_FAIL_MS);
    CHECK_RC(guarded("nowait", 0), LW_OK);
    CHECK_EQ(entered, 2);
    CHECK_EQ(rh_resume(&replica), 0);

    /* Back: granted again (the replica catches up on resume). */
    configure(1, WAIT_OK_MS);
    CHECK_RC(guarded("resumed", 1), LW_OK);
    CHECK_EQ(entered, 3);

    /* More replicas than there are: never confirmed. */
    configure(2, WAIT_FAIL_MS);
    CHECK_RC(guarded("two", 0), LW_EREPLICAS);
    CHECK_EQ(lock_exists(&master, "two"), 0);
    CHECK_EQ(entered, 3);

    redlock_with_replicas();

    lw_shutdown();
    rh_stop(&replica);
    rh_stop(&master);
    printf("replica_wait: ok\n");
    return 0;
}

/*
 * lockweave-ctl on a 3-master Redis Cluster: list finds the locks of every
 * master (each reported on the master that serves its slot), inspect reads
 * a key's lock, queue and slot fence counter on its master, unlock
 * breaks a lock on each master, handing it to a waiter on one of them, and
 * list shows a semaphore and a read lock with their kinds; inspect names
 * the holder's process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_util.h"
#include "rh_cluster.h"
#include "util.h"

#define KEYS 60

static rh_cluster cl;

/* Waits for a lock, and holds it until told. */
struct waiter {
    const char *key;
    int rc;      /* atomic: 1 until lock_str() returned */
    int release; /* atomic */
    int left;
    pthread_t th;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    lw_guard g;
    int rc = lock_str(&g, w->key, 10000, 10000);

    __atomic_store_n(&w->rc, rc, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&w->release, __ATOMIC_ACQUIRE))
        sleep_ms(2);
    if (rc == LW_OK)
        w->left = lw_guard_leave(&g);
    return NULL;
}

static int waiter_done(void *arg)
{
    return __atomic_load_n(&((struct waiter *)arg)->rc, __ATOMIC_ACQUIRE) != 1;
}

/* A command on the master of key's slot; the reply (CHECKed). */
static redisReply *on_master(const char *cmd, const char *key, const char *arg)
{
    const char *argv[] = {cmd, key, arg};
    size_t lens[] = {strlen(cmd), strlen(key), arg ? strlen(arg) : 0};
    int slot = rh_cluster_keyslot(&cl, key, strlen(key));
    redisReply *r;

    CHECK(slot >= 0);
    r = rh_cluster_cmd_argv(&cl, slot, arg ? 3 : 2, argv, lens);
    CHECK(r != NULL && r->type != REDIS_REPLY_ERROR);
    return r;
}

static long long int_on_master(const char *cmd, const char *key)
{
    redisReply *r = on_master(cmd, key, NULL);
    long long v;

    CHECK(r->type == REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

static void value_on_master(const char *key, char *buf, size_t cap)
{
    redisReply *r = on_master("GET", key, NULL);

    snprintf(buf, cap, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

/* Port of the master serving key now. */
static int master_port(const char *key)
{
    rh_server *s =
        rh_cluster_master_of(&cl, rh_cluster_keyslot(&cl, key, strlen(key)));

    CHECK(s != NULL);
    return s->port;
}

static int url_port(const char *url)
{
    const char *colon = strrchr(url, ':');

    CHECK(colon != NULL);
    return atoi(colon + 1);
}

static int queue_has_one(void *arg)
{
    char q[64];

    snprintf(q, sizeof q, "{lock:%s}:q", (const char *)arg);
    return int_on_master("ZCARD", q) == 1;
}

/* A semaphore and a read lock, each on the master of its slot: list finds
 * them with their kinds, counting their holders there. */
static void list_shared(void)
{
    lw_lock_opts sem = {.expire_ms = 10000, .permits = 2};
    lw_lock_opts rd = {.expire_ms = 10000, .flags = LW_LOCK_READ};
    static const char *const key[] = {"cs:read", "cs:sem"};
    struct ctl_run r;
    lw_guard g[2];
    const jv *locks;
    jv *j;

    CHECK_RC(lw_lock(&g[0], key[0], strlen(key[0]), &rd), LW_OK);
    CHECK_RC(lw_lock(&g[1], key[1], strlen(key[1]), &sem), LW_OK);
    ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "--json", "list", "cs:*", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    locks = jv_get(j, "locks");
    CHECK(locks != NULL && locks->type == 'a' && locks->n == 2);
    for (int i = 0; i < 2; i++) {
        char full[32];

        snprintf(full, sizeof full, "lock:%s", key[i]);
        CHECK_STR(jv_str(locks->items[i], "key"), key[i]);
        CHECK_STR(jv_str(locks->items[i], "kind"), i ? "semaphore" : "read");
        CHECK_EQ(jv_int(locks->items[i], "holders"), 1);
        CHECK_EQ(url_port(jv_str(locks->items[i], "master")),
                 master_port(full));
    }
    CHECK_EQ(jv_int(locks->items[1], "permits"), 2);
    jv_free(j);
    ctl_run_free(&r);
    CHECK_RC(lw_guard_leave(&g[1]), LW_OK);
    CHECK_RC(lw_guard_leave(&g[0]), LW_OK);
    ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "list", "cs:*", NULL);
    CHECK_EQ(r.status, 1);
    ctl_run_free(&r);
}

int main(int argc, char **argv)
{
    static lw_guard g[KEYS];
    static char keys[KEYS][16], full[KEYS][24];
    int port_of[KEYS], broken[KEYS] = {0}, ports[3] = {0}, nports = 0;
    struct ctl_run r;
    struct waiter w = {.rc = 1};
    const jv *locks;
    char before[128], after[128];
    jv *j;

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    ctl_init(argc, argv);
    CHECK_EQ(rh_cluster_start(&cl, 3, 0), 0);
    use_url(cl.url, 1000, 2000);
    for (int i = 0; i < KEYS; i++) {
        snprintf(keys[i], sizeof keys[i], "c:%d", i);
        snprintf(full[i], sizeof full[i], "lock:c:%d", i);
        CHECK_RC(lock_str(&g[i], keys[i], 20000, 0), LW_OK);
        port_of[i] = master_port(full[i]);
        int k = 0;
        while (k < nports && ports[k] != port_of[i])
            k++;
        if (k == nports) {
            CHECK(nports < 3);
            ports[nports++] = port_of[i];
        }
    }
    CHECK_EQ(nports, 3);

    /* list: every lock, each on the master of its slot. */
    ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "--json", "list", "c:*", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "topology"), "cluster");
    CHECK_EQ(jv_get(j, "masters")->n, 3);
    locks = jv_get(j, "locks");
    CHECK_EQ(locks->n, KEYS);
    for (size_t i = 0; i < locks->n; i++) {
        int n = -1;
        CHECK(sscanf(jv_str(locks->items[i], "key"), "c:%d", &n) == 1);
        CHECK_RANGE(n, 0, KEYS - 1);
        CHECK_EQ(url_port(jv_str(locks->items[i], "master")), port_of[n]);
    }
    jv_free(j);
    ctl_run_free(&r);

    /* inspect and unlock one key on each master. */
    for (int m = 0; m < 3; m++) {
        int i = 0;
        char counter[64];
        while (port_of[i] != ports[m])
            i++;
        ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "--json", "inspect", keys[i],
                NULL);
        CHECK_EQ(r.status, 0);
        j = ctl_json(&r);
        CHECK_EQ(jv_bool(j, "held"), 1);
        CHECK_RANGE(jv_int(j, "ttl_ms"), 1, 20000);
        snprintf(counter, sizeof counter, "%s",
                 jv_str(jv_get(j, "fence"), "counter"));
        CHECK(jv_int(jv_get(j, "fence"), "counter_value") > 0);
        /* Held by this process, on its connection to the key's master. */
        CHECK_EQ(jv_bool(jv_get(j, "holder"), "connected"), 1);
        CHECK_EQ(jv_int(jv_get(j, "holder"), "pid"), (long long)getpid());
        jv_free(j);
        ctl_run_free(&r);
        /* The slot's own counter, on the key's master. */
        CHECK_EQ(rh_cluster_keyslot(&cl, counter, strlen(counter)),
                 rh_cluster_keyslot(&cl, full[i], strlen(full[i])));
        CHECK_EQ(int_on_master("EXISTS", counter), 1);

        if (m == 0) {
            /* A waiter on this one: handed the lock by the unlock. */
            w.key = keys[i];
            CHECK(pthread_create(&w.th, NULL, waiter_main, &w) == 0);
            CHECK(wait_until(queue_has_one, keys[i], 5000) >= 0);
            sleep_ms(20);
        }
        value_on_master(full[i], before, sizeof before);
        ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes",
                keys[i], NULL);
        CHECK_EQ(r.status, 0);
        ctl_run_free(&r);
        value_on_master(full[i], after, sizeof after);
        if (m == 0) {
            CHECK(after[0] != '\0' && strcmp(after, before) != 0);
            CHECK(wait_until(waiter_done, &w, 5000) >= 0);
            __atomic_store_n(&w.release, 1, __ATOMIC_RELEASE);
            CHECK(pthread_join(w.th, NULL) == 0);
            CHECK_RC(w.rc, LW_OK);
            CHECK_RC(w.left, LW_OK);
        } else {
            CHECK_STR(after, "");
        }
        broken[i] = 1;
        ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "inspect", keys[i], NULL);
        CHECK_EQ(r.status, 1);
        ctl_run_free(&r);
    }

    /* The holders learn which locks they lost. */
    for (int i = KEYS - 1; i >= 0; i--)
        CHECK_RC(lw_guard_leave(&g[i]), broken[i] ? LW_ELOST : LW_OK);
    ctl_run(&r, cl.url, CTL_IN_NULL, NULL, "list", "c:*", NULL);
    CHECK_EQ(r.status, 1);
    ctl_run_free(&r);
    list_shared();

    lw_shutdown();
    rh_cluster_stop(&cl);
    printf("ctl_cluster: ok\n");
    return 0;
}

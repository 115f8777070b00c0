/* Wake-ups in a cluster: a waiter for a busy lock blocks (BLPOP on its
 * mailbox) on the master serving its lock's slot, and only there; the
 * holder's release reaches it there.  One key on each master. */
#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rh_cluster.h"
#include "topology/slot.h"

static rh_cluster cl;

struct waiter {
    const char *key;
    int rc;
    long long got_us;
};

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static lw_lock_opts opts(uint32_t expire_ms, uint32_t wait_ms)
{
    lw_lock_opts o;
    memset(&o, 0, sizeof o);
    o.expire_ms = expire_ms;
    o.wait_ms = wait_ms;
    o.max_renew = -1;
    return o;
}

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    lw_lock_opts o = opts(10000, 8000);
    lw_guard g;

    w->rc = lw_lock(&g, w->key, strlen(w->key), &o);
    w->got_us = now_us();
    if (w->rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

/* Clients blocked on s (INFO clients), -1 if unknown. */
static long long blocked_clients(rh_server *s)
{
    redisReply *r = rh_cmd(s, "INFO clients");
    const char *p = r && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "blocked_clients:")
                        : NULL;
    long long n = p ? atoll(p + strlen("blocked_clients:")) : -1;

    freeReplyObject(r);
    return n;
}

static void one_key(const char *key)
{
    char full[64];
    int len = snprintf(full, sizeof full, "lock:%s", key);
    int slot = lw__key_slot(full, (size_t)len);
    rh_server *owner = rh_cluster_master_of(&cl, slot);
    lw_lock_opts o = opts(10000, 0);
    struct waiter w = {.key = key};
    pthread_t t;
    lw_guard g;
    long long released_us;
    int seen = 0;

    CHECK(owner != NULL);
    CHECK_EQ(lw_lock(&g, key, strlen(key), &o), LW_OK);
    CHECK_EQ(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    for (int i = 0; i < 500 && !seen; i++) {
        seen = blocked_clients(owner) == 1;
        if (!seen)
            usleep(10000);
    }
    CHECK_MSG(seen, "no waiter blocked on the master of slot %d", slot);
    for (int i = 0; i < cl.n; i++)
        if (&cl.node[i] != owner && cl.node[i].pid > 0)
            CHECK_EQ(blocked_clients(&cl.node[i]), 0);
    usleep(50000); /* let the waiter queue up behind us */
    released_us = now_us();
    CHECK_EQ(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(w.rc, LW_OK);
    printf("%-10s slot %5d on :%d: waiter had the lock %lld us after the "
           "release\n",
           key, slot, owner->port, w.got_us - released_us);
}

int main(void)
{
    static const char *const keys[] = {"a", "b", "c", "d", "e", "f"};
    rh_server *seen[3] = {0};
    int nseen = 0;
    lw_config cfg;

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    for (size_t i = 0; i < sizeof keys / sizeof *keys && nseen < 3; i++) {
        char full[16];
        int len = snprintf(full, sizeof full, "lock:%s", keys[i]), j;
        rh_server *m =
            rh_cluster_master_of(&cl, lw__key_slot(full, (size_t)len));
        for (j = 0; j < nseen && seen[j] != m; j++)
            ;
        if (j < nseen)
            continue;
        seen[nseen++] = m;
        one_key(keys[i]);
    }
    CHECK_EQ(nseen, 3);
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}

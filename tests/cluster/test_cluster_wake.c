/* Wake-ups over sharded pub/sub: a waiter for a busy lock is subscribed
 * (SSUBSCRIBE) on the master serving its lock's slot, and only there; the
 * holder's release reaches it there.  One key on each master. */
#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "keynames.h"
#include "rh_cluster.h"
#include "slot.h"
#include "wake.h"

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

static long long shard_subscribers(rh_server *s, const char *chan, size_t len)
{
    const char *argv[] = {"PUBSUB", "SHARDNUMSUB", chan};
    size_t lens[] = {6, 11, len};
    redisReply *r = rh_cmd_argv(s, 3, argv, lens);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        n = r->element[1]->integer;
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
    struct lw_names n;
    struct waiter w = {.key = key};
    pthread_t t;
    lw_guard g;
    long long released_us;
    char chan[160], tag[LW_WAKE_TAG_LEN + 1];
    size_t chanlen;
    int seen = 0;

    CHECK(owner != NULL);
    CHECK_EQ(lw__names_init(&n, full, (size_t)len), LW_OK);
    /* Waiters subscribe to their process's own channel of the key. */
    lw__wake_tag(tag);
    chanlen = (size_t)snprintf(chan, sizeof chan, "%.*s:%s", (int)n.chanlen,
                               n.chan, tag);
    CHECK_EQ(lw_lock(&g, key, strlen(key), &o), LW_OK);
    CHECK_EQ(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    for (int i = 0; i < 500 && !seen; i++) {
        seen = shard_subscribers(owner, chan, chanlen) == 1;
        if (!seen)
            usleep(10000);
    }
    CHECK_MSG(seen, "no SSUBSCRIBE to %s on the master of slot %d", chan, slot);
    for (int i = 0; i < cl.n; i++)
        if (&cl.node[i] != owner && cl.node[i].pid > 0)
            CHECK_EQ(shard_subscribers(&cl.node[i], chan, chanlen), 0);
    usleep(50000); /* let the waiter queue up behind us */
    released_us = now_us();
    CHECK_EQ(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(w.rc, LW_OK);
    printf("%-10s slot %5d on :%d: waiter had the lock %lld us after the "
           "release\n",
           key, slot, owner->port, w.got_us - released_us);
    lw__names_free(&n);
}

int main(void)
{
    static const char *const keys[] = {"a", "b", "c", "d", "e", "f"};
    rh_server *seen[3] = {0};
    int nseen = 0;
    lw_config cfg;

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

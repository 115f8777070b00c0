/* What lockweave leaves in Redis, and fences that survive losing it.
 *   many_keys        100 000 distinct keys, each locked once, leave one key
 *                    (the server's fence counter), not one per key.
 *   contended_quiet  after contended sections (queues, alive keys,
 *                    mailboxes, receipts) the helper keys run out by their
 *                    TTLs and the same one key is left.
 *   counter_lost     with the fence counters deleted (as eviction, FLUSHALL
 *                    or a restart without persistence would), the next
 *                    fence of a key is still above the last one — taken
 *                    free, and handed off by a release. */
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KEYS    100000
#define THREADS 4

static rh_server srv;

static void *lock_range(void *arg)
{
    int first = *(int *)arg;
    char key[32];

    for (int i = first; i < KEYS; i += THREADS) {
        lw_guard g;
        snprintf(key, sizeof key, "order:%d", i);
        CHECK_RC(lock_str(&g, key, 10000, 0), LW_OK);
        CHECK(lw_fence() > 0);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    return NULL;
}

/* The keys in the server, printed when there are more than `most`. */
static long long keys_left(int most)
{
    long long n = rh_cmd_int(&srv, "DBSIZE");

    if (n > most) {
        redisReply *r = rh_cmd(&srv, "SCAN 0 COUNT 20");
        CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        for (size_t i = 0; i < r->element[1]->elements && i < 20; i++)
            fprintf(stderr, "  left: %s\n", r->element[1]->element[i]->str);
        freeReplyObject(r);
    }
    return n;
}

static void many_keys(void)
{
    pthread_t t[THREADS];
    int first[THREADS];

    for (int i = 0; i < THREADS; i++) {
        first[i] = i;
        CHECK_EQ(pthread_create(&t[i], NULL, lock_range, &first[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    long long n = keys_left(1);
    printf("many_keys: %d keys locked once each, %lld key(s) left\n", KEYS, n);
    CHECK_MSG(n <= 1, "%lld keys left in Redis after %d locks", n, KEYS);
}

static void *contend(void *arg)
{
    char key[16];

    for (int i = 0; i < 40; i++) {
        lw_guard g;
        snprintf(key, sizeof key, "hot:%d", (i + *(int *)arg) % 2);
        CHECK_RC(lock_str(&g, key, 5000, 20000), LW_OK);
        sleep_ms(1); /* long enough that the others queue */
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    return NULL;
}

static int quiet(void *arg)
{
    (void)arg;
    return rh_cmd_int(&srv, "DBSIZE") <= 1;
}

static void contended_quiet(void)
{
    pthread_t t[THREADS];
    int id[THREADS];
    lw_stats st;

    lw_stats_get(&st);
    uint64_t contended = st.contended;
    for (int i = 0; i < THREADS; i++) {
        id[i] = i;
        CHECK_EQ(pthread_create(&t[i], NULL, contend, &id[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    lw_stats_get(&st);
    long long during = rh_cmd_int(&srv, "DBSIZE");
    /* The helpers' TTLs are seconds (docs/protocol.md, "Key layout"). */
    int64_t ms = wait_until(quiet, NULL, 30000);
    long long n = keys_left(1);
    printf("contended_quiet: %llu contended acquisitions, %lld keys right "
           "after, %lld after %lld ms\n",
           (unsigned long long)(st.contended - contended), during, n,
           (long long)ms);
    CHECK(st.contended > contended); /* the helpers were made */
    CHECK_MSG(n <= 1, "%lld keys left in Redis after contention", n);
}

struct waiter {
    uint64_t fence;
    int rc;
};

static void *wait_handoff(void *arg)
{
    struct waiter *w = arg;
    lw_guard g;

    w->rc = lock_str(&g, "lost-h", 5000, 20000);
    if (w->rc == LW_OK) {
        w->fence = lw_fence();
        w->rc = lw_guard_leave(&g);
    }
    return NULL;
}

static int queued(void *arg)
{
    (void)arg;
    return rh_cmd_int(&srv, "ZCARD {lock:lost-h}:q") == 1;
}

static void counter_lost(void)
{
    lw_guard g;
    uint64_t f1, f2;

    /* Taken free: the plain SET and INCR. */
    CHECK_RC(lock_str(&g, "lost", 5000, 0), LW_OK);
    f1 = lw_fence();
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    forget_fences(&srv);
    CHECK_RC(lock_str(&g, "lost", 5000, 0), LW_OK);
    f2 = lw_fence();
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    printf("counter_lost: free: fence %llu, counter deleted, then %llu\n",
           (unsigned long long)f1, (unsigned long long)f2);
    CHECK_MSG(f2 > f1, "fence went from %llu to %llu", (unsigned long long)f1,
              (unsigned long long)f2);

    /* Handed off: the release script mints the waiter's fence. */
    struct waiter w = {0, 0};
    pthread_t t;
    CHECK_RC(lock_str(&g, "lost-h", 5000, 0), LW_OK);
    f1 = lw_fence();
    CHECK_EQ(pthread_create(&t, NULL, wait_handoff, &w), 0);
    CHECK(wait_until(queued, NULL, 10000) >= 0);
    forget_fences(&srv);
    sleep_ms(50); /* the waiter is older than the hand-off age (2 ms) */
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(w.rc, LW_OK);
    printf("counter_lost: handed off: fence %llu, counter deleted, then "
           "%llu\n",
           (unsigned long long)f1, (unsigned long long)w.fence);
    CHECK_MSG(w.fence > f1, "fence went from %llu to %llu",
              (unsigned long long)f1, (unsigned long long)w.fence);
}

int main(void)
{
    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    many_keys();
    contended_quiet();
    counter_lost();
    lw_shutdown();
    rh_stop(&srv);
    printf("keyspace: ok\n");
    return 0;
}

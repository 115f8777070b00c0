/* Reentrancy: a thread entering a lock it already holds gets in at once
 * (no deadlock, even with wait = 0), and the Redis key goes away only when
 * the outermost guard leaves.  Other threads stay excluded throughout. */
#include "util.h"

#include <pthread.h>
#include <string.h>

static rh_server srv;

struct probe {
    const char *key;
    int rc;
};

/* Another thread trying the key once. */
static void *try_once(void *arg)
{
    struct probe *p = arg;
    lw_guard g;
    p->rc = lock_str(&g, p->key, 5000, 0);
    if (p->rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

static int other_thread_gets(const char *key)
{
    struct probe p = {key, 99};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, try_once, &p), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_MSG(p.rc == LW_OK || p.rc == LW_ETIMEOUT, "probe got %s",
              lw_strerror(p.rc));
    return p.rc == LW_OK;
}

static void nested_same_key(void)
{
    lw_stats before, after;
    lw_stats_get(&before);

    lw_guard outer, mid, inner;
    CHECK_RC(lock_str(&outer, "re", 10000, 0), LW_OK);
    uint64_t fence = lw_fence();
    CHECK(fence > 0);
    /* wait = 0: a re-entry must not need Redis to agree. */
    CHECK_RC(lock_str(&mid, "re", 10000, 0), LW_OK);
    CHECK_RC(lock_str(&inner, "re", 10000, 0), LW_OK);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lw_fence(), fence); /* the same lock, the same token */

    lw_stats_get(&after);
    CHECK_EQ(after.acquired - before.acquired, 1);
    CHECK_EQ(after.reentered - before.reentered, 2);
    CHECK_EQ(after.held, before.held + 1);

    CHECK_RC(lw_guard_leave(&inner), LW_OK);
    CHECK_EQ(lock_exists(&srv, "re"), 1);
    CHECK_EQ(lw_still_held(), 1);
    CHECK(!other_thread_gets("re"));
    CHECK_RC(lw_guard_leave(&mid), LW_OK);
    CHECK_EQ(lock_exists(&srv, "re"), 1);
    CHECK(!other_thread_gets("re"));
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lw_fence(), fence);

    CHECK_RC(lw_guard_leave(&outer), LW_OK);
    CHECK_EQ(lock_exists(&srv, "re"), 0);
    CHECK_EQ(lw_fence(), 0);
    CHECK_EQ(lw_still_held(), 0);
    CHECK(other_thread_gets("re"));
}

/* Recursion, as a woven recursive function would do it. */
static int depth_seen;
static void recurse(int n)
{
    lw_guard g;
    CHECK_RC(lock_str(&g, "rec", 10000, 100), LW_OK);
    if (n > depth_seen)
        depth_seen = n;
    if (n < 50)
        recurse(n + 1);
    CHECK_EQ(lock_exists(&srv, "rec"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

/* Different keys nest too; lw_fence() follows the innermost. */
static void nested_other_keys(void)
{
    lw_guard a, b, a2;
    CHECK_RC(lock_str(&a, "ka", 10000, 0), LW_OK);
    uint64_t fa = lw_fence();
    CHECK_RC(lock_str(&b, "kb", 10000, 0), LW_OK);
    uint64_t fb = lw_fence();
    CHECK(fb > 0);
    /* A re-entry of the outer key while kb is held. */
    CHECK_RC(lock_str(&a2, "ka", 10000, 0), LW_OK);
    CHECK_EQ(lw_fence(), fa);
    CHECK_RC(lw_guard_leave(&a2), LW_OK);
    CHECK_EQ(lw_fence(), fb);
    CHECK_EQ(lock_exists(&srv, "ka"), 1);
    CHECK_RC(lw_guard_leave(&b), LW_OK);
    CHECK_EQ(lock_exists(&srv, "kb"), 0);
    CHECK_EQ(lw_fence(), fa);
    CHECK_EQ(lock_exists(&srv, "ka"), 1);
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    CHECK_EQ(lock_exists(&srv, "ka"), 0);
}

/* Re-entry is per thread: the same key on another thread is a different
 * owner and must wait. */
static void *hold_then_release(void *arg)
{
    (void)arg;
    lw_guard g;
    CHECK_RC(lock_str(&g, "per-thread", 10000, 0), LW_OK);
    sleep_ms(300);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void not_shared_between_threads(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, hold_then_release, NULL), 0);
    while (lock_exists(&srv, "per-thread") == 0)
        sleep_ms(2);
    lw_guard g;
    CHECK_RC(lock_str(&g, "per-thread", 10000, 0), LW_ETIMEOUT);
    CHECK_RC(lock_str(&g, "per-thread", 10000, 5000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    nested_same_key();
    recurse(1);
    CHECK_EQ(depth_seen, 50);
    CHECK_EQ(lock_exists(&srv, "rec"), 0);
    nested_other_keys();
    not_shared_between_threads();

    lw_stats st;
    lw_stats_get(&st);
    CHECK_EQ(st.held, 0);

    lw_shutdown();
    rh_stop(&srv);
    printf("reentrant: ok\n");
    return 0;
}

/* Watchdog renewal: a 1 s lease held for 5 s stays ours the whole time.  The
 * key never disappears, its TTL is pushed back up (it would be gone after
 * 1 s otherwise), lw_still_held() stays 1, and leave succeeds. */
#include "util.h"

#include <pthread.h>
#include <string.h>

#define EXPIRE_MS 1000
#define HOLD_MS   5000

static rh_server srv;

static void hold_and_watch(rh_server *s, const char *key)
{
    lw_stats before, after;
    lw_stats_get(&before);
    lw_guard g;
    lw_lock_opts o = lock_opts(EXPIRE_MS, 0, -1);
    CHECK_RC(lw_lock(&g, key, strlen(key), &o), LW_OK);
    int64_t start = now_ms();
    long long min_ttl = EXPIRE_MS, max_ttl_late = 0;
    int samples = 0;
    while (now_ms() - start < HOLD_MS) {
        CHECK_MSG(lw_still_held() == 1, "lost after %lld ms",
                  (long long)(now_ms() - start));
        long long ttl = lock_pttl(s, key);
        CHECK_MSG(ttl > 0, "key %s: PTTL %lld after %lld ms", key, ttl,
                  (long long)(now_ms() - start));
        if (ttl < min_ttl)
            min_ttl = ttl;
        /* Past the first lease, a TTL well above "what is left of the
         * original" proves it was refreshed. */
        if (now_ms() - start > EXPIRE_MS && ttl > max_ttl_late)
            max_ttl_late = ttl;
        samples++;
        sleep_ms(50);
    }
    CHECK_EQ(lw_still_held(), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(s, key), 0);
    lw_stats_get(&after);
    uint64_t renewed = after.renewed - before.renewed;
    printf("%s: %d-ms lease held %d ms: %d samples, min PTTL %lld ms, max "
           "PTTL after the first lease %lld ms, %llu renewals\n",
           key, EXPIRE_MS, HOLD_MS, samples, min_ttl, max_ttl_late,
           (unsigned long long)renewed);
    CHECK(max_ttl_late > EXPIRE_MS / 2);
    /* At least one renewal per lease length, whatever the fraction. */
    CHECK(renewed >= HOLD_MS / EXPIRE_MS);
    CHECK_EQ(after.lost, before.lost);
}

/* Two threads, each with its own lease, renewed side by side.  rh_cmd() is
 * not thread-safe: the second thread looks through a copy of the server
 * handle with its own connection. */
static void *second(void *arg)
{
    rh_server *copy = arg;
    hold_and_watch(copy, "wd-b");
    if (copy->raw)
        redisFree(copy->raw);
    return NULL;
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    pthread_t t;
    rh_server copy = srv;
    copy.raw = NULL;
    CHECK_EQ(pthread_create(&t, NULL, second, &copy), 0);
    hold_and_watch(&srv, "wd-a");
    CHECK_EQ(pthread_join(t, NULL), 0);

    lw_shutdown();
    rh_stop(&srv);
    printf("watchdog: ok\n");
    return 0;
}

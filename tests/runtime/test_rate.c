/* Uncontended acquire + release rate, one thread, one key, loopback Redis:
 * printed for the record.  Asserted only that every call succeeded and that
 * each took one round trip's worth of time at most in the median, loosely. */
#include "util.h"

#include <stdlib.h>

#define RUN_MS 2000

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    rh_server srv;
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_guard g;
    /* Warm-up: connect, load scripts. */
    for (int i = 0; i < 100; i++) {
        CHECK_RC(lw_lock(&g, "rate", 4, &o), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }

    static int64_t lat[1 << 20];
    long n = 0;
    int64_t start = now_us(), end = start + RUN_MS * 1000;
    int64_t t = start;
    while (t < end && n < (long)(sizeof lat / sizeof lat[0])) {
        CHECK_RC(lw_lock(&g, "rate", 4, &o), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        int64_t t2 = now_us();
        lat[n++] = t2 - t;
        t = t2;
    }
    double secs = (double)(t - start) / 1e6;
    qsort(lat, (size_t)n, sizeof lat[0], cmp64);
    printf("uncontended acquire+release: %ld in %.2f s = %.0f /s; per pair "
           "median %lld us, p99 %lld us, max %lld us\n",
           n, secs, (double)n / secs, (long long)lat[n / 2],
           (long long)lat[n * 99 / 100], (long long)lat[n - 1]);
    CHECK(n > 0);
    CHECK_EQ(lock_exists(&srv, "rate"), 0);

    lw_stats st;
    lw_stats_get(&st);
    CHECK_EQ(st.contended, 0);
    CHECK_EQ((long long)st.acquired, n + 100);

    lw_shutdown();
    rh_stop(&srv);
    return 0;
}

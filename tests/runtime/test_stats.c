/* Counters: each event moves its counter by exactly what happened, in a
 * single-threaded run where nothing else happens. */
#include "util.h"

#include <string.h>

static rh_server srv;

#define DELTA(field) ((long long)(after.field - before.field))

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    lw_stats before, after;
    lw_guard a, b, c;

    /* Acquisitions and re-entries. */
    lw_stats_get(&before);
    CHECK_EQ(before.held, 0);
    CHECK_RC(lock_str(&a, "s1", 10000, 0), LW_OK);
    CHECK_RC(lock_str(&b, "s2", 10000, 0), LW_OK);
    CHECK_RC(lock_str(&c, "s1", 10000, 0), LW_OK);
    lw_stats_get(&after);
    CHECK_EQ(DELTA(acquired), 2);
    CHECK_EQ(DELTA(reentered), 1);
    CHECK_EQ(after.held, 2);
    CHECK_EQ(DELTA(contended), 0);
    CHECK_RC(lw_guard_leave(&c), LW_OK);
    CHECK_RC(lw_guard_leave(&b), LW_OK);
    lw_stats_get(&after);
    CHECK_EQ(after.held, 1);
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    lw_stats_get(&after);
    CHECK_EQ(after.held, 0);
    CHECK_EQ(DELTA(lost), 0);
    CHECK_EQ(DELTA(timed_out), 0);
    CHECK_EQ(DELTA(redis_errors), 0);

    /* Contention that times out, then contention that succeeds. */
    redisReply *r = rh_cmd(&srv, "SET lock:busy other PX 400");
    freeReplyObject(r);
    lw_stats_get(&before);
    CHECK_RC(lock_str(&a, "busy", 10000, 100), LW_ETIMEOUT);
    CHECK_RC(lock_str(&a, "busy", 10000, 3000), LW_OK);
    lw_stats_get(&after);
    CHECK_EQ(DELTA(contended), 2);
    CHECK_EQ(DELTA(timed_out), 1);
    CHECK_EQ(DELTA(acquired), 1);
    CHECK(DELTA(wait_total_us) >= 100000);
    CHECK(after.wait_max_us >= 100000);
    CHECK(after.wait_max_us <=
          (uint64_t)DELTA(wait_total_us) + before.wait_max_us);
    CHECK_RC(lw_guard_leave(&a), LW_OK);

    /* Renewals. */
    lw_stats_get(&before);
    lw_lock_opts o = lock_opts(600, 0, -1);
    CHECK_RC(lw_lock(&a, "renew", 5, &o), LW_OK);
    sleep_ms(1500);
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    lw_stats_get(&after);
    CHECK(DELTA(renewed) >= 2);

    /* A loss. */
    lw_stats_get(&before);
    CHECK_RC(lock_str(&a, "gone", 10000, 0), LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:gone"), 1);
    CHECK_RC(lw_guard_leave(&a), LW_ELOST);
    lw_stats_get(&after);
    CHECK_EQ(DELTA(lost), 1);
    CHECK_EQ(after.held, 0);

    /* Redis errors. */
    lw_stats_get(&before);
    CHECK_EQ(rh_stop(&srv), 0);
    CHECK_RC(lock_str(&a, "down", 10000, 0), LW_EREDIS);
    lw_stats_get(&after);
    CHECK(DELTA(redis_errors) >= 1);
    CHECK_EQ(DELTA(acquired), 0);

    lw_shutdown();
    printf("stats: ok\n");
    return 0;
}

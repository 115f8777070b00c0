/* Losing a lease while the body runs: max_renew runs out, the key is
 * deleted from outside (also flushed, with the release's connection cut),
 * the key is taken over by another client.
 * Each time lw_still_held() turns 0 soon after, leave reports LW_ELOST, the
 * counter moves, and the log hook receives a warning.  The lost handler is
 * called once, with the key and the reason: from the watchdog while the
 * body still runs when the watchdog notices, from the holder's thread when
 * its release does.  Leave never deletes another owner's key. */
#include "util.h"

#include <pthread.h>
#include <string.h>

#define EXPIRE_MS 1000

static rh_server srv;

/* ---- log capture -------------------------------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int warnings;
static int any_lines;
static char last_warning[512];

static void capture(int level, const char *msg, void *ud)
{
    CHECK(ud == &warnings);
    CHECK(msg != NULL);
    pthread_mutex_lock(&log_mu);
    any_lines++;
    if (level >= LW_LOG_WARN) {
        warnings++;
        snprintf(last_warning, sizeof last_warning, "%s", msg);
    }
    pthread_mutex_unlock(&log_mu);
}

static int warnings_now(void)
{
    pthread_mutex_lock(&log_mu);
    int n = warnings;
    pthread_mutex_unlock(&log_mu);
    return n;
}

/* ---- lost handler ------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    int calls, reason;
    char key[64];
    pthread_t thread;
} lost = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void on_lost(const char *key, size_t keylen, int reason, void *ud)
{
    CHECK(ud == &lost);
    pthread_mutex_lock(&lost.mu);
    lost.calls++;
    lost.reason = reason;
    snprintf(lost.key, sizeof lost.key, "%.*s", (int)keylen, key);
    lost.thread = pthread_self();
    pthread_mutex_unlock(&lost.mu);
}

static int lost_calls(void)
{
    pthread_mutex_lock(&lost.mu);
    int n = lost.calls;
    pthread_mutex_unlock(&lost.mu);
    return n;
}

static int handler_called(void *arg)
{
    return lost_calls() > *(int *)arg;
}

/* The handler was called once more than calls_before, for key with reason,
 * from the watchdog (by_watchdog) or this thread. */
static void check_handler(int calls_before, const char *key, int reason,
                          int by_watchdog)
{
    pthread_mutex_lock(&lost.mu);
    printf("  lost handler: %d call(s), key %s, reason %d, %s thread\n",
           lost.calls - calls_before, lost.key, lost.reason,
           pthread_equal(lost.thread, pthread_self()) ? "this" : "another");
    CHECK_EQ(lost.calls, calls_before + 1);
    CHECK(strcmp(lost.key, key) == 0);
    CHECK_EQ(lost.reason, reason);
    CHECK_EQ(!pthread_equal(lost.thread, pthread_self()), by_watchdog);
    pthread_mutex_unlock(&lost.mu);
}

/* The watchdog noticed: the handler runs while the body still does. */
static void handler_before_leave(int calls_before)
{
    int64_t ms = wait_until(handler_called, &calls_before, 5000);
    CHECK_MSG(ms >= 0, "no lost handler call while the body ran");
}

/* ---- helpers --------------------------------------------------------------
 */

static int not_held(void *arg)
{
    (void)arg;
    return lw_still_held() == 0;
}

/* Leave after a loss: LW_ELOST, recorded, counted, logged. */
static void leave_lost(lw_guard *g, const lw_stats *before, int warn_before)
{
    CHECK_RC(lw_guard_leave(g), LW_ELOST);
    CHECK_RC(lw_last_error(), LW_ELOST);
    lw_stats after;
    lw_stats_get(&after);
    CHECK_EQ(after.lost - before->lost, 1);
    CHECK_EQ(after.held, before->held);
    CHECK_MSG(warnings_now() > warn_before,
              "no warning reached the log hook for a lost lease");
    pthread_mutex_lock(&log_mu);
    printf("  logged: %s\n", last_warning);
    pthread_mutex_unlock(&log_mu);
}

/* ---- max_renew ------------------------------------------------------------
 */

static void max_renew_runs_out(void)
{
    const int32_t max_renew = 2;
    lw_stats before;
    lw_stats_get(&before);
    int warn_before = warnings_now();
    int calls = lost_calls();
    lw_guard g;
    lw_lock_opts o = lock_opts(EXPIRE_MS, 0, max_renew);
    CHECK_RC(lw_lock(&g, "mr", 2, &o), LW_OK);
    CHECK_EQ(lw_still_held(), 1);
    int64_t lost_after = wait_until(not_held, NULL, 8 * EXPIRE_MS);
    lw_stats mid;
    lw_stats_get(&mid);
    printf("max_renew=%d, expire=%d ms: lw_still_held() turned 0 after %lld "
           "ms, %llu renewals\n",
           max_renew, EXPIRE_MS, (long long)lost_after,
           (unsigned long long)(mid.renewed - before.renewed));
    CHECK_MSG(lost_after >= 0, "still held after %d ms", 8 * EXPIRE_MS);
    /* Not before the renewals it was allowed: past the first lease. */
    CHECK_RANGE(lost_after, EXPIRE_MS / 2, 4 * EXPIRE_MS);
    CHECK_EQ(mid.renewed - before.renewed, max_renew);
    handler_before_leave(calls);
    leave_lost(&g, &before, warn_before);
    check_handler(calls, "lock:mr", LW_LOST_RENEWALS, 1);
    /* Nothing renews it any more: the key is gone by its TTL at the latest. */
    sleep_ms(EXPIRE_MS + 200);
    CHECK_EQ(lock_exists(&srv, "mr"), 0);
    lw_stats end;
    lw_stats_get(&end);
    CHECK_EQ(end.renewed - before.renewed, max_renew);
}

/* max_renew = 0: no renewal at all; the lease still covers its first TTL. */
static void max_renew_zero(void)
{
    lw_guard g;
    lw_lock_opts o = lock_opts(EXPIRE_MS, 0, 0);
    CHECK_RC(lw_lock(&g, "mr0", 3, &o), LW_OK);
    CHECK_EQ(lw_still_held(), 1);
    /* Keep the key ours in Redis past our clock's end of the lease (its
     * TTL starts when the SET runs, a little after we sent it; here, much
     * later): the body is told the lease ended, so the call must say
     * LW_ELOST whether or not the watchdog got there first. */
    CHECK_EQ(rh_cmd_int(&srv, "PEXPIRE lock:mr0 5000"), 1);
    int64_t lost_after = wait_until(not_held, NULL, 4 * EXPIRE_MS);
    printf("max_renew=0: lw_still_held() turned 0 after %lld ms\n",
           (long long)lost_after);
    CHECK_RANGE(lost_after, 0, 2 * EXPIRE_MS);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
}

/* ---- deleted from outside --------------------------------------------- */

static void deleted_from_outside(void)
{
    lw_stats before;
    lw_stats_get(&before);
    int warn_before = warnings_now();
    int calls = lost_calls();
    lw_guard g;
    lw_lock_opts o = lock_opts(EXPIRE_MS, 0, -1);
    CHECK_RC(lw_lock(&g, "del", 3, &o), LW_OK);
    sleep_ms(200);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:del"), 1);
    int64_t seen = wait_until(not_held, NULL, 3 * EXPIRE_MS);
    printf("lease deleted from outside: noticed after %lld ms\n",
           (long long)seen);
    CHECK_MSG(seen >= 0, "deletion not noticed within %d ms", 3 * EXPIRE_MS);
    /* The renewal must not have re-created the key. */
    CHECK_EQ(lock_exists(&srv, "del"), 0);
    handler_before_leave(calls);
    leave_lost(&g, &before, warn_before);
    check_handler(calls, "lock:del", LW_LOST_GONE, 1);
    CHECK_EQ(lock_exists(&srv, "del"), 0);
}

/* ---- taken over by someone else ---------------------------------------- */

static void taken_over(void)
{
    lw_stats before;
    lw_stats_get(&before);
    int warn_before = warnings_now();
    int calls = lost_calls();
    lw_guard g;
    lw_lock_opts o = lock_opts(EXPIRE_MS, 0, -1);
    CHECK_RC(lw_lock(&g, "take", 4, &o), LW_OK);
    /* As if our lease had expired and another client had taken the lock. */
    redisReply *r = rh_cmd(&srv, "SET lock:take intruder PX 60000");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    int64_t seen = wait_until(not_held, NULL, 3 * EXPIRE_MS);
    printf("lease taken over: noticed after %lld ms\n", (long long)seen);
    CHECK(seen >= 0);
    handler_before_leave(calls);
    leave_lost(&g, &before, warn_before);
    check_handler(calls, "lock:take", LW_LOST_GONE, 1);
    /* Our leave must not have deleted (or extended) the intruder's lock. */
    r = rh_cmd(&srv, "GET lock:take");
    CHECK(r && r->type == REDIS_REPLY_STRING &&
          strcmp(r->str, "intruder") == 0);
    freeReplyObject(r);
    CHECK(lock_pttl(&srv, "take") > 50000);
}

/* Leaving at once after an outside deletion, before the watchdog looked:
 * the compare-and-delete itself must notice. */
static void deleted_then_leave_at_once(void)
{
    lw_stats before;
    lw_stats_get(&before);
    int warn_before = warnings_now();
    int calls = lost_calls();
    lw_guard g;
    lw_lock_opts o = lock_opts(30000, 0, -1);
    CHECK_RC(lw_lock(&g, "quick", 5, &o), LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:quick"), 1);
    leave_lost(&g, &before, warn_before);
    check_handler(calls, "lock:quick", LW_LOST_GONE, 0);
}

/* The key flushed, then the holder's connection cut, so that its release
 * is sent again on a new one and finds the key gone: the section was not
 * ours throughout, so that is LW_ELOST, whether the watchdog noticed the
 * loss first (and told the handler) or the release is the first to see it.
 * Nothing tells a retry that finds the key gone from its own first
 * attempt's delete. */
static void flushed_then_cut(void)
{
    static const char *const keys[] = {"fc1", "fc2"};

    for (int noticed = 1; noticed >= 0; noticed--) {
        const char *key = keys[noticed];
        lw_stats before;
        lw_stats_get(&before);
        int warn_before = warnings_now();
        int calls = lost_calls();
        char full[16];
        lw_guard g;
        /* Renewed every third of the lease: within a second for the first,
         * not before the leave for the second. */
        lw_lock_opts o = lock_opts(noticed ? 3000 : 30000, 0, -1);
        CHECK_RC(lw_lock(&g, key, strlen(key), &o), LW_OK);
        redisReply *r = rh_cmd(&srv, "FLUSHALL");
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        if (noticed) {
            CHECK(wait_until(not_held, NULL, 10000) >= 0);
            handler_before_leave(calls);
        }
        CHECK(rh_cmd_int(&srv, "CLIENT KILL TYPE normal SKIPME yes") >= 1);
        leave_lost(&g, &before, warn_before);
        snprintf(full, sizeof full, "lock:%s", key);
        check_handler(calls, full, LW_LOST_GONE, noticed);
    }
}

/* Redis frozen (as in a long pause of this process, the watchdog cannot
 * renew): once the lease's end passes by our clock, lw_still_held() says 0
 * at once, not only when the stuck renewal finally times out (the command
 * timeout, 2 s, is well past the 600 ms lease). */
static void lease_end_without_renewal(void)
{
    lw_stats before;
    lw_stats_get(&before);
    lw_guard g;
    lw_lock_opts o = lock_opts(600, 0, -1);
    CHECK_RC(lw_lock(&g, "frozen", 6, &o), LW_OK);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(rh_pause(&srv), 0);
    sleep_ms(900);
    int held = lw_still_held();
    lw_stats mid;
    lw_stats_get(&mid);
    CHECK_EQ(rh_resume(&srv), 0);
    CHECK_EQ(held, 0);
    /* The renewal had not failed yet: the lease's end alone said so. */
    CHECK_EQ(mid.lost, before.lost);
    /* What leave says depends on the server: the renewal stuck in it may
     * still find the key (a frozen Redis can run it before it notices the
     * time that passed) — then nobody else can have held the lock, and LW_OK
     * is right; or find it expired: LW_ELOST.  Both are honest. */
    int rc = lw_guard_leave(&g);
    CHECK_MSG(rc == LW_OK || rc == LW_ELOST, "leave: %s", lw_strerror(rc));
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    /* Off: nothing at all may reach the hook. */
    lw_set_logger(capture, &warnings, LW_LOG_OFF);
    {
        lw_guard g;
        lw_lock_opts o = lock_opts(30000, 0, -1);
        CHECK_RC(lw_lock(&g, "off", 3, &o), LW_OK);
        CHECK_EQ(rh_cmd_int(&srv, "DEL lock:off"), 1);
        CHECK_RC(lw_guard_leave(&g), LW_ELOST);
        CHECK_EQ(any_lines, 0);
    }
    lw_set_logger(capture, &warnings, LW_LOG_WARN);
    lw_set_lost_handler(on_lost, &lost);

    deleted_then_leave_at_once();
    flushed_then_cut();
    deleted_from_outside();
    taken_over();
    max_renew_zero();
    max_renew_runs_out();
    lease_end_without_renewal();

    /* Removed: a loss calls nothing. */
    lw_set_lost_handler(NULL, NULL);
    {
        int calls = lost_calls();
        lw_guard g;
        lw_lock_opts o = lock_opts(30000, 0, -1);
        CHECK_RC(lw_lock(&g, "nh", 2, &o), LW_OK);
        CHECK_EQ(rh_cmd_int(&srv, "DEL lock:nh"), 1);
        CHECK_RC(lw_guard_leave(&g), LW_ELOST);
        CHECK_EQ(lost_calls(), calls);
    }

    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    lw_shutdown();
    rh_stop(&srv);
    printf("lost: ok\n");
    return 0;
}

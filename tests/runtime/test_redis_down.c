/* Redis unreachable: fail closed.  lw_guard_enter() returns LW_EREDIS within
 * the configured timeouts (not after the lock's whole wait), the critical
 * section is not entered, the error counter moves; once Redis is back, locks
 * work again. */
#include "util.h"

#include <string.h>

#define CONNECT_MS 500
#define COMMAND_MS 500
#define WAIT_MS    4000
#define SLACK_MS   700

static int entered;

/* One guarded "call": returns the status, runs the body only on LW_OK. */
static int guarded_call(const char *key, int64_t *took_ms)
{
    lw_guard g;
    int64_t t0 = now_ms();
    int rc = lock_str(&g, key, 5000, WAIT_MS);
    *took_ms = now_ms() - t0;
    if (rc == LW_OK) {
        entered++;
        rc = lw_guard_leave(&g);
    }
    return rc;
}

static void nothing_listening(void)
{
    int port = rh_free_port();
    CHECK(port > 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    use_url(url, CONNECT_MS, COMMAND_MS);
    lw_stats before, after;
    lw_stats_get(&before);
    int entered_before = entered;
    for (int i = 0; i < 3; i++) {
        int64_t took;
        int rc = guarded_call("down", &took);
        printf("no server: %s after %lld ms\n", lw_strerror(rc),
               (long long)took);
        CHECK_RC(rc, LW_EREDIS);
        CHECK_RC(lw_last_error(), LW_EREDIS);
        CHECK_RANGE(took, 0, CONNECT_MS + SLACK_MS);
    }
    CHECK_EQ(entered, entered_before);
    lw_stats_get(&after);
    CHECK(after.redis_errors > before.redis_errors);
    CHECK_EQ(after.acquired, before.acquired);
    CHECK_EQ(after.held, 0);
}

/* Keep trying (a reconnect backoff may delay the first success) until a lock
 * works again; returns how long it took, CHECKs it happened in time. */
static int64_t recovers(const char *key, int within_ms)
{
    int64_t t0 = now_ms();
    int rc;
    do {
        int64_t took;
        rc = guarded_call(key, &took);
        if (rc != LW_OK)
            sleep_ms(50);
    } while (rc != LW_OK && now_ms() - t0 < within_ms);
    CHECK_MSG(rc == LW_OK, "no recovery within %d ms: %s", within_ms,
              lw_strerror(rc));
    return now_ms() - t0;
}

static void hung_server(rh_server *srv)
{
    use_url(srv->url, CONNECT_MS, COMMAND_MS);
    int64_t took;
    CHECK_RC(guarded_call("hung", &took), LW_OK); /* connection is open */
    int before = entered;

    CHECK_EQ(rh_pause(srv), 0);
    int rc = guarded_call("hung", &took);
    printf("paused server: %s after %lld ms\n", lw_strerror(rc),
           (long long)took);
    CHECK_RC(rc, LW_EREDIS);
    CHECK_EQ(entered, before);
    /* A connection that hangs can cost a connect and a command timeout, not
     * the lock's wait. */
    CHECK_RANGE(took, COMMAND_MS / 2, CONNECT_MS + COMMAND_MS + SLACK_MS);
    CHECK_EQ(rh_resume(srv), 0);
    /* Another key: the attempt that timed out was still queued in the
     * frozen server and ran on resume, so "hung" may now be held by that
     * abandoned attempt until its lease ends (correct, if unlucky). */
    printf("paused server resumed: recovered after %lld ms\n",
           (long long)recovers("hung-after", 5000));
}

static void server_gone(rh_server *srv)
{
    int64_t took;
    CHECK_RC(guarded_call("gone", &took), LW_OK);
    int before = entered;
    CHECK_EQ(rh_kill(srv), 0);
    int rc = guarded_call("gone", &took);
    printf("killed server: %s after %lld ms\n", lw_strerror(rc),
           (long long)took);
    CHECK_RC(rc, LW_EREDIS);
    CHECK_EQ(entered, before);
    CHECK_RANGE(took, 0, CONNECT_MS + COMMAND_MS + SLACK_MS);
    CHECK_EQ(rh_start_again(srv), 0);
    printf("killed server restarted: recovered after %lld ms\n",
           (long long)recovers("gone", 5000));
}

/* After failures against one address, a new configuration is used at once:
 * the backoff earned by the old address must not delay the new one. */
static void reconfigure_after_failures(rh_server *srv)
{
    use_url(srv->url, CONNECT_MS, COMMAND_MS);
    int64_t took;
    int rc = guarded_call("reconfigured", &took);
    printf("first call after reconfiguring to a live server: %s after %lld "
           "ms\n",
           lw_strerror(rc), (long long)took);
    CHECK_RC(rc, LW_OK);
}

int main(void)
{
    rh_server srv;
    CHECK_EQ(rh_start(&srv, NULL), 0);

    hung_server(&srv);
    server_gone(&srv);
    nothing_listening();
    reconfigure_after_failures(&srv);

    lw_shutdown();
    rh_stop(&srv);
    printf("redis_down: ok\n");
    return 0;
}

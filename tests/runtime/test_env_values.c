/*
 * What the log says about odd settings and slow servers:
 *  - LOCKWEAVE_LOG naming no level, and *_MS values with a sign, spaces or
 *    junk, are ignored with a warning each (the defaults apply), not taken
 *    silently;
 *  - a server that stops answering is logged as a command timeout with its
 *    length, not as EAGAIN's "Resource temporarily unavailable";
 *  - redis+cluster:// naming a server without cluster support fails at
 *    once with LW_ECONFIG and one error line, not after the whole wait;
 *  - a server whose maxmemory-policy may evict held locks (allkeys-*,
 *    volatile-*: anything but noeviction) is named in one warning, however
 *    many connections go to it; a noeviction one in none.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char lines[256][512];
static int nlines;

static void capture(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&mu);
    if (nlines < 256)
        snprintf(lines[nlines++], sizeof lines[0], "%s", msg);
    pthread_mutex_unlock(&mu);
}

static int logged(const char *needle)
{
    int n = 0;

    pthread_mutex_lock(&mu);
    for (int i = 0; i < nlines; i++)
        n += strstr(lines[i], needle) != NULL;
    pthread_mutex_unlock(&mu);
    return n;
}

static void show(void)
{
    for (int i = 0; i < nlines; i++)
        fprintf(stderr, "  log: %s\n", lines[i]);
}

int main(void)
{
    rh_server s;
    lw_guard g;
    lw_config cfg;

    CHECK_EQ(rh_start(&s, NULL), 0);
    setenv("LOCKWEAVE_LOG", "bogus", 1);
    setenv("LOCKWEAVE_CONNECT_TIMEOUT_MS", " 500", 1);
    setenv("LOCKWEAVE_HANDOFF_MS", "+2", 1);
    setenv("LOCKWEAVE_WAIT_TIMEOUT_MS", "100 ", 1);
    lw_set_logger(capture, NULL, LW_LOG_INFO);
    CHECK_MSG(logged("ignoring LOCKWEAVE_LOG=bogus") == 1, "bad level");

    lw_config_init(&cfg);
    cfg.redis_url = s.url;
    cfg.command_timeout_ms = 300;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    if (logged("ignoring LOCKWEAVE_CONNECT_TIMEOUT_MS= 500") != 1 ||
        logged("ignoring LOCKWEAVE_HANDOFF_MS=+2") != 1 ||
        logged("ignoring LOCKWEAVE_WAIT_TIMEOUT_MS=100 ") != 1) {
        show();
        CHECK_MSG(0, "a bad *_MS value was taken silently");
    }
    /* The defaults apply: locking works. */
    CHECK_RC(lock_str(&g, "values", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* A stopped server: the connection is open, no reply comes. */
    CHECK_EQ(rh_pause(&s), 0);
    CHECK_RC(lock_str(&g, "values", 5000, 0), LW_EREDIS);
    CHECK_EQ(rh_resume(&s), 0);
    if (logged("no reply within 300 ms (command timeout)") < 1 ||
        logged("temporarily unavailable") != 0) {
        show();
        CHECK_MSG(0, "the timeout was not logged as one");
    }

    /* Not a cluster node. */
    char url[128];
    snprintf(url, sizeof url, "redis+cluster://127.0.0.1:%d", s.port);
    cfg.redis_url = url;
    cfg.command_timeout_ms = 0;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    int64_t t0 = now_ms();
    for (int i = 0; i < 3; i++)
        CHECK_RC(lock_str(&g, "values", 5000, 5000), LW_ECONFIG);
    CHECK_MSG(now_ms() - t0 < 2000, "took %lld ms", (long long)(now_ms() - t0));
    if (logged("is not a Redis Cluster node") != 1 ||
        logged("no node told the slot map") != 0) {
        show();
        CHECK_MSG(0, "not one line saying the server is no cluster node");
    }

    /* Eviction policies. */
    static const char *const allkeys[] = {"--maxmemory-policy", "allkeys-lru",
                                          NULL};
    static const char *const volatile_[] = {"--maxmemory-policy",
                                            "volatile-lru", NULL};
    rh_opts o;
    rh_server ev;
    rh_opts_init(&o);
    o.extra_args = allkeys;
    CHECK_EQ(rh_start(&ev, &o), 0);
    use_server(&ev);
    for (int i = 0; i < 3; i++) {
        CHECK_RC(lock_str(&g, "values", 5000, 0), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        use_server(&ev); /* a new configuration: new connections */
    }
    CHECK_MSG(logged("maxmemory-policy allkeys-lru") == 1, "eviction warning");
    rh_stop(&ev);
    o.extra_args = volatile_;
    CHECK_EQ(rh_start(&ev, &o), 0);
    use_server(&ev);
    CHECK_RC(lock_str(&g, "values", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_MSG(logged("maxmemory-policy volatile-lru") == 1, "volatile-lru");
    rh_stop(&ev);
    use_server(&s); /* noeviction, Redis's default */
    CHECK_RC(lock_str(&g, "values-noeviction", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_MSG(logged("maxmemory-policy") == 2, "noeviction warned");

    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    lw_shutdown();
    rh_stop(&s);
    printf("env_values: ok\n");
    return 0;
}

/* URL parsing through lw_configure(): malformed URLs are LW_ECONFIG and leave
 * the previous configuration in force; well-formed ones are accepted and,
 * when they point at a live server (TCP, unix socket), work. */
#include "util.h"

#include <stdio.h>
#include <string.h>

static int configure(const char *url)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 500;
    cfg.command_timeout_ms = 1000;
    return lw_configure(&cfg);
}

static void lock_once(const char *what)
{
    lw_guard g;
    int rc = lock_str(&g, "url-test", 5000, 1000);
    CHECK_MSG(rc == LW_OK, "%s: lock returned %s", what, lw_strerror(rc));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

/* Returns how many bad URLs were wrongly accepted (all are tried). */
static int bad_urls(const char *good_url)
{
    static const char *const bad[] = {
        "http://127.0.0.1:6379",      /* unknown scheme */
        "127.0.0.1:6379",             /* no scheme */
        "redis://",                   /* no host */
        "redis://127.0.0.1:abc",      /* port not a number */
        "redis://127.0.0.1:99999",    /* port out of range */
        "redis://127.0.0.1:-1",       /* negative port */
        "redis://127.0.0.1:6379/x",   /* db not a number */
        "redis://127.0.0.1:6379/-1",  /* negative db */
        "redis://127.0.0.1:6379/0/1", /* trailing junk */
        "unix://",                    /* no socket path */
        "redis://127.0.0.1:6379 x",   /* trailing junk */
        /* Redlock: one server named twice would vote twice. */
        "redis://127.0.0.1:7001,redis://127.0.0.1:7001,redis://127.0.0.1:7002",
        "redis://localhost:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7001",
        "redis://u:p@127.0.0.1:7001/3,redis://127.0.0.1:7001/3",
        "unix:///dev/null,unix:///dev/../dev/null,redis://127.0.0.1:7001",
    };
    int accepted = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = configure(bad[i]);
        if (rc != LW_ECONFIG) {
            fprintf(stderr,
                    "lw_configure(\"%s\") returned %d (%s), expected "
                    "LW_ECONFIG\n",
                    bad[i], rc, lw_strerror(rc));
            accepted++;
        }
        /* The good configuration made before stays in force (unless the
         * bad one was wrongly accepted). */
        if (rc == LW_ECONFIG)
            lock_once(bad[i]);
        else
            configure(good_url);
    }
    return accepted;
}

static void good_urls(const rh_server *s)
{
    char url[256];
    static const char *const forms[] = {
        "redis://127.0.0.1:%d",
        "redis://127.0.0.1:%d/0",
        "redis://127.0.0.1:%d/5",
        "redis://localhost:%d",
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(url, sizeof url, forms[i], s->port);
        int rc = configure(url);
        CHECK_MSG(rc == LW_OK, "lw_configure(\"%s\") returned %d (%s)", url, rc,
                  lw_strerror(rc));
        lock_once(url);
    }
    /* Redlock masters: other ports, other databases, other addresses. */
    CHECK_RC(configure("redis://127.0.0.1:7001,redis://127.0.0.1:7002,"
                       "redis://127.0.0.1:7003"),
             LW_OK);
    CHECK_RC(configure("redis://127.0.0.1:7001/1,redis://127.0.0.1:7001/2,"
                       "redis://127.0.0.2:7001"),
             LW_OK);
    /* Accepted without connecting (nothing listens there, maybe). */
    CHECK_RC(configure("redis://127.0.0.1:6379"), LW_OK);
    CHECK_RC(configure("redis://u:p@10.0.0.1:6380/15"), LW_OK);
}

static void unix_socket(const rh_server *s)
{
    char url[256];
    snprintf(url, sizeof url, "unix://%s", s->sock_path);
    CHECK_RC(configure(url), LW_OK);
    lock_once(url);
}

static void timeouts_and_prefix(const rh_server *s)
{
    lw_config cfg;
    lw_config_init(&cfg);
    CHECK(cfg.redis_url == NULL);
    CHECK(cfg.key_prefix == NULL);
    cfg.redis_url = s->url;
    cfg.connect_timeout_ms = -5; /* <= 0 means the default, not an error */
    cfg.command_timeout_ms = 0;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    lock_once("default timeouts");
}

int main(void)
{
    rh_opts o;
    rh_opts_init(&o);
    o.unix_socket = 1;
    rh_server s;
    CHECK_EQ(rh_start(&s, &o), 0);

    CHECK_RC(configure(s.url), LW_OK);
    lock_once("first");
    int accepted = bad_urls(s.url);
    good_urls(&s);
    unix_socket(&s);
    timeouts_and_prefix(&s);

    CHECK_EQ(accepted, 0);

    lw_shutdown();
    rh_stop(&s);
    printf("url: ok\n");
    return 0;
}

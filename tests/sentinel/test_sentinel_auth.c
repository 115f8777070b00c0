/*
 * Credentials behind Sentinel: the URL's are the data nodes', the
 * sentinels' come from lw_config (or LOCKWEAVE_SENTINEL_USER and
 * LOCKWEAVE_SENTINEL_PASSWORD), each checked where it belongs:
 * - both right (passwords; ACL users on both sides; the sentinels' from the
 *   environment): locks work;
 * - the sentinels' missing or wrong: LW_EAUTH at once, the log naming the
 *   settings to use;
 * - the data nodes' missing or wrong: LW_EAUTH at once;
 * - an ACL user who may not run ROLE: LW_EAUTH, the log naming ROLE.
 */
#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_sentinel.h"
#include "util.h"

#define DATA_PW     "data-secret"
#define SENTINEL_PW "sentinel-secret"

static rh_sentinel sn;
static rh_server *master;

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 15];
static size_t log_len;

static void capture(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&log_mu);
    if (log_len < sizeof log_text)
        log_len += (size_t)snprintf(log_text + log_len,
                                    sizeof log_text - log_len, "%s\n", msg);
    if (log_len >= sizeof log_text)
        log_len = sizeof log_text - 1;
    pthread_mutex_unlock(&log_mu);
}

static int logged(const char *what)
{
    int found;

    pthread_mutex_lock(&log_mu);
    found = strstr(log_text, what) != NULL;
    pthread_mutex_unlock(&log_mu);
    return found;
}

static void log_clear(void)
{
    pthread_mutex_lock(&log_mu);
    log_len = 0;
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_mu);
}

/* The harness's URL with userinfo (user:password@, or "") for the data
 * nodes. */
static void url_with(char *buf, size_t cap, const char *userinfo)
{
    const char *hosts = strstr(sn.url, "://") + 3;

    snprintf(buf, cap, "%.*s%s%s", (int)(hosts - sn.url), sn.url, userinfo,
             hosts);
}

/* Configure, take a lock and give it back: what each step returned. */
static int try_lock(const char *userinfo, const char *s_user,
                    const char *s_password)
{
    char url[400];
    lw_config cfg;
    lw_guard g;
    int64_t t0;
    int rc;

    url_with(url, sizeof url, userinfo);
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 500;
    cfg.command_timeout_ms = 1000;
    cfg.sentinel_user = s_user;
    cfg.sentinel_password = s_password;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    log_clear();
    t0 = now_ms();
    rc = lock_str(&g, "auth:1", 10000, 15000);
    if (rc == LW_OK) {
        CHECK(lock_exists(master, "auth:1"));
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    } else {
        /* Refused credentials are not retried for the lock's wait. */
        CHECK_RANGE(now_ms() - t0, 0, 5000);
    }
    return rc;
}

int main(void)
{
    rh_sentinel_opts o = {.password = DATA_PW,
                          .sentinel_password = SENTINEL_PW};

    CHECK_EQ(rh_sentinel_start(&sn, &o), 0);
    master = rh_sentinel_master_by(&sn, -1);
    CHECK(master != NULL);
    lw_set_logger(capture, NULL, LW_LOG_INFO);

    /* Both right. */
    CHECK_RC(try_lock(":" DATA_PW "@", NULL, SENTINEL_PW), LW_OK);

    /* The sentinels' password from the environment. */
    CHECK_EQ(setenv("LOCKWEAVE_SENTINEL_PASSWORD", SENTINEL_PW, 1), 0);
    CHECK_RC(try_lock(":" DATA_PW "@", NULL, NULL), LW_OK);
    CHECK_EQ(unsetenv("LOCKWEAVE_SENTINEL_PASSWORD"), 0);

    /* The sentinels' missing: they say NOAUTH; wrong: AUTH refused. */
    CHECK_RC(try_lock(":" DATA_PW "@", NULL, NULL), LW_EAUTH);
    CHECK_MSG(logged("LOCKWEAVE_SENTINEL_PASSWORD"),
              "the log does not say where the sentinels' password goes:\n%s",
              log_text);
    CHECK_RC(try_lock(":" DATA_PW "@", NULL, "wrong"), LW_EAUTH);
    CHECK(!logged(SENTINEL_PW) && !logged("wrong"));

    /* The data nodes' missing, wrong, or given to the sentinels instead. */
    CHECK_RC(try_lock("", NULL, SENTINEL_PW), LW_EAUTH);
    CHECK_RC(try_lock(":wrong@", NULL, SENTINEL_PW), LW_EAUTH);
    CHECK_RC(try_lock(":" SENTINEL_PW "@", NULL, DATA_PW), LW_EAUTH);
    CHECK(!logged(DATA_PW) && !logged(SENTINEL_PW));

    /* ACL users on both sides: the sentinels' may only ask where the
     * master is; the data nodes' only on the master (no failover here). */
    for (int i = 0; i < RH_SENTINELS; i++)
        CHECK_EQ(rh_ok(rh_cmd(&sn.sentinel[i],
                              "ACL SETUSER watcher on >watch-pw -@all "
                              "+sentinel|get-master-addr-by-name"),
                       "ACL SETUSER"),
                 0);
    CHECK_EQ(rh_ok(rh_cmd(master, "ACL SETUSER locker on >lock-pw ~* &* "
                                  "+@all"),
                   "ACL SETUSER"),
             0);
    CHECK_EQ(setenv("LOCKWEAVE_SENTINEL_USER", "watcher", 1), 0);
    CHECK_EQ(setenv("LOCKWEAVE_SENTINEL_PASSWORD", "watch-pw", 1), 0);
    CHECK_RC(try_lock("locker:lock-pw@", NULL, NULL), LW_OK);
    CHECK_EQ(unsetenv("LOCKWEAVE_SENTINEL_USER"), 0);
    CHECK_EQ(unsetenv("LOCKWEAVE_SENTINEL_PASSWORD"), 0);
    CHECK_RC(try_lock("locker:lock-pw@", "watcher", "watch-pw"), LW_OK);

    /* A data node user who may not run ROLE: the master cannot be told
     * from a replica, which is refused at connect, naming ROLE. */
    CHECK_EQ(rh_ok(rh_cmd(master, "ACL SETUSER norole on >nr-pw ~* &* "
                                  "+@all -role"),
                   "ACL SETUSER"),
             0);
    CHECK_RC(try_lock("norole:nr-pw@", "watcher", "watch-pw"), LW_EAUTH);
    CHECK_MSG(logged("may not run ROLE"), "ROLE not named:\n%s", log_text);

    lw_shutdown();
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    rh_sentinel_stop(&sn);
    printf("sentinel_auth: ok\n");
    return 0;
}

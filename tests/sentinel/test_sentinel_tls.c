/*
 * rediss+sentinel://: TLS to the sentinels and to the data nodes, each
 * checked against its own name.  The sentinels' certificate names
 * localhost (and 127.0.0.1), the URL's host for them; the data nodes' names
 * only localhost, while the sentinels report them as 127.0.0.1:
 * - no LOCKWEAVE_TLS_SERVER_NAME: the sentinels answer, the master is
 *   refused (LW_ETLS): it is checked against the address reported;
 * - LOCKWEAVE_TLS_SERVER_NAME=localhost: locks work, and a failover is
 *   followed over TLS;
 * - LOCKWEAVE_TLS_SERVER_NAME naming neither: the sentinels still answer
 *   (checked against the URL's names), the master is refused;
 * - a CA that signed none of them: LW_ETLS at once, no sentinel heard.
 */
#include <lockweave.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "rh_sentinel.h"
#include "util.h"

static rh_tls tls, stranger; /* stranger: a CA that signed none of them */
static rh_sentinel sn;

static atomic_int discovered;

static void on_log(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    if (strstr(msg, "Redis Sentinel: master " RH_SENTINEL_NAME " is ") != NULL)
        atomic_store(&discovered, 1);
}

static void configure(const char *ca, const char *server_name)
{
    lw_config cfg;

    lw_config_init(&cfg);
    cfg.redis_url = sn.url;
    cfg.connect_timeout_ms = 1000;
    cfg.command_timeout_ms = 2000;
    cfg.tls_ca_file = ca;
    cfg.tls_server_name = server_name;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    atomic_store(&discovered, 0);
}

int main(void)
{
    rh_server *old, *fresh;
    lw_guard g;

    CHECK_EQ(rh_tls_make(&tls), 0);
    CHECK_EQ(rh_tls_make(&stranger), 0);
    CHECK_EQ(rh_sentinel_start(&sn,
                               &(rh_sentinel_opts){
                                   .tls = &tls,
                                   .node_cert = tls.server,
                                   .node_key = tls.server_key,
                               }),
             0);
    CHECK(strncmp(sn.url, "rediss+sentinel://localhost:", 28) == 0);
    old = rh_sentinel_master_by(&sn, -1);
    CHECK(old != NULL);
    lw_set_logger(on_log, NULL, LW_LOG_INFO);

    configure(tls.ca, NULL);
    CHECK_RC(lock_str(&g, "tls:1", 10000, 1000), LW_ETLS);
    CHECK(atomic_load(&discovered));

    configure(tls.ca, "elsewhere.invalid");
    CHECK_RC(lock_str(&g, "tls:1", 10000, 1000), LW_ETLS);
    CHECK(atomic_load(&discovered));

    /* No sentinel verified: LW_ETLS at once, not at the lock's wait. */
    configure(stranger.ca, "localhost");
    {
        int64_t t0 = now_ms();
        CHECK_RC(lock_str(&g, "tls:1", 10000, 20000), LW_ETLS);
        CHECK_RANGE(now_ms() - t0, 0, 10000);
        CHECK(!atomic_load(&discovered));
    }

    configure(tls.ca, "localhost");
    CHECK_RC(lock_str(&g, "tls:1", 10000, 1000), LW_OK);
    CHECK(lock_exists(old, "tls:1"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* A lock held while its master is killed: kept or reported lost,
     * and the next one is served by the new master, over TLS. */
    CHECK_RC(lock_str(&g, "tls:2", 8000, 1000), LW_OK);
    CHECK_EQ(rh_kill(old), 0);
    fresh = rh_sentinel_wait_failover(&sn, old, 20000);
    CHECK(fresh != NULL);
    {
        int rc = lw_guard_leave(&g);
        CHECK_MSG(rc == LW_OK || rc == LW_ELOST, "%s", lw_strerror(rc));
    }
    CHECK_RC(lock_str(&g, "tls:3", 10000, 5000), LW_OK);
    CHECK(lock_exists(fresh, "tls:3"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    lw_shutdown();
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    rh_sentinel_stop(&sn);
    rh_tls_remove(&tls);
    rh_tls_remove(&stranger);
    printf("sentinel_tls: ok\n");
    return 0;
}

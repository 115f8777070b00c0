/*
 * <lockweave.h> alone, compiled as C11 and as C++ (tests/abi/CMakeLists.txt
 * gives the flags): the header's declarations, and its macros where a
 * program uses them.
 */
#include <lockweave.h>

#ifndef __cplusplus
REDIS_LOCK("stock:{id}", 10s, 5s)
int lw_test_annotated(long id);
#endif

int lw_test_header(void);

int lw_test_header(void)
{
    lw_config cfg;
    lw_stats st;
    lw_lock_opts o;
    lw_guard g, h;
    lw_guard *gs[2] = {&g, &h};
    void (*get)(lw_stats *) = &lw_stats_get;
    int (*lock)(lw_guard *, const char *, size_t, const lw_lock_opts *) =
        lw_lock;
    int rc;

    lw_config_init(&cfg);
    (lw_config_init)(&cfg);
    cfg.key_prefix = "app:";
    rc = lw_configure(&cfg);
    rc |= (lw_configure)(&cfg);
    lw_stats_get(&st);
    (lw_stats_get)(&st);
    get(&st);
    o.expire_ms = 1000;
    o.wait_ms = 0;
    o.max_renew = -1;
    o.flags = LW_LOCK_READ;
    o.hold_at_least_ms = 0;
    o.permits = 0;
    lw_guard_init(&g, &o);
    lw_guard_init(&h, NULL);
    lw_guard_key_str(&g, "k");
    lw_guard_key_i64(&h, -1);
    rc |= lw_guard_enter_all(gs, 2);
    rc |= lw_guard_leave_all(gs, 2);
    rc |= lw_lock(&g, "k", 1, &o);
    rc |= (lw_lock)(&g, "k", 1, &o);
    rc |= lock(&g, "k", 1, &o);
    (lw_guard_init)(&g, &o);
    lw_guard_discard(&g);
    return rc + (int)st.acquired + (int)sizeof LW_VERSION + LW_VERSION_NUM;
}

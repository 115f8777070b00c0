/* A bad LOCKWEAVE_REDIS_URL: the first guarded call (no lw_configure()) fails
 * with LW_ECONFIG, keeps failing the same way, never crashes; lw_configure()
 * with a good URL then repairs the process. */
#include "util.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    rh_server s;
    CHECK_EQ(rh_start(&s, NULL), 0);
    /* Before any lockweave call: the runtime reads it lazily. */
    setenv("LOCKWEAVE_REDIS_URL", "redis://127.0.0.1:notaport", 1);

    int entered = 0;
    for (int i = 0; i < 3; i++) {
        lw_guard g;
        int rc = lock_str(&g, "env", 5000, 200);
        CHECK_RC(rc, LW_ECONFIG);
        CHECK_RC(lw_last_error(), LW_ECONFIG);
        if (rc == LW_OK)
            entered = 1;
    }
    /* The long form fails the same way, and discarding after it is safe. */
    lw_guard g;
    lw_lock_opts o = lock_opts(5000, 0, -1);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "env");
    CHECK_RC(lw_guard_enter(&g), LW_ECONFIG);
    lw_guard_discard(&g);
    CHECK_EQ(entered, 0);
    CHECK_EQ(lw_still_held(), 0);

    /* Code overrides the environment. */
    use_server(&s);
    CHECK_RC(lock_str(&g, "env", 5000, 200), LW_OK);
    CHECK_EQ(lock_exists(&s, "env"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&s, "env"), 0);

    lw_shutdown();
    rh_stop(&s);
    printf("env_url: ok\n");
    return 0;
}

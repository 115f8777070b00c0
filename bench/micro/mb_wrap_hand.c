/* The same lock written by hand with the guard API: what the woven wrapper
 * should cost no more than. */
#include <lockweave.h>

#include "mb_wrap.h"

static int body(int64_t id)
{
    return (int)(id & 7); /* no work: only the lock's cost is measured */
}

int mb_section(int64_t id)
{
    static const lw_lock_opts o = {
        .expire_ms = 10000u, .wait_ms = 5000u, .max_renew = -1};
    lw_guard g;
    int r;

    lw_guard_init(&g, &o);
    lw_guard_key_bytes(&g, "mb:", 3);
    lw_guard_key_i64(&g, id);
    if (lw_guard_enter(&g) != LW_OK)
        return 0;
    r = body(id);
    lw_guard_leave(&g);
    return r;
}

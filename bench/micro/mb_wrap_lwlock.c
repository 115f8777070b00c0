/* The lock as most people would write it by hand: snprintf the key, then the
 * short form lw_lock().  For scale next to the woven wrapper. */
#include <lockweave.h>
#include <stdio.h>

#include "mb_wrap.h"

static int body(int64_t id)
{
    return (int)(id & 7); /* no work: only the lock's cost is measured */
}

int mb_section(int64_t id)
{
    static const lw_lock_opts o = {
        .expire_ms = 10000u, .wait_ms = 5000u, .max_renew = -1};
    char key[32];
    lw_guard g;
    int r, n = snprintf(key, sizeof key, MB_WRAP_KEY_FMT, (long long)id);

    if (lw_lock(&g, key, (size_t)n, &o) != LW_OK)
        return 0;
    r = body(id);
    lw_guard_leave(&g);
    return r;
}

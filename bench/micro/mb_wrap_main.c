/*
 * 4. Driver of the wrapper benchmark: calls mb_section() N times, run under
 * valgrind --tool=callgrind --toggle-collect=mb_section by run.sh, so only
 * the instructions inside mb_section (wrapper + runtime + hiredis, client
 * side) are counted — never this loop, the connection set-up or the
 * watchdog thread.
 *
 *   mb_wrap_* acquire N   each call takes and releases the lock in Redis
 *   mb_wrap_* reenter N   an outer lock on the same key is held by hand, so
 *                         each call only re-enters: no round trip, and the
 *                         wrapper's own instructions weigh the most
 */
#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_wrap.h"

#define ID 42

int main(int argc, char **argv)
{
    static const lw_lock_opts o = {
        .expire_ms = 60000u, .wait_ms = 5000u, .max_renew = -1};
    int reenter = argc > 1 && strcmp(argv[1], "reenter") == 0;
    long n = argc > 2 ? atol(argv[2]) : 1000, sum = 0, failed = 0;
    lw_guard warm, outer;
    char key[32];
    int klen = snprintf(key, sizeof key, MB_WRAP_KEY_FMT, (long long)ID);

    if (argc < 2 || (!reenter && strcmp(argv[1], "acquire") != 0) || n <= 0) {
        fprintf(stderr, "usage: %s acquire|reenter N\n", argv[0]);
        return 2;
    }
    /* First use opens the connection, loads the scripts, starts the
     * watchdog: done here, outside what is collected. */
    if (lw_lock(&warm, "mb:warm", 7, &o) != LW_OK)
        return 1;
    lw_guard_leave(&warm);
    if (reenter && lw_lock(&outer, key, (size_t)klen, &o) != LW_OK)
        return 1;
    for (long i = 0; i < n; i++) {
        sum += mb_section(ID);
        failed += lw_last_error() != LW_OK;
    }
    if (reenter)
        lw_guard_leave(&outer);
    printf("calls %ld failed %ld sum %ld\n", n, failed, sum);
    lw_shutdown();
    return failed != 0;
}

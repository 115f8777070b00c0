/*
 * 1. Re-entering a held lock: ns per lw_lock()/lw_guard_leave() pair on a key
 * this thread already holds.  The runtime promises no round trip for it; the
 * benchmark checks that in Redis's own INFO commandstats, not in the
 * runtime's statistics, since a stray command is exactly the bug to catch.
 */
#include <lockweave.h>
#include <stdio.h>

#include "mb.h"

#define ROUNDS 5
/* A lease far longer than the run: a watchdog renewal of the outer lock must
 * not show up as a "round trip" of the loop. */
#define LEASE_MS 120000u

static const char key[] = "mb:reentry:stock:42";

static double one_round(long iters, const lw_lock_opts *o, long *failures)
{
    lw_guard g;
    uint64_t t0 = mb_now_ns();

    for (long i = 0; i < iters; i++) {
        if (lw_lock(&g, key, sizeof key - 1, o) != LW_OK)
            ++*failures;
        else if (lw_guard_leave(&g) != LW_OK)
            ++*failures;
    }
    return (double)(mb_now_ns() - t0) / (double)iters;
}

int main(int argc, char **argv)
{
    long iters = mb_quick(argc, argv) ? 2000000 : 10000000, failures = 0;
    const lw_lock_opts o = {
        .expire_ms = LEASE_MS, .wait_ms = 1000u, .max_renew = -1};
    redisContext *rc = mb_redis_connect();
    double ns[ROUNDS], best;
    long long calls0, calls1;
    lw_stats s0, s1;
    lw_guard outer;
    char note[200];

    if (lw_lock(&outer, key, sizeof key - 1, &o) != LW_OK)
        mb_die("cannot take the outer lock");
    one_round(100000, &o, &failures); /* warm caches and branch predictors */

    calls0 = mb_cmdstat_calls(rc, NULL);
    lw_stats_get(&s0);
    for (int r = 0; r < ROUNDS; r++)
        ns[r] = one_round(iters, &o, &failures);
    lw_stats_get(&s1);
    calls1 = mb_cmdstat_calls(rc, NULL);
    lw_guard_leave(&outer);

    best = ns[0];
    for (int r = 1; r < ROUNDS; r++)
        best = ns[r] < best ? ns[r] : best;
    double med = mb_median_d(ns, ROUNDS);
    snprintf(note, sizeof note,
             "%d rounds x %ld pairs; min %.1f ns; failures %ld; "
             "runtime counted %llu re-entries",
             ROUNDS, iters, best, failures,
             (unsigned long long)(s1.reentered - s0.reentered));
    mb_emit("reentry", "ns_per_pair_median", med, "ns", "< 100",
            med < 100 && failures == 0, note);
    snprintf(note, sizeof note,
             "Redis commands (INFO commandstats, all but INFO) during %ld "
             "re-entries; watchdog renewals in the window: %llu",
             (long)ROUNDS * iters,
             (unsigned long long)(s1.renewed - s0.renewed));
    mb_emit("reentry", "redis_calls_during_loop", (double)(calls1 - calls0),
            "calls", "0", calls1 == calls0, note);
    redisFree(rc);
    lw_shutdown();
    return failures != 0;
}

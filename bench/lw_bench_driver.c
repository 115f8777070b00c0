/*
 * lockweave's driver for the peer benchmark harness (../shared/peers): same
 * command line, same workloads, same JSON line as the other drivers.  The
 * critical sections are ordinary functions guarded with REDIS_LOCK and woven
 * by lockweave_generate(), so the figures are what users' code gets.
 *
 * --ttl-ms and --wait-ms must match the annotations (10 s, the harness's
 * values): durations are compile-time constants of the annotation.  lockweave
 * has no fixed retry interval — waiters wake on release — so --retry-ms is
 * accepted and echoed, not used.
 *
 * Two workloads of its own, which the peers' process-only drivers do not
 * have: threads (--procs processes x --threads threads, one key: the lock
 * bench:c, the counter bench:counter) and threads-keys (the same, each
 * section on one of --keys keys picked at random: bench:s:K, bench:sc:K).
 * --iters is then per thread, and the JSON line gains "threads" and "keys".
 * lockweave keeps one connection per thread; each thread also has its own
 * hiredis connection for the counter.  bench/threads/hand_threads.c is the
 * hand-written lock with the same command line.
 *
 * Everything but the sections — options, processes and threads, results,
 * counters, the JSON line — is bench/driver.c's, shared with hand_threads.c.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>

#define TTL_MS  10000
#define WAIT_MS 10000

REDIS_LOCK("bench:warm:{idx}", 10s, 10s, on_fail = -1)
static int section_warm(int idx)
{
    (void)idx;
    return 0;
}

REDIS_LOCK("bench:u", 10s, 10s, on_fail = -1)
static int section_uncontended(void)
{
    return 0;
}

REDIS_LOCK("bench:c", 10s, 10s, on_fail = -1)
static int section_contended(redisContext *c)
{
    bench_bump(c, "bench:counter");
    return 0;
}

REDIS_LOCK("bench:s:{k}", 10s, 10s, on_fail = -1)
static int section_spread(int k, redisContext *c)
{
    char counter[32];

    snprintf(counter, sizeof counter, "bench:sc:%d", k);
    bench_bump(c, counter);
    return 0;
}

static void warm(redisContext *c, int idx, int i)
{
    (void)c, (void)i;
    if (section_warm(idx) != 0)
        bench_die(lw_strerror(lw_last_error()));
}

static int run_section(redisContext *c, uint64_t *seed)
{
    switch (bench_opt.workload) {
    case BENCH_UNCONTENDED:
        return section_uncontended();
    case BENCH_CONTENDED:
    case BENCH_THREADS:
        return section_contended(c);
    default:
        return section_spread(bench_pick_key(seed, bench_nkeys()), c);
    }
}

static int section(redisContext *c, int idx, int i, uint64_t *seed)
{
    (void)idx, (void)i;
    if (run_section(c, seed) == 0)
        return 0;
    if (lw_last_error() != LW_ETIMEOUT)
        bench_die(lw_strerror(lw_last_error()));
    return 1;
}

static const struct bench_driver driver = {
    .name = "lw_bench_driver",
    .usage = "usage: lw_bench_driver --workload "
             "uncontended|contended|spread|threads|threads-keys --port PORT "
             "[--procs P (8; threads: 4)] [--threads T] [--keys K] [--iters N] "
             "[--ttl-ms 10000] [--wait-ms 10000] [--retry-ms R] "
             "[--impl NAME]\n"
             "  threads, threads-keys: P processes x T threads (default 16), "
             "N sections per thread, on one key or on K (default 64)\n",
    .first_workload = BENCH_UNCONTENDED,
    .impl = "lockweave",
    .impl_flag = 1,
    .warm = warm,
    .section = section,
};

int main(int argc, char **argv)
{
    char url[64];
    const char *lock_url;

    bench_parse_args(&driver, argc, argv);
    if (bench_opt.ttl_ms != TTL_MS || bench_opt.wait_ms != WAIT_MS)
        bench_die("--ttl-ms and --wait-ms must be 10000: the annotations say "
                  "10s");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", bench_opt.port);
    /* bench/redlock/run.sh locks on several masters (counters stay on
     * --port): LW_BENCH_LOCK_URL is then the lock's LOCKWEAVE_REDIS_URL. */
    lock_url = getenv("LW_BENCH_LOCK_URL");
    setenv("LOCKWEAVE_REDIS_URL", lock_url ? lock_url : url, 1);
    bench_run(bench_nkeys());
    return 0;
}

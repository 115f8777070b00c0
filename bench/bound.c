/*
 * The serial bound of the one-key workloads: the most sections per second
 * any lock could serve, measured with the same sections and no lock.
 *
 * Sections on one key never overlap, so however a lock hands the key on,
 * they run one after another; the best a lock can do is add nothing between
 * them.  Here one worker runs every worker's sections back to back (--procs x
 * --threads x --iters of them), each the same read-modify-write of the
 * counter as the lock drivers' (bench_bump):
 *   threads:   the section alone (a lock may pass the key between threads of
 *              one process without Redis);
 *   contended: the section plus one PING, because between two processes'
 *              sections the release must reach Redis and the next holder
 *              must hear of it: one round trip, whatever the protocol.
 * A lock's ratio to this is the share of the ceiling it reaches; the bound's
 * ratio to another lock is the most any lock could reach against that lock.
 * Same command line and JSON line as the other drivers (bench/driver.c); the
 * line says procs 1 (and threads 1): the one worker that ran them all.
 */
#include "driver.h"

static void warm(redisContext *c, int idx, int i)
{
    (void)idx, (void)i;
    freeReplyObject(bench_cmd(c, "PING"));
}

static int section(redisContext *c, int idx, int i, uint64_t *seed)
{
    (void)idx, (void)i, (void)seed;
    if (bench_opt.workload == BENCH_CONTENDED)
        freeReplyObject(bench_cmd(c, "PING"));
    bench_bump(c, "bench:counter");
    return 0;
}

static const struct bench_driver driver = {
    .name = "lw_bench_bound",
    .usage = "usage: lw_bench_bound --workload contended|threads --port PORT "
             "[--procs P] [--threads T] [--iters N] [--ttl-ms T] "
             "[--wait-ms W] [--retry-ms R]\n"
             "  runs the P x T x N sections of the workload one after another "
             "in one worker, with no lock\n",
    .first_workload = BENCH_CONTENDED,
    .impl = "serial-bound",
    .impl_flag = 0,
    .warm = warm,
    .section = section,
};

int main(int argc, char **argv)
{
    bench_parse_args(&driver, argc, argv);
    if (bench_opt.workload != BENCH_CONTENDED &&
        bench_opt.workload != BENCH_THREADS)
        bench_usage();
    bench_opt.iters *= bench_opt.procs * bench_opt.threads;
    bench_opt.procs = 1;
    bench_opt.threads = 1;
    bench_run(1);
    return 0;
}

/*
 * The hand-written hiredis lock with threads: the baseline of the threads
 * workloads, P processes x T threads, one hiredis connection per thread.
 *
 * The lock is a copy of the algorithm of the peer harness's hand-written
 * lock (../shared/peers/c/hiredis_lock.c), not a call into it: that driver
 * is one process, one connection, no threads, and the harness is not ours
 * to change.  Keep the two the same:
 *   acquire: SET key token NX PX ttl; while busy, usleep(retry-ms) unless the
 *            next try would pass wait-ms (then give up);
 *   release: EVAL of a compare-and-delete Lua script.
 *
 * Same command line and JSON line as bench/lw_bench_driver.c's threads
 * workloads: threads (one key: the lock bench:c, the counter bench:counter)
 * and threads-keys (each section on one of --keys keys picked at random:
 * bench:s:K, bench:sc:K); --iters sections per thread, each a non-atomic
 * read-modify-write of the key's counter; violations = sections - the sum
 * of the counters.  Everything but the lock — options, processes and
 * threads, results, counters, the JSON line — is ../driver.c's, shared with
 * lw_bench_driver.c.
 */
#include "driver.h"

#include <unistd.h>

static const char *const release_lua =
    "if redis.call('get',KEYS[1])==ARGV[1] then return "
    "redis.call('del',KEYS[1]) else return 0 end";

/* 1: acquired, 0: wait-ms ran out. */
static int acquire(redisContext *c, const char *key, const char *token)
{
    uint64_t deadline = bench_now_ns() + (uint64_t)bench_opt.wait_ms * 1000000u;

    for (;;) {
        redisReply *r =
            bench_cmd(c, "SET %s %s NX PX %d", key, token, bench_opt.ttl_ms);
        int ok = r->type == REDIS_REPLY_STATUS; /* +OK; nil when busy */

        freeReplyObject(r);
        if (ok)
            return 1;
        if (bench_now_ns() + (uint64_t)bench_opt.retry_ms * 1000000u > deadline)
            return 0;
        usleep((useconds_t)bench_opt.retry_ms * 1000);
    }
}

static void release(redisContext *c, const char *key, const char *token)
{
    freeReplyObject(bench_cmd(c, "EVAL %s 1 %s %s", release_lua, key, token));
}

static const struct bench_driver driver = {
    .name = "hand_threads",
    .usage = "usage: hand_threads --workload threads|threads-keys --port PORT "
             "[--procs P] [--threads T] [--keys K] [--iters N] "
             "[--ttl-ms T] [--wait-ms W] [--retry-ms R]\n"
             "  P processes (default 4) x T threads (default 16), N sections "
             "per thread, on one key or on K (default 64)\n",
    .first_workload = BENCH_THREADS,
    .impl = "hiredis-handwritten",
    .impl_flag = 0,
    .acquire = acquire,
    .release = release,
};

int main(int argc, char **argv)
{
    bench_parse_args(&driver, argc, argv);
    if (bench_opt.retry_ms < 0)
        bench_usage();
    bench_run(bench_nkeys());
    return 0;
}

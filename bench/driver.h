/*
 * What the benchmark drivers with the peer harness's command line share:
 * bench/lw_bench_driver.c (lockweave's woven REDIS_LOCK sections),
 * bench/threads/hand_threads.c (the hand-written hiredis lock),
 * bench/fifo.c (the FIFO floor) and bench/bound.c (no lock).  One place for
 * the options, the start-up of P processes x T threads, the sections of a
 * hand-written lock, the results, the counters and the JSON line, so that
 * the drivers measure the same way and differ only in their locks.
 *
 * Each worker (a process of a process workload, a thread of a threads one)
 * has its own hiredis connection, runs WARMUP unmeasured sections, says
 * ready, waits for every other worker and runs --iters sections, each timed.
 * A section (but uncontended's, which is empty) does a non-atomic
 * read-modify-write of a counter (bench_bump); violations = sections - the
 * sum of the counters.
 */
#ifndef LW_BENCH_DRIVER_H
#define LW_BENCH_DRIVER_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#define BENCH_NKEYS  1000 /* spread's keys, and the most threads-keys takes */
#define BENCH_WARMUP 50   /* unmeasured sections per worker */

/* The harness's three process workloads (one thread per process), then the
 * two threads workloads. */
enum bench_workload {
    BENCH_UNCONTENDED,
    BENCH_CONTENDED,
    BENCH_SPREAD,
    BENCH_THREADS,
    BENCH_THREADS_KEYS
};

/* The command line, with its defaults applied by bench_parse_args(). */
struct bench_opts {
    int workload, port, procs, threads, keys, iters, ttl_ms, wait_ms, retry_ms;
    const char *impl;
};
extern struct bench_opts bench_opt;

/* What a driver brings to the shared part. */
struct bench_driver {
    const char *name;   /* the executable: the prefix of bench_die() */
    const char *usage;  /* the whole usage message */
    int first_workload; /* it runs first_workload .. BENCH_THREADS_KEYS */
    const char *impl;   /* the JSON line's "impl" */
    int impl_flag;      /* --impl NAME may replace it */
    /* One unmeasured section (i of BENCH_WARMUP) on worker idx's own key. */
    void (*warm)(redisContext *c, int idx, int i);
    /* Section i of worker idx, on c: 0 when done, 1 when --wait-ms ran out
     * (counted as failed); dies on anything else.  *seed is the worker's,
     * for bench_pick_key(). */
    int (*section)(redisContext *c, int idx, int i, uint64_t *seed);
    /* A hand-written lock gives these instead of warm and section, which
     * are then driver.c's: the woven driver's keys and counters, a token
     * unique to the section, the warm-up on "bench:warm:<idx>".  acquire:
     * 1 taken, 0 when --wait-ms ran out. */
    int (*acquire)(redisContext *c, const char *key, const char *token);
    void (*release)(redisContext *c, const char *key, const char *token);
};

_Noreturn void bench_die(const char *what);
_Noreturn void bench_usage(void);

/* CLOCK_MONOTONIC in ns: one clock for every thread and process. */
uint64_t bench_now_ns(void);

/* A new connection to --port on 127.0.0.1; dies on failure. */
redisContext *bench_connect(void);

/* redisCommand that dies on a lost connection or an error reply. */
redisReply *bench_cmd(redisContext *c, const char *fmt, ...);

/* The deliberately non-atomic read-modify-write the lock must protect. */
void bench_bump(redisContext *c, const char *counter);

/* The next of n keys, picked at random with the worker's *seed (xorshift64):
 * the same sequence in every driver. */
int bench_pick_key(uint64_t *seed, int n);

/* How many counters the workload bumps, which is how many keys it locks:
 * 0 uncontended (its sections are empty), BENCH_NKEYS spread, --keys
 * threads-keys, else 1. */
int bench_nkeys(void);

/* The counters' sum, read with one pipeline (n as bench_run()'s counters),
 * and their reset before a run. */
long long bench_counted(redisContext *c, int n);
void bench_reset_counters(redisContext *c);

/* Sorts lat[0..n) (ns/1000: microseconds); then its q-quantile, nearest
 * rank. */
void bench_sort_latencies(uint32_t *lat, long n);
uint32_t bench_percentile(const uint32_t *sorted, long n, double q);

/* Reads the command line into bench_opt and checks it (usage otherwise).
 * Uncontended runs one process whatever --procs says: nothing to contend. */
void bench_parse_args(const struct bench_driver *d, int argc, char **argv);

/* Resets the counters, runs the workload in --procs processes of --threads
 * workers each and prints its JSON line.  counters: how many the workload
 * bumps: 1 is bench:counter, more are bench:sc:0 .. bench:sc:counters-1, 0
 * is none (no violation can be counted). */
void bench_run(int counters);

#endif

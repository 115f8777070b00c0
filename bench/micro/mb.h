/*
 * Shared helpers of the micro-benchmarks: a clock, the Redis the run started
 * (for INFO counters, read behind the runtime's back), process CPU and RSS,
 * percentiles, and the one JSON line per figure that run.sh turns into its
 * table.
 */
#ifndef MB_H
#define MB_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns: one clock for every thread and process. */
uint64_t mb_now_ns(void);

/* A private connection to $LOCKWEAVE_REDIS_URL (redis://host:port only: the
 * benchmarks always run against the server run.sh started).  Exits on
 * failure: a benchmark without its server has nothing to measure. */
redisContext *mb_redis_connect(void);

/* "calls" of one command in INFO commandstats (0 if never called), or the sum
 * over every command except INFO itself when cmd is NULL. */
long long mb_cmdstat_calls(redisContext *c, const char *cmd);

/* An integer field of INFO (e.g. "process_id"); -1 if absent. */
long long mb_info_int(redisContext *c, const char *field);

/* CPU seconds (user + system) of this process, all threads. */
double mb_cpu_self_s(void);

/* CPU seconds of another process from /proc/PID/stat; -1 if unreadable. */
double mb_cpu_pid_s(long pid);

/* Resident set size of this process in bytes (/proc/self/statm). */
long mb_rss_bytes(void);

/* Sorts v in place and returns its p-th percentile (0..100, nearest rank). */
uint64_t mb_percentile(uint64_t *v, size_t n, double p);
double mb_median_d(double *v, size_t n); /* sorts v */

/* One result line on stdout:
 *   {"bench":B,"metric":M,"value":V,"unit":U,"target":T,"ok":true|false|null,
 *    "note":N}
 * target NULL: no target (ok is null); ok < 0 likewise. */
void mb_emit(const char *bench, const char *metric, double value,
             const char *unit, const char *target, int ok, const char *note);

/* 1 when argv has --quick. */
int mb_quick(int argc, char **argv);

/* Prints "mb: <what>" to stderr and exits 1. */
_Noreturn void mb_die(const char *what);

#endif

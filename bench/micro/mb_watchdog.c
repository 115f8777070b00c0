/*
 * 3. The watchdog holding many leases: N locks of 1 s each, held in one
 * process for a while.  Measures renewals per second (the runtime's counter;
 * Redis's EVALSHA count shows the batching), CPU of the
 * process over the holding window (getrusage: all threads, but the holders
 * sleep, so it is the watchdog's), and RSS per lease.
 *
 * Thousands of threads would measure the threads, so a few threads each hold
 * a slice of the leases by nesting guards on distinct keys, left in reverse
 * order.  The guards live in one array allocated and touched before the "RSS
 * before" reading: in real code they are on the callers' stacks, so they are
 * not the runtime's per-lease cost (reported separately: 512 bytes each).
 */
#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb.h"

#define THREADS  4
#define LEASE_MS 1000u

static struct {
    int leases;
    lw_guard *guards;
    pthread_barrier_t step; /* main + holders, once per phase */
    int failed_enter, lost, other;
} run;

static int key_of(int i, char *buf, size_t n)
{
    return snprintf(buf, n, "mb:wd:lease:%d", i);
}

static void *holder(void *arg)
{
    const lw_lock_opts o = {
        .expire_ms = LEASE_MS, .wait_ms = 0u, .max_renew = -1};
    int t = (int)(intptr_t)arg, lo = run.leases * t / THREADS,
        hi = run.leases * (t + 1) / THREADS, failed = 0, lost = 0, other = 0;
    char key[64];
    lw_guard warm;

    /* Phase 0: open this thread's connection outside the measured RSS. */
    int n = snprintf(key, sizeof key, "mb:wd:warm:%d", t);
    if (lw_lock(&warm, key, (size_t)n, &o) == LW_OK)
        lw_guard_leave(&warm);
    pthread_barrier_wait(&run.step);

    /* Phase 1: take this thread's slice, nested. */
    pthread_barrier_wait(&run.step);
    for (int i = lo; i < hi; i++) {
        n = key_of(i, key, sizeof key);
        if (lw_lock(&run.guards[i], key, (size_t)n, &o) != LW_OK) {
            failed++;
            hi = i; /* only what was entered is left below */
            break;
        }
    }
    pthread_barrier_wait(&run.step);

    /* Phase 2: the main thread measures; then leave in reverse order. */
    pthread_barrier_wait(&run.step);
    for (int i = hi - 1; i >= lo; i--) {
        int rc = lw_guard_leave(&run.guards[i]);
        lost += rc == LW_ELOST;
        other += rc != LW_OK && rc != LW_ELOST;
    }
    __atomic_fetch_add(&run.failed_enter, failed, __ATOMIC_RELAXED);
    __atomic_fetch_add(&run.lost, lost, __ATOMIC_RELAXED);
    __atomic_fetch_add(&run.other, other, __ATOMIC_RELAXED);
    return NULL;
}

/* Every lease's key must still exist with a TTL, checked in Redis itself:
 * lw_still_held() only sees a thread's innermost guard.  Pipelined PTTLs. */
static int count_alive(redisContext *c, long long *min_ttl)
{
    char key[64];
    int alive = 0;

    *min_ttl = -1;
    for (int i = 0; i < run.leases; i++) {
        key_of(i, key, sizeof key);
        redisAppendCommand(c, "PTTL lock:%s", key);
    }
    for (int i = 0; i < run.leases; i++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            mb_die("PTTL failed");
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
            alive++;
            if (*min_ttl < 0 || r->integer < *min_ttl)
                *min_ttl = r->integer;
        }
        freeReplyObject(r);
    }
    return alive;
}

int main(int argc, char **argv)
{
    int quick = mb_quick(argc, argv);
    double secs = quick ? 5 : 10;
    redisContext *rc = mb_redis_connect();
    long redis_pid = (long)mb_info_int(rc, "process_id");
    pthread_t th[THREADS];
    lw_stats s0, s1;
    char note[320];

    run.leases = quick ? 2000 : 10000;
    run.guards = malloc(sizeof(lw_guard) * (size_t)run.leases);
    if (run.guards == NULL)
        mb_die("out of memory");
    /* Not 0: malloc + memset(0) may become calloc and leave pages unmapped. */
    memset(run.guards, 0x5a, sizeof(lw_guard) * (size_t)run.leases);
    pthread_barrier_init(&run.step, NULL, THREADS + 1);
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, holder, (void *)(intptr_t)t) != 0)
            mb_die("pthread_create");

    pthread_barrier_wait(&run.step); /* connections open */
    long rss0 = mb_rss_bytes();
    uint64_t ta = mb_now_ns();
    pthread_barrier_wait(&run.step); /* go: take the leases */
    pthread_barrier_wait(&run.step); /* all taken */
    double acquire_s = (double)(mb_now_ns() - ta) / 1e9;
    long rss1 = mb_rss_bytes();

    lw_stats_get(&s0);
    long long ev0 = mb_cmdstat_calls(rc, "evalsha");
    double cpu0 = mb_cpu_self_s(), rcpu0 = mb_cpu_pid_s(redis_pid);
    uint64_t t0 = mb_now_ns();
    struct timespec ts = {(time_t)secs, 0};
    nanosleep(&ts, NULL);
    double cpu1 = mb_cpu_self_s(), rcpu1 = mb_cpu_pid_s(redis_pid);
    double wall = (double)(mb_now_ns() - t0) / 1e9;
    long long ev1 = mb_cmdstat_calls(rc, "evalsha");
    lw_stats_get(&s1);
    long rss2 = mb_rss_bytes();
    long long min_ttl;
    int alive = count_alive(rc, &min_ttl);

    pthread_barrier_wait(&run.step); /* leave */
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);

    /* Renewals are batched into one EVALSHA per watchdog wake-up, so the
     * rate comes from the runtime's counter; Redis's call count shows the
     * batching. */
    double per_s = (double)(s1.renewed - s0.renewed) / wall;
    double expected = run.leases * 3000.0 / LEASE_MS;
    snprintf(note, sizeof note,
             "%d leases of %u ms held %.1f s by %d threads; expected %.0f/s "
             "(a renewal every expire/3); Redis saw %.0f EVALSHA/s (batches)",
             run.leases, LEASE_MS, wall, THREADS, expected,
             (double)(ev1 - ev0) / wall);
    mb_emit("watchdog", "renewals_per_s", per_s, "1/s", NULL, -1, note);

    double cpu_pct = (cpu1 - cpu0) / wall * 100;
    snprintf(note, sizeof note,
             "getrusage(SELF) over the window, %% of one core; redis-server "
             "itself used %.1f %% meanwhile",
             rcpu0 >= 0 ? (rcpu1 - rcpu0) / wall * 100 : -1.0);
    mb_emit("watchdog", "cpu_pct_one_core", cpu_pct, "%", "<= 5", cpu_pct <= 5,
            note);

    /* The larger of "just after taking them" and "after holding": the second
     * includes buffers the renewal pipelines grew. */
    long grown = (rss2 > rss1 ? rss2 : rss1) - rss0;
    double per_lease = (double)grown / run.leases;
    snprintf(note, sizeof note,
             "(max(RSS after acquiring, after holding) - RSS before) / "
             "leases, /proc/self/statm, guard array pre-touched and excluded; "
             "delta %ld KiB; each held guard is another %zu B on the caller's "
             "stack (key inline)",
             grown / 1024, sizeof(lw_guard));
    mb_emit("watchdog", "rss_bytes_per_lease", per_lease, "B", "<= 256 + key",
            per_lease <= 256, note);

    snprintf(note, sizeof note,
             "keys with a TTL in Redis at the end (min PTTL %lld ms); on "
             "leave: %d LW_ELOST, %d other errors; %d failed enters; "
             "acquiring took %.2f s",
             min_ttl, run.lost, run.other, run.failed_enter, acquire_s);
    int all = alive == run.leases && run.lost == 0 && run.other == 0 &&
              run.failed_enter == 0;
    char target[32];
    snprintf(target, sizeof target, "%d", run.leases);
    mb_emit("watchdog", "leases_still_held", alive, "leases", target, all,
            note);
    redisFree(rc);
    lw_shutdown();
    free(run.guards);
    return !all;
}

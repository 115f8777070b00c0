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
 */
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <lockweave.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NKEYS   1000
#define WARMUP  50
#define TTL_MS  10000
#define WAIT_MS 10000

enum { UNCONTENDED, CONTENDED, SPREAD, THREADS, THREADS_KEYS };
static const char *const workloads[] = {"uncontended", "contended", "spread",
                                        "threads", "threads-keys"};

static struct {
    int workload, port, procs, threads, keys, iters, ttl_ms, wait_ms, retry_ms;
    const char *impl;
} opt = {-1, 0, 0, 0, 0, 1000, TTL_MS, WAIT_MS, 10, "lockweave"};

struct result {
    long ok, failed;
    uint64_t start, end;
};

/* One worker: a process of a process workload, a thread of a threads one. */
struct worker {
    int idx; /* process * threads + thread */
    struct result *res;
    uint32_t *lat;
    int ready_fd, go_fd;
    pthread_barrier_t *ready; /* threads: all of a process's have said ready */
};

static void die(const char *what)
{
    fprintf(stderr, "lw_bench_driver: %s\n", what);
    exit(2);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static redisReply *cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        die(c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        die(r->str);
    return r;
}

/* The deliberately non-atomic read-modify-write the lock must protect. */
static void bump(redisContext *c, const char *counter)
{
    redisReply *r = cmd(c, "GET %s", counter);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    freeReplyObject(cmd(c, "SET %s %lld", counter, v + 1));
}

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
    bump(c, "bench:counter");
    return 0;
}

REDIS_LOCK("bench:s:{k}", 10s, 10s, on_fail = -1)
static int section_spread(int k, redisContext *c)
{
    char counter[32];

    snprintf(counter, sizeof counter, "bench:sc:%d", k);
    bump(c, counter);
    return 0;
}

/* How many counters the workload spreads its sections over. */
static int nkeys(void)
{
    switch (opt.workload) {
    case SPREAD:
        return NKEYS;
    case THREADS_KEYS:
        return opt.keys;
    default:
        return 1;
    }
}

static int run_section(redisContext *c, uint64_t *seed)
{
    switch (opt.workload) {
    case UNCONTENDED:
        return section_uncontended();
    case CONTENDED:
    case THREADS:
        return section_contended(c);
    default:
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        return section_spread((int)(*seed % (uint64_t)nkeys()), c);
    }
}

static redisContext *connect_to(void)
{
    redisContext *c = redisConnect("127.0.0.1", opt.port);
    if (c == NULL || c->err)
        die(c ? c->errstr : "cannot connect");
    return c;
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    struct result *res = w->res;
    redisContext *c = connect_to();
    uint64_t seed = now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)w->idx;
    char b = 1;

    for (int i = 0; i < WARMUP; i++)
        if (section_warm(w->idx) != 0)
            die(lw_strerror(lw_last_error()));
    if (write(w->ready_fd, &b, 1) != 1)
        die("sync");
    if (w->ready == NULL)
        close(w->ready_fd);
    else
        pthread_barrier_wait(w->ready); /* the process closes ready_fd */
    if (read(w->go_fd, &b, 1) != 0)
        die("sync");
    res->start = now_ns();
    for (int i = 0; i < opt.iters; i++) {
        uint64_t t0 = now_ns();
        if (run_section(c, &seed) != 0) {
            if (lw_last_error() != LW_ETIMEOUT)
                die(lw_strerror(lw_last_error()));
            res->failed++;
            continue;
        }
        w->lat[res->ok++] = (uint32_t)((now_ns() - t0) / 1000);
    }
    res->end = now_ns();
    redisFree(c);
    return NULL;
}

/* Process p: its one worker, or --threads of them.  The parent sees EOF on
 * ready once every live process has closed it, so a process closes it as
 * soon as all its threads have written their byte. */
static void run_process(int p, struct result *res, uint32_t *lat, int ready_fd,
                        int go_fd)
{
    int n = opt.threads;
    struct worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    pthread_barrier_t ready;

    if (w == NULL || tid == NULL)
        die("out of memory");
    for (int t = 0; t < n; t++)
        w[t] = (struct worker){.idx = p * n + t,
                               .res = &res[t],
                               .lat = lat + (size_t)t * opt.iters,
                               .ready_fd = ready_fd,
                               .go_fd = go_fd,
                               .ready = n > 1 ? &ready : NULL};
    if (n == 1) {
        worker(&w[0]);
        return;
    }
    if (pthread_barrier_init(&ready, NULL, (unsigned)n + 1))
        die("pthread_barrier_init");
    for (int t = 0; t < n; t++)
        if (pthread_create(&tid[t], NULL, worker, &w[t]))
            die("pthread_create");
    pthread_barrier_wait(&ready);
    close(ready_fd);
    for (int t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
}

static long long counted(redisContext *c)
{
    int n = nkeys();
    long long sum = 0;

    for (int k = 0; k < n; k++)
        if (n == 1)
            redisAppendCommand(c, "GET bench:counter");
        else
            redisAppendCommand(c, "GET bench:sc:%d", k);
    for (int k = 0; k < n; k++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            die(c->errstr);
        if (r->type == REDIS_REPLY_STRING)
            sum += atoll(r->str);
        freeReplyObject(r);
    }
    return sum;
}

static void reset_counters(redisContext *c)
{
    redisAppendCommand(c, "DEL bench:counter");
    for (int k = 0; k < NKEYS; k++)
        redisAppendCommand(c, "DEL bench:sc:%d", k);
    for (int k = 0; k <= NKEYS; k++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            die(c->errstr);
        freeReplyObject(r);
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t pct(const uint32_t *s, long n, double q)
{
    long i = (long)(q * (double)n + 0.999999999) - 1; /* nearest rank */
    return n == 0 ? 0 : s[i < 0 ? 0 : i];
}

static void usage(void)
{
    fprintf(stderr,
            "usage: lw_bench_driver --workload "
            "uncontended|contended|spread|threads|threads-keys --port PORT "
            "[--procs P (8; threads: 4)] [--threads T] [--keys K] [--iters N] "
            "[--ttl-ms 10000] [--wait-ms 10000] [--retry-ms R] "
            "[--impl NAME]\n"
            "  threads, threads-keys: P processes x T threads (default 16), "
            "N sections per thread, on one key or on K (default 64)\n");
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        if (!strcmp(f, "--workload"))
            opt.workload = !strcmp(v, "uncontended")    ? UNCONTENDED
                           : !strcmp(v, "contended")    ? CONTENDED
                           : !strcmp(v, "spread")       ? SPREAD
                           : !strcmp(v, "threads")      ? THREADS
                           : !strcmp(v, "threads-keys") ? THREADS_KEYS
                                                        : -1;
        else if (!strcmp(f, "--port"))
            opt.port = atoi(v);
        else if (!strcmp(f, "--procs"))
            opt.procs = atoi(v);
        else if (!strcmp(f, "--threads"))
            opt.threads = atoi(v);
        else if (!strcmp(f, "--keys"))
            opt.keys = atoi(v);
        else if (!strcmp(f, "--iters"))
            opt.iters = atoi(v);
        else if (!strcmp(f, "--ttl-ms"))
            opt.ttl_ms = atoi(v);
        else if (!strcmp(f, "--wait-ms"))
            opt.wait_ms = atoi(v);
        else if (!strcmp(f, "--retry-ms"))
            opt.retry_ms = atoi(v);
        else if (!strcmp(f, "--impl"))
            opt.impl = v;
        else
            usage();
    }
    if (opt.procs == 0)
        opt.procs = opt.workload < THREADS ? 8 : 4;
    if (opt.workload < 0 || opt.port <= 0 || opt.procs < 1 || opt.iters < 1)
        usage();
    if (opt.workload < THREADS) {
        if (opt.threads != 0 || opt.keys != 0)
            die("--threads and --keys are for the threads workloads");
        opt.threads = 1;
    } else {
        opt.threads = opt.threads ? opt.threads : 16;
        opt.keys = opt.workload == THREADS ? 1 : opt.keys ? opt.keys : 64;
        if (opt.threads < 1 || opt.keys < 1 || opt.keys > NKEYS)
            usage();
    }
    if (opt.ttl_ms != TTL_MS || opt.wait_ms != WAIT_MS)
        die("--ttl-ms and --wait-ms must be 10000: the annotations say 10s");
}

int main(int argc, char **argv)
{
    char url[64];
    parse_args(argc, argv);
    int procs = opt.workload == UNCONTENDED ? 1 : opt.procs;
    int workers = procs * opt.threads;
    size_t bytes = sizeof(struct result) * (size_t)workers +
                   sizeof(uint32_t) * (size_t)workers * (size_t)opt.iters;
    struct result *res;
    uint32_t *lat;
    redisContext *c;
    int ready[2], go[2], status, bad = 0;
    long sections = 0, failed = 0, n = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    char b, threads[48] = "";

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", opt.port);
    /* bench/redlock/run.sh locks on several masters (counters stay on
     * --port): LW_BENCH_LOCK_URL is then the lock's LOCKWEAVE_REDIS_URL. */
    setenv("LOCKWEAVE_REDIS_URL",
           getenv("LW_BENCH_LOCK_URL") ? getenv("LW_BENCH_LOCK_URL") : url, 1);
    c = connect_to();
    reset_counters(c);
    res = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
               -1, 0);
    if (res == MAP_FAILED)
        die("mmap");
    lat = (uint32_t *)(res + workers);
    if (pipe(ready) || pipe(go))
        die("pipe");
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            close(go[1]);
            close(ready[0]);
            run_process(p, res + (size_t)p * opt.threads,
                        lat + (size_t)p * opt.threads * opt.iters, ready[1],
                        go[0]);
            _exit(0);
        }
    }
    close(ready[1]);
    for (int w = 0; w < workers; w++)
        if (read(ready[0], &b, 1) != 1)
            die("a worker failed to start");
    close(go[1]);
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (bad)
        die("a worker failed");
    for (int w = 0; w < workers; w++) {
        sections += res[w].ok;
        failed += res[w].failed;
        if (res[w].start < t0)
            t0 = res[w].start;
        if (res[w].end > t1)
            t1 = res[w].end;
        memmove(lat + n, lat + (size_t)w * opt.iters,
                sizeof(uint32_t) * (size_t)res[w].ok);
        n += res[w].ok;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_u32);
    long long cnt = opt.workload == UNCONTENDED ? sections : counted(c);
    double secs = (double)(t1 - t0) / 1e9;
    if (opt.workload >= THREADS)
        snprintf(threads, sizeof threads, ",\"threads\":%d,\"keys\":%d",
                 opt.threads, opt.keys);
    printf("{\"impl\":\"%s\",\"workload\":\"%s\",\"procs\":%d,\"sections\":%ld,"
           "\"seconds\":%.4f,\"ops_per_s\":%.1f,\"p50_us\":%u,\"p99_us\":%u,"
           "\"violations\":%lld,\"failed\":%ld,\"retry_ms\":%d%s}\n",
           opt.impl, workloads[opt.workload], procs, sections, secs,
           secs > 0 ? sections / secs : 0.0, pct(lat, n, 0.5),
           pct(lat, n, 0.99), sections - cnt, failed, opt.retry_ms, threads);
    redisFree(c);
    return 0;
}

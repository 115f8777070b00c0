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
 * of the counters.
 */
#include <hiredis/hiredis.h>
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

#define NKEYS  1000
#define WARMUP 50 /* unmeasured sections per thread on a private key */

static const char *const release_lua =
    "if redis.call('get',KEYS[1])==ARGV[1] then return "
    "redis.call('del',KEYS[1]) else return 0 end";

enum { THREADS, THREADS_KEYS };
static const char *const workloads[] = {"threads", "threads-keys"};

static struct {
    int workload, port, procs, threads, keys, iters, ttl_ms, wait_ms, retry_ms;
} opt = {-1, 0, 4, 16, 0, 1000, 10000, 10000, 10};

struct result {
    long ok, failed;
    uint64_t start, end;
};

struct worker {
    int idx; /* process * threads + thread */
    struct result *res;
    uint32_t *lat;
    int ready_fd, go_fd;
    pthread_barrier_t *ready;
};

static void die(const char *what)
{
    fprintf(stderr, "hand_threads: %s\n", what);
    exit(2);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static redisContext *connect_to(void)
{
    redisContext *c = redisConnect("127.0.0.1", opt.port);
    if (c == NULL || c->err)
        die(c ? c->errstr : "cannot connect");
    return c;
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

/* 1: acquired, 0: wait-ms ran out. */
static int acquire(redisContext *c, const char *key, const char *token)
{
    uint64_t deadline = now_ns() + (uint64_t)opt.wait_ms * 1000000u;

    for (;;) {
        redisReply *r = cmd(c, "SET %s %s NX PX %d", key, token, opt.ttl_ms);
        int ok = r->type == REDIS_REPLY_STATUS; /* +OK; nil when busy */

        freeReplyObject(r);
        if (ok)
            return 1;
        if (now_ns() + (uint64_t)opt.retry_ms * 1000000u > deadline)
            return 0;
        usleep((useconds_t)opt.retry_ms * 1000);
    }
}

static void release(redisContext *c, const char *key, const char *token)
{
    freeReplyObject(cmd(c, "EVAL %s 1 %s %s", release_lua, key, token));
}

/* The deliberately non-atomic read-modify-write the lock must protect. */
static void bump(redisContext *c, const char *counter)
{
    redisReply *r = cmd(c, "GET %s", counter);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    freeReplyObject(cmd(c, "SET %s %lld", counter, v + 1));
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    struct result *res = w->res;
    redisContext *c = connect_to();
    uint64_t seed = now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)w->idx;
    char token[80], key[32], counter[32], b = 1;

    snprintf(key, sizeof key, "bench:warm:%d", w->idx);
    for (int i = 0; i < WARMUP; i++) {
        snprintf(token, sizeof token, "warm-%d-%d", w->idx, i);
        if (acquire(c, key, token))
            release(c, key, token);
    }
    if (write(w->ready_fd, &b, 1) != 1)
        die("sync");
    pthread_barrier_wait(w->ready); /* the process closes ready_fd */
    if (read(w->go_fd, &b, 1) != 0)
        die("sync");
    res->start = now_ns();
    for (int i = 0; i < opt.iters; i++) {
        uint64_t t0 = now_ns();

        if (opt.workload == THREADS) {
            strcpy(key, "bench:c");
            strcpy(counter, "bench:counter");
        } else {
            seed ^= seed << 13; /* xorshift64 */
            seed ^= seed >> 7;
            seed ^= seed << 17;
            int k = (int)(seed % (uint64_t)opt.keys);
            snprintf(key, sizeof key, "bench:s:%d", k);
            snprintf(counter, sizeof counter, "bench:sc:%d", k);
        }
        snprintf(token, sizeof token, "%016llx-%d-%d-%d",
                 (unsigned long long)seed, (int)getpid(), w->idx, i);
        if (!acquire(c, key, token)) {
            res->failed++;
            continue;
        }
        bump(c, counter);
        release(c, key, token);
        w->lat[res->ok++] = (uint32_t)((now_ns() - t0) / 1000);
    }
    res->end = now_ns();
    redisFree(c);
    return NULL;
}

/* Process p: --threads workers.  The parent sees EOF on ready once every
 * live process has closed it, so a process closes it as soon as all its
 * threads have written their byte. */
static void run_process(int p, struct result *res, uint32_t *lat, int ready_fd,
                        int go_fd)
{
    int n = opt.threads;
    struct worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    pthread_barrier_t ready;

    if (w == NULL || tid == NULL)
        die("out of memory");
    if (pthread_barrier_init(&ready, NULL, (unsigned)n + 1))
        die("pthread_barrier_init");
    for (int t = 0; t < n; t++) {
        w[t] = (struct worker){.idx = p * n + t,
                               .res = &res[t],
                               .lat = lat + (size_t)t * opt.iters,
                               .ready_fd = ready_fd,
                               .go_fd = go_fd,
                               .ready = &ready};
        if (pthread_create(&tid[t], NULL, worker, &w[t]))
            die("pthread_create");
    }
    pthread_barrier_wait(&ready);
    close(ready_fd);
    for (int t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
}

/* Sum of the workload's counters, read with one pipeline. */
static long long counted(redisContext *c)
{
    int n = opt.workload == THREADS ? 1 : opt.keys;
    long long sum = 0;

    for (int k = 0; k < n; k++)
        if (opt.workload == THREADS)
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
            "usage: hand_threads --workload threads|threads-keys --port PORT "
            "[--procs P] [--threads T] [--keys K] [--iters N] "
            "[--ttl-ms T] [--wait-ms W] [--retry-ms R]\n"
            "  P processes (default 4) x T threads (default 16), N sections "
            "per thread, on one key or on K (default 64)\n");
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        if (!strcmp(f, "--workload"))
            opt.workload = !strcmp(v, "threads")        ? THREADS
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
        else
            usage();
    }
    opt.keys = opt.workload == THREADS ? 1 : opt.keys ? opt.keys : 64;
    if (opt.workload < 0 || opt.port <= 0 || opt.procs < 1 || opt.threads < 1 ||
        opt.iters < 1 || opt.keys < 1 || opt.keys > NKEYS || opt.retry_ms < 0)
        usage();
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    int workers = opt.procs * opt.threads;
    size_t bytes = sizeof(struct result) * (size_t)workers +
                   sizeof(uint32_t) * (size_t)workers * (size_t)opt.iters;
    struct result *res;
    uint32_t *lat;
    redisContext *c = connect_to();
    int ready[2], go[2], status, bad = 0;
    long sections = 0, failed = 0, n = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    char b;

    reset_counters(c);
    res = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
               -1, 0);
    if (res == MAP_FAILED)
        die("mmap");
    lat = (uint32_t *)(res + workers);
    if (pipe(ready) || pipe(go))
        die("pipe");
    for (int p = 0; p < opt.procs; p++) {
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
    close(go[1]); /* EOF on go[0]: all workers start */
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
    long long cnt = counted(c);
    double secs = (double)(t1 - t0) / 1e9;
    printf("{\"impl\":\"hiredis-handwritten\",\"workload\":\"%s\",\"procs\":%d,"
           "\"sections\":%ld,\"seconds\":%.4f,\"ops_per_s\":%.1f,"
           "\"p50_us\":%u,\"p99_us\":%u,\"violations\":%lld,\"failed\":%ld,"
           "\"retry_ms\":%d,\"threads\":%d,\"keys\":%d}\n",
           workloads[opt.workload], opt.procs, sections, secs,
           secs > 0 ? sections / secs : 0.0, pct(lat, n, 0.5),
           pct(lat, n, 0.99), sections - cnt, failed, opt.retry_ms, opt.threads,
           opt.keys);
    redisFree(c);
    return 0;
}

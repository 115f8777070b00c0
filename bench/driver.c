/*
 * The part of the benchmark drivers that is not their lock: see driver.h.
 */
#include "driver.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const workloads[] = {"uncontended", "contended", "spread",
                                        "threads", "threads-keys"};

struct bench_opts bench_opt = {-1, 0, 0, 0, 0, 1000, 10000, 10000, 10, NULL};

static const struct bench_driver *drv;

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

void bench_die(const char *what)
{
    fprintf(stderr, "%s: %s\n", drv->name, what);
    exit(2);
}

void bench_usage(void)
{
    fputs(drv->usage, stderr);
    exit(2);
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

redisContext *bench_connect(void)
{
    redisContext *c = redisConnect("127.0.0.1", bench_opt.port);
    if (c == NULL || c->err)
        bench_die(c ? c->errstr : "cannot connect");
    return c;
}

redisReply *bench_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        bench_die(c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        bench_die(r->str);
    return r;
}

void bench_bump(redisContext *c, const char *counter)
{
    redisReply *r = bench_cmd(c, "GET %s", counter);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    freeReplyObject(bench_cmd(c, "SET %s %lld", counter, v + 1));
}

int bench_pick_key(uint64_t *seed, int n)
{
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    return (int)(*seed % (uint64_t)n);
}

int bench_nkeys(void)
{
    switch (bench_opt.workload) {
    case BENCH_UNCONTENDED:
        return 0;
    case BENCH_SPREAD:
        return BENCH_NKEYS;
    case BENCH_THREADS_KEYS:
        return bench_opt.keys;
    default:
        return 1;
    }
}

/* The lock key and counter of a section (32 bytes each): "bench:u" (no
 * counter) uncontended; "bench:c" and "bench:counter" on one key; else
 * "bench:s:K" and "bench:sc:K", K one of bench_nkeys() picked with *seed.
 * The woven driver names the same keys in its annotations. */
static void section_keys(uint64_t *seed, char *key, char *counter)
{
    int k;

    switch (bench_nkeys()) {
    case 0:
        strcpy(key, "bench:u");
        counter[0] = '\0';
        return;
    case 1:
        strcpy(key, "bench:c");
        strcpy(counter, "bench:counter");
        return;
    default:
        k = bench_pick_key(seed, bench_nkeys());
        snprintf(key, 32, "bench:s:%d", k);
        snprintf(counter, 32, "bench:sc:%d", k);
    }
}

/* A hand-written lock's warm-up: the lock alone, on the worker's own key. */
static void lock_warm(redisContext *c, int idx, int i)
{
    char key[32], token[80];

    snprintf(key, sizeof key, "bench:warm:%d", idx);
    snprintf(token, sizeof token, "warm-%d-%d", idx, i);
    if (drv->acquire(c, key, token))
        drv->release(c, key, token);
}

/* A hand-written lock's section.  The token is unique across processes,
 * workers and sections, so that a compare-and-delete never frees another
 * holder's lock. */
static int lock_section(redisContext *c, int idx, int i, uint64_t *seed)
{
    char key[32], counter[32], token[80];

    section_keys(seed, key, counter);
    snprintf(token, sizeof token, "%016llx-%d-%d-%d", (unsigned long long)*seed,
             (int)getpid(), idx, i);
    if (!drv->acquire(c, key, token))
        return 1;
    if (counter[0])
        bench_bump(c, counter);
    drv->release(c, key, token);
    return 0;
}

void bench_parse_args(const struct bench_driver *d, int argc, char **argv)
{
    /* The integer options; 0 for --procs, --threads and --keys is "not
     * given": the workload's default. */
    static const struct {
        const char *flag;
        int *v;
    } ints[] = {
        {"--port", &bench_opt.port},       {"--procs", &bench_opt.procs},
        {"--threads", &bench_opt.threads}, {"--keys", &bench_opt.keys},
        {"--iters", &bench_opt.iters},     {"--ttl-ms", &bench_opt.ttl_ms},
        {"--wait-ms", &bench_opt.wait_ms}, {"--retry-ms", &bench_opt.retry_ms}};

    drv = d;
    bench_opt.impl = d->impl;
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t o = 0;

        if (v == NULL)
            bench_usage();
        if (!strcmp(f, "--workload")) {
            bench_opt.workload = -1;
            for (int w = d->first_workload; w <= BENCH_THREADS_KEYS; w++)
                if (!strcmp(v, workloads[w]))
                    bench_opt.workload = w;
            continue;
        }
        if (!strcmp(f, "--impl") && d->impl_flag) {
            bench_opt.impl = v;
            continue;
        }
        while (o < sizeof ints / sizeof *ints && strcmp(f, ints[o].flag))
            o++;
        if (o == sizeof ints / sizeof *ints)
            bench_usage();
        *ints[o].v = atoi(v);
    }
    if (bench_opt.procs == 0)
        bench_opt.procs = bench_opt.workload < BENCH_THREADS ? 8 : 4;
    if (bench_opt.workload == BENCH_UNCONTENDED)
        bench_opt.procs = 1;
    if (bench_opt.workload < 0 || bench_opt.port <= 0 || bench_opt.procs < 1 ||
        bench_opt.iters < 1)
        bench_usage();
    if (bench_opt.workload < BENCH_THREADS) {
        if (bench_opt.threads != 0 || bench_opt.keys != 0)
            bench_die("--threads and --keys are for the threads workloads");
        bench_opt.threads = 1;
    } else {
        bench_opt.threads = bench_opt.threads ? bench_opt.threads : 16;
        bench_opt.keys = bench_opt.workload == BENCH_THREADS ? 1
                         : bench_opt.keys                    ? bench_opt.keys
                                                             : 64;
        if (bench_opt.threads < 1 || bench_opt.keys < 1 ||
            bench_opt.keys > BENCH_NKEYS)
            bench_usage();
    }
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    struct result *res = w->res;
    redisContext *c = bench_connect();
    uint64_t seed =
        bench_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)w->idx;
    char b = 1;

    for (int i = 0; i < BENCH_WARMUP; i++)
        (drv->warm ? drv->warm : lock_warm)(c, w->idx, i);
    if (write(w->ready_fd, &b, 1) != 1)
        bench_die("sync");
    if (w->ready == NULL)
        close(w->ready_fd);
    else
        pthread_barrier_wait(w->ready); /* the process closes ready_fd */
    if (read(w->go_fd, &b, 1) != 0)
        bench_die("sync");
    res->start = bench_now_ns();
    for (int i = 0; i < bench_opt.iters; i++) {
        uint64_t t0 = bench_now_ns();
        if ((drv->section ? drv->section : lock_section)(c, w->idx, i, &seed) !=
            0) {
            res->failed++;
            continue;
        }
        w->lat[res->ok++] = (uint32_t)((bench_now_ns() - t0) / 1000);
    }
    res->end = bench_now_ns();
    redisFree(c);
    return NULL;
}

/* Process p: its one worker, or --threads of them.  The parent sees EOF on
 * ready once every live process has closed it, so a process closes it as
 * soon as all its threads have written their byte. */
static void run_process(int p, struct result *res, uint32_t *lat, int ready_fd,
                        int go_fd)
{
    int n = bench_opt.threads;
    struct worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    pthread_barrier_t ready;

    if (w == NULL || tid == NULL)
        bench_die("out of memory");
    for (int t = 0; t < n; t++)
        w[t] = (struct worker){.idx = p * n + t,
                               .res = &res[t],
                               .lat = lat + (size_t)t * bench_opt.iters,
                               .ready_fd = ready_fd,
                               .go_fd = go_fd,
                               .ready = n > 1 ? &ready : NULL};
    if (n == 1) {
        worker(&w[0]);
        goto cleanup;
    }
    if (pthread_barrier_init(&ready, NULL, (unsigned)n + 1))
        bench_die("pthread_barrier_init");
    for (int t = 0; t < n; t++)
        if (pthread_create(&tid[t], NULL, worker, &w[t]))
            bench_die("pthread_create");
    pthread_barrier_wait(&ready);
    close(ready_fd);
    for (int t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&ready);
cleanup:
    free(tid);
    free(w);
}

long long bench_counted(redisContext *c, int n)
{
    long long sum = 0;

    for (int k = 0; k < n; k++)
        if (n == 1)
            redisAppendCommand(c, "GET bench:counter");
        else
            redisAppendCommand(c, "GET bench:sc:%d", k);
    for (int k = 0; k < n; k++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            bench_die(c->errstr);
        if (r->type == REDIS_REPLY_STRING)
            sum += atoll(r->str);
        freeReplyObject(r);
    }
    return sum;
}

void bench_reset_counters(redisContext *c)
{
    redisAppendCommand(c, "DEL bench:counter");
    for (int k = 0; k < BENCH_NKEYS; k++)
        redisAppendCommand(c, "DEL bench:sc:%d", k);
    for (int k = 0; k <= BENCH_NKEYS; k++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            bench_die(c->errstr);
        freeReplyObject(r);
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void bench_sort_latencies(uint32_t *lat, long n)
{
    qsort(lat, (size_t)n, sizeof *lat, cmp_u32);
}

uint32_t bench_percentile(const uint32_t *s, long n, double q)
{
    long i = (long)(q * (double)n + 0.999999999) - 1; /* nearest rank */
    return n == 0 ? 0 : s[i < 0 ? 0 : i];
}

void bench_run(int counters)
{
    int workers = bench_opt.procs * bench_opt.threads;
    size_t iters = (size_t)bench_opt.iters;
    size_t bytes = sizeof(struct result) * (size_t)workers +
                   sizeof(uint32_t) * (size_t)workers * iters;
    redisContext *c = bench_connect();
    struct result *res;
    uint32_t *lat;
    int ready[2], go[2], status, bad = 0;
    long sections = 0, failed = 0, n = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    char b, threads[48] = "";

    bench_reset_counters(c);
    /* Shared with the workers, which write their results and latencies
     * there: nothing to send back through a pipe. */
    res = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
               -1, 0);
    if (res == MAP_FAILED)
        bench_die("mmap");
    lat = (uint32_t *)(res + workers);
    if (pipe(ready) || pipe(go))
        bench_die("pipe");
    for (int p = 0; p < bench_opt.procs; p++) {
        pid_t pid = fork();
        if (pid < 0)
            bench_die("fork");
        if (pid == 0) {
            close(go[1]);
            close(ready[0]);
            run_process(p, res + (size_t)p * bench_opt.threads,
                        lat + (size_t)p * bench_opt.threads * iters, ready[1],
                        go[0]);
            _exit(0);
        }
    }
    close(ready[1]);
    for (int w = 0; w < workers; w++)
        if (read(ready[0], &b, 1) != 1)
            bench_die("a worker failed to start");
    close(go[1]); /* EOF on go[0]: all workers start */
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (bad)
        bench_die("a worker failed");
    for (int w = 0; w < workers; w++) {
        sections += res[w].ok;
        failed += res[w].failed;
        if (res[w].start < t0)
            t0 = res[w].start;
        if (res[w].end > t1)
            t1 = res[w].end;
        memmove(lat + n, lat + (size_t)w * iters,
                sizeof(uint32_t) * (size_t)res[w].ok);
        n += res[w].ok;
    }
    bench_sort_latencies(lat, n);
    long long cnt = counters ? bench_counted(c, counters) : sections;
    double secs = (double)(t1 - t0) / 1e9;
    if (bench_opt.workload >= BENCH_THREADS)
        snprintf(threads, sizeof threads, ",\"threads\":%d,\"keys\":%d",
                 bench_opt.threads, bench_opt.keys);
    printf("{\"impl\":\"%s\",\"workload\":\"%s\",\"procs\":%d,\"sections\":%ld,"
           "\"seconds\":%.4f,\"ops_per_s\":%.1f,\"p50_us\":%u,\"p99_us\":%u,"
           "\"violations\":%lld,\"failed\":%ld,\"retry_ms\":%d%s}\n",
           bench_opt.impl, workloads[bench_opt.workload], bench_opt.procs,
           sections, secs, secs > 0 ? sections / secs : 0.0,
           bench_percentile(lat, n, 0.5), bench_percentile(lat, n, 0.99),
           sections - cnt, failed, bench_opt.retry_ms, threads);
    munmap(res, bytes);
    redisFree(c);
}

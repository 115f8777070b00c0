/*
 * lockweave's event-loop driver: the peer harness's command line and JSON
 * line (bench/driver.h), its workloads run as an event-loop service runs
 * them, the way the harness's Node drivers do with --inflight.
 *
 *   lw_loop_driver --workload uncontended|contended|spread --port PORT
 *       [--procs P (1)] [--inflight C (64)] [--iters N] [--ttl-ms T]
 *       [--wait-ms W] [--retry-ms R] [--impl NAME] [--no-lock]
 *
 * Each of the P processes (default 1) runs one libevent loop with C
 * sections in flight, its N sections shared between them (as the Node
 * harness shares a process's --iters between its in-flight sections).  A
 * section, all on the loop's thread and never blocking it:
 *   lw_acquire_async(loop, key) -> callback -> GET counter -> SET counter
 *   v+1 (the harness's deliberately non-atomic read-modify-write, on the
 *   process's one hiredis async connection, libevent adapter) ->
 *   lw_release_async() -> callback: the section is timed from the request
 *   to here, and its in-flight slot starts the next one.
 * Keys as every other driver's: the lock bench:c and counter bench:counter
 * (contended), or bench:s:K and bench:sc:K with K picked at random among
 * 1000 for each section (spread, bench_pick_key()); uncontended locks
 * bench:u with an empty body.  violations = sections - the counters' sum.
 *
 * Warm-up, unmeasured: BENCH_WARMUP sections (at least 2 C) with the C
 * slots in flight at once, each on its own key bench:warm:<proc>:<slot> and
 * with an empty body, so that the loop's worker threads and their
 * connections exist before the common go, as the harness's warm-up opens
 * its drivers' connections.
 *
 * --no-lock: the same sections with no lock at all (impl "no-lock"): what
 * the body alone costs with C in flight, the ceiling of any lock on spread
 * (on one key its sections overlap: its violations are expected there).
 *
 * --retry-ms is echoed, not used (lockweave's waiters are woken on
 * release); --ttl-ms and --wait-ms are the locks' lease and wait.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <lockweave.h>
#include <lockweave/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const workload_names[] = {"uncontended", "contended",
                                             "spread"};

struct result {
    long ok, failed;
    uint64_t start, end;
};

struct proc;

/* One request in flight: its section, then the next. */
struct slot {
    struct proc *p;
    int idx;
    int warm; /* this section is part of the warm-up */
    lw_lease *lease;
    uint64_t t0;
    char key[48], counter[32];
};

/* One process: its loop and its sections. */
struct proc {
    int idx;
    struct event_base *base;
    lw_loop *loop;
    redisAsyncContext *ac;
    lw_lock_opts opts;
    struct slot *slots;
    int active;     /* slots still running */
    long left;      /* sections not started yet */
    long warm_left; /* warm-up sections not started yet */
    uint64_t seed;
    struct result *res;
    uint32_t *lat;
};

static int inflight = 64, no_lock;

static void slot_start(struct slot *s);

static void slot_done(struct slot *s)
{
    struct proc *p = s->p;

    if (!s->warm) {
        uint64_t us = (bench_now_ns() - s->t0) / 1000;
        p->lat[p->res->ok++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    }
    slot_start(s);
}

static void on_released(int status, void *ud)
{
    if (status != LW_OK)
        bench_die(lw_strerror(status)); /* LW_ELOST: the lease ran out */
    slot_done(ud);
}

static void release(struct slot *s)
{
    if (no_lock) {
        slot_done(s);
        return;
    }
    if (lw_release_async(s->lease, on_released, s) != LW_OK)
        bench_die("lw_release_async");
    s->lease = NULL;
}

static redisReply *checked(redisAsyncContext *ac, void *reply)
{
    redisReply *r = reply;

    if (r == NULL)
        bench_die(ac->errstr[0] ? ac->errstr : "connection lost");
    if (r->type == REDIS_REPLY_ERROR)
        bench_die(r->str);
    return r;
}

static void on_set(redisAsyncContext *ac, void *reply, void *ud)
{
    checked(ac, reply);
    release(ud);
}

/* The harness's non-atomic read-modify-write: SET only once GET is back. */
static void on_get(redisAsyncContext *ac, void *reply, void *ud)
{
    struct slot *s = ud;
    redisReply *r = checked(ac, reply);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    if (redisAsyncCommand(ac, on_set, s, "SET %s %lld", s->counter, v + 1) !=
        REDIS_OK)
        bench_die("redisAsyncCommand");
}

static void body(struct slot *s)
{
    if (s->counter[0] == '\0') {
        release(s);
        return;
    }
    if (redisAsyncCommand(s->p->ac, on_get, s, "GET %s", s->counter) !=
        REDIS_OK)
        bench_die("redisAsyncCommand");
}

static void on_acquired(lw_lease *lease, int status, void *ud)
{
    struct slot *s = ud;

    if (status == LW_ETIMEOUT && !s->warm) {
        s->p->res->failed++; /* --wait-ms ran out */
        slot_start(s);
        return;
    }
    if (status != LW_OK)
        bench_die(lw_strerror(status));
    s->lease = lease;
    body(s);
}

/* The slot's next section, or its end: the loop stops when every slot has
 * ended. */
static void slot_start(struct slot *s)
{
    struct proc *p = s->p;
    int k;

    if (p->warm_left > 0) {
        p->warm_left--;
        s->warm = 1;
        snprintf(s->key, sizeof s->key, "bench:warm:%d:%d", p->idx, s->idx);
        s->counter[0] = '\0';
    } else if (p->left > 0 && !s->warm) {
        p->left--;
        switch (bench_opt.workload) {
        case BENCH_UNCONTENDED:
            strcpy(s->key, "bench:u");
            s->counter[0] = '\0';
            break;
        case BENCH_CONTENDED:
            strcpy(s->key, "bench:c");
            strcpy(s->counter, "bench:counter");
            break;
        default:
            k = bench_pick_key(&p->seed, BENCH_NKEYS);
            snprintf(s->key, sizeof s->key, "bench:s:%d", k);
            snprintf(s->counter, sizeof s->counter, "bench:sc:%d", k);
        }
    } else {
        /* A warm-up slot ends with the warm-up; then the measured part
         * starts every slot again. */
        if (--p->active == 0)
            event_base_loopbreak(p->base);
        return;
    }
    s->t0 = bench_now_ns();
    if (no_lock) {
        body(s);
        return;
    }
    if (lw_acquire_async(p->loop, s->key, strlen(s->key), &p->opts, on_acquired,
                         s) != LW_OK)
        bench_die("lw_acquire_async");
}

/* Start every slot and run the loop until they have all ended. */
static void run_slots(struct proc *p, int warm)
{
    p->active = inflight;
    for (int i = 0; i < inflight; i++) {
        p->slots[i].warm = warm;
        slot_start(&p->slots[i]);
    }
    if (p->active > 0 && event_base_dispatch(p->base) < 0)
        bench_die("event_base_dispatch");
    if (p->active != 0)
        bench_die("the loop stopped early");
}

static void on_ping(redisAsyncContext *ac, void *reply, void *ud)
{
    checked(ac, reply);
    event_base_loopbreak(ud);
}

static void run_process(int idx, struct result *res, uint32_t *lat,
                        int ready_fd, int go_fd)
{
    struct proc p = {.idx = idx, .res = res, .lat = lat};
    char b = 1;

    p.seed = bench_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)idx;
    p.opts = (lw_lock_opts){.expire_ms = (uint32_t)bench_opt.ttl_ms,
                            .wait_ms = (uint32_t)bench_opt.wait_ms,
                            .max_renew = -1};
    p.base = event_base_new();
    p.slots = calloc((size_t)inflight, sizeof *p.slots);
    if (p.base == NULL || p.slots == NULL)
        bench_die("out of memory");
    for (int i = 0; i < inflight; i++)
        p.slots[i] = (struct slot){.p = &p, .idx = i};
    if (!no_lock && (p.loop = lw_loop_event(p.base)) == NULL)
        bench_die("lw_loop_event");
    p.ac = redisAsyncConnect("127.0.0.1", bench_opt.port);
    if (p.ac == NULL || p.ac->err)
        bench_die(p.ac ? p.ac->errstr : "redisAsyncConnect");
    if (redisLibeventAttach(p.ac, p.base) != REDIS_OK)
        bench_die("redisLibeventAttach");
    if (redisAsyncCommand(p.ac, on_ping, p.base, "PING") != REDIS_OK)
        bench_die("redisAsyncCommand");
    event_base_dispatch(p.base);

    p.warm_left = no_lock                       ? 0
                  : BENCH_WARMUP > 2 * inflight ? BENCH_WARMUP
                                                : 2 * inflight;
    run_slots(&p, 1);
    p.warm_left = 0;
    p.left = bench_opt.iters;

    if (write(ready_fd, &b, 1) != 1)
        bench_die("sync");
    close(ready_fd);
    if (read(go_fd, &b, 1) != 0)
        bench_die("sync");
    res->start = bench_now_ns();
    run_slots(&p, 0);
    res->end = bench_now_ns();

    if (p.loop != NULL)
        lw_loop_free(p.loop);
    redisAsyncFree(p.ac);
    event_base_free(p.base);
    free(p.slots);
}

static const struct bench_driver driver = {
    .name = "lw_loop_driver",
    .usage = "usage: lw_loop_driver --workload uncontended|contended|spread "
             "--port PORT [--procs P (1)] [--inflight C (64)] [--iters N] "
             "[--ttl-ms 10000] [--wait-ms 10000] [--retry-ms R] "
             "[--impl NAME] [--no-lock]\n"
             "  P processes, each one libevent loop with C sections in "
             "flight sharing its N\n",
    .first_workload = BENCH_UNCONTENDED,
    .impl = "lockweave",
    .impl_flag = 1,
};

/* --inflight and --no-lock are this driver's own: taken out of argv before
 * the shared parser sees it; --procs defaults to 1. */
static int own_args(int argc, char **argv)
{
    int n = 1, procs_given = 0;

    /* argv has room for two more */

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-lock")) {
            no_lock = 1;
            continue;
        }
        if (!strcmp(argv[i], "--inflight") && i + 1 < argc) {
            inflight = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--procs"))
            procs_given = 1;
        argv[n++] = argv[i];
    }
    if (!procs_given) {
        argv[n++] = "--procs";
        argv[n++] = "1";
    }
    return n;
}

int main(int argc, char **argv)
{
    char url[64], **args = calloc((size_t)argc + 3, sizeof *args);
    int nargs, procs, ready[2], go[2], status, bad = 0, counters;
    long sections = 0, failed = 0, n = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    size_t iters, bytes;
    struct result *res;
    uint32_t *lat;
    redisContext *c;
    char b;

    if (args == NULL)
        return 2;
    memcpy(args, argv, sizeof *args * (size_t)argc);
    nargs = own_args(argc, args); /* args has room for "--procs 1" */
    bench_parse_args(&driver, nargs, args);
    if (bench_opt.workload > BENCH_SPREAD || inflight < 1)
        bench_usage();
    if (no_lock && !strcmp(bench_opt.impl, "lockweave"))
        bench_opt.impl = "no-lock";
    procs = bench_opt.procs;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", bench_opt.port);
    setenv("LOCKWEAVE_REDIS_URL", url, 1);

    iters = (size_t)bench_opt.iters;
    bytes = sizeof(struct result) * (size_t)procs +
            sizeof(uint32_t) * (size_t)procs * iters;
    res = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
               -1, 0);
    if (res == MAP_FAILED)
        bench_die("mmap");
    lat = (uint32_t *)(res + procs);
    c = bench_connect();
    bench_reset_counters(c);
    if (pipe(ready) || pipe(go))
        bench_die("pipe");
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid < 0)
            bench_die("fork");
        if (pid == 0) {
            redisFree(c);
            close(go[1]);
            close(ready[0]);
            run_process(p, res + p, lat + (size_t)p * iters, ready[1], go[0]);
            _exit(0);
        }
    }
    close(ready[1]);
    close(go[0]);
    for (int p = 0; p < procs; p++)
        if (read(ready[0], &b, 1) != 1)
            bench_die("a process failed to start");
    close(go[1]); /* EOF on go[0]: all start */
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (bad)
        bench_die("a process failed");
    for (int p = 0; p < procs; p++) {
        sections += res[p].ok;
        failed += res[p].failed;
        if (res[p].start < t0)
            t0 = res[p].start;
        if (res[p].end > t1)
            t1 = res[p].end;
        memmove(lat + n, lat + (size_t)p * iters,
                sizeof(uint32_t) * (size_t)res[p].ok);
        n += res[p].ok;
    }
    bench_sort_latencies(lat, n);
    counters = bench_opt.workload == BENCH_UNCONTENDED ? 0
               : bench_opt.workload == BENCH_SPREAD    ? BENCH_NKEYS
                                                       : 1;
    long long cnt = counters ? bench_counted(c, counters) : sections;
    double secs = (double)(t1 - t0) / 1e9;
    printf("{\"impl\":\"%s\",\"workload\":\"%s\",\"procs\":%d,\"sections\":%ld,"
           "\"seconds\":%.4f,\"ops_per_s\":%.1f,\"p50_us\":%u,\"p99_us\":%u,"
           "\"violations\":%lld,\"failed\":%ld,\"retry_ms\":%d,"
           "\"inflight\":%d}\n",
           bench_opt.impl, workload_names[bench_opt.workload], procs, sections,
           secs, secs > 0 ? sections / secs : 0.0,
           bench_percentile(lat, n, 0.5), bench_percentile(lat, n, 0.99),
           sections - cnt, failed, bench_opt.retry_ms, inflight);
    munmap(res, bytes);
    redisFree(c);
    free(args);
    return 0;
}

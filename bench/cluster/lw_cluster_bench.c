/*
 * Lock throughput with keys spread over many slots: P processes run
 * REDIS_LOCK'ed sections (woven by lockweave_generate, the users' path) on
 * random keys among --keys, for --iters sections each.  The section is a
 * non-atomic read-modify-write of a per-key counter in shared memory, so the
 * totals count any violation of mutual exclusion; it touches no Redis, so
 * the figure is the locks' own throughput.  LOCKWEAVE_REDIS_URL says where
 * the locks live: one server (redis://) or a cluster (redis+cluster://).
 * Prints one JSON line.
 */
#define _GNU_SOURCE
#include <lockweave.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEYS_MAX 100000

static struct {
    int procs, iters, keys;
    const char *label;
} opt = {8, 5000, 1000, "lockweave"};

struct shared {
    long counter[KEYS_MAX]; /* touched only under the key's lock */
    long ok[64], failed[64];
    uint64_t start[64], end[64];
};

static struct shared *sh;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

REDIS_LOCK("bench:k:{k}", 10s, 10s, on_fail = -1)
static int section(int k)
{
    long v = sh->counter[k];

    sched_yield(); /* a broken lock would show as a lost increment */
    sh->counter[k] = v + 1;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void worker(int p, uint32_t *lat, int go_fd)
{
    uint64_t seed = now_ns() ^ ((uint64_t)getpid() << 32);
    char b;

    for (int i = 0; i < 50; i++) /* connections, slot map, scripts */
        section(i % opt.keys);
    if (read(go_fd, &b, 1) != 0)
        exit(2);
    sh->start[p] = now_ns();
    for (int i = 0; i < opt.iters; i++) {
        uint64_t t0 = now_ns();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if (section((int)(seed % (uint64_t)opt.keys)) != 0) {
            sh->failed[p]++;
            continue;
        }
        lat[sh->ok[p]++] = (uint32_t)((now_ns() - t0) / 1000);
    }
    sh->end[p] = now_ns();
}

int main(int argc, char **argv)
{
    uint32_t *lat;
    long sections = 0, failed = 0, counted = 0, n = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    int go[2], status, bad = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--procs"))
            opt.procs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters"))
            opt.iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--keys"))
            opt.keys = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--label"))
            opt.label = argv[i + 1];
    }
    if (opt.procs < 1 || opt.procs > 64 || opt.iters < 1 || opt.keys < 1 ||
        opt.keys > KEYS_MAX) {
        fprintf(stderr, "usage: lw_cluster_bench [--procs 1..64] [--iters N] "
                        "[--keys 1..100000] [--label L]\n");
        return 2;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    lat = mmap(NULL, sizeof *lat * (size_t)opt.procs * (size_t)opt.iters,
               PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || lat == MAP_FAILED || pipe(go) != 0)
        return 2;
    for (int p = 0; p < opt.procs; p++) {
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            close(go[1]);
            worker(p, lat + (size_t)p * (size_t)opt.iters, go[0]);
            _exit(0);
        }
    }
    sleep(1); /* every worker warmed up */
    close(go[1]);
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    for (int p = 0; p < opt.procs; p++) {
        sections += sh->ok[p];
        failed += sh->failed[p];
        t0 = sh->start[p] < t0 ? sh->start[p] : t0;
        t1 = sh->end[p] > t1 ? sh->end[p] : t1;
        memmove(lat + n, lat + (size_t)p * (size_t)opt.iters,
                sizeof *lat * (size_t)sh->ok[p]);
        n += sh->ok[p];
    }
    for (int k = 0; k < opt.keys; k++)
        counted += sh->counter[k];
    qsort(lat, (size_t)n, sizeof *lat, cmp_u32);
    printf(
        "{\"label\": \"%s\", \"procs\": %d, \"keys\": %d, \"sections\": %ld, "
        "\"seconds\": %.3f, \"ops_per_s\": %.0f, \"p50_us\": %u, "
        "\"p99_us\": %u, \"violations\": %ld, \"failed\": %ld}\n",
        opt.label, opt.procs, opt.keys, sections, (double)(t1 - t0) / 1e9,
        (double)sections * 1e9 / (double)(t1 - t0), n ? lat[n / 2] : 0,
        n ? lat[(long)(n * 0.99)] : 0, (sections + 50L * opt.procs) - counted,
        failed);
    return bad || failed ? 1 : 0;
}

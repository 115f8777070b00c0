/* Waiting for a busy lock: the wait deadline is honoured (checked with a
 * generous bound; the measured value is printed), wait = 0 makes exactly one
 * attempt, and a waiter is woken by the release rather than by polling (the
 * latency is printed; only a generous bound is asserted). */
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 10
/* Generous bounds: correctness of the mechanism, not a benchmark.  A waiter
 * that is not woken by the release sleeps until backoff or the TTL (10 s
 * here) ends. */
#define DEADLINE_SLACK_MS  500
#define WAKE_MEDIAN_MAX_US 200000
#define WAKE_EACH_MAX_US   2000000

static rh_server srv;

/* ---- wait deadline ---------------------------------------------------- */

static void check_deadline(const char *key, uint32_t wait_ms)
{
    lw_stats before, after;
    lw_stats_get(&before);
    lw_guard g;
    int64_t t0 = now_us();
    int rc = lock_str(&g, key, 10000, wait_ms);
    int64_t took_ms = (now_us() - t0) / 1000;
    printf("wait=%ums on a busy lock: %s after %lld ms\n", wait_ms,
           lw_strerror(rc), (long long)took_ms);
    CHECK_RC(rc, LW_ETIMEOUT);
    CHECK_RC(lw_last_error(), LW_ETIMEOUT);
    CHECK_RANGE(took_ms, wait_ms, wait_ms + DEADLINE_SLACK_MS);
    lw_stats_get(&after);
    CHECK_EQ(after.timed_out - before.timed_out, 1);
    CHECK_EQ(after.contended - before.contended, 1);
    CHECK(after.wait_max_us >= (uint64_t)wait_ms * 1000 * 9 / 10);
    CHECK(after.wait_total_us - before.wait_total_us >=
          (uint64_t)wait_ms * 1000 * 9 / 10);
}

struct holder {
    const char *key;
    int hold_ms;
    atomic_int holding;
};

static void *hold(void *arg)
{
    struct holder *h = arg;
    lw_guard g;
    CHECK_RC(lock_str(&g, h->key, 10000, 0), LW_OK);
    atomic_store(&h->holding, 1);
    sleep_ms(h->hold_ms);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void deadlines(void)
{
    /* Held by some other client (no lockweave in sight). */
    redisReply *r = rh_cmd(&srv, "SET lock:busy someone-else PX 60000");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    check_deadline("busy", 300);
    check_deadline("busy", 1000);

    /* Held by another thread of this process. */
    struct holder h = {"busy2", 2500, 0};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, hold, &h), 0);
    while (!atomic_load(&h.holding))
        sleep_ms(1);
    check_deadline("busy2", 300);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* ---- wait = 0 ----------------------------------------------------------- */

/* How many lock attempts Redis saw, from INFO commandstats.  Commands that a
 * script runs are counted too (the SET NX inside an EVALSHA), so when any
 * script ran, the scripts are the attempts; otherwise plain SET NX are. */
static long long acquire_commands(void)
{
    redisReply *r = rh_cmd(&srv, "INFO commandstats");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    static const char *const scripts[] = {"eval",       "evalsha", "eval_ro",
                                          "evalsha_ro", "fcall",   "fcall_ro"};
    long long nscripts = 0, nsets = 0;
    for (char *line = strtok(r->str, "\r\n"); line;
         line = strtok(NULL, "\r\n")) {
        char name[64];
        long long calls;
        if (sscanf(line, "cmdstat_%63[^:]:calls=%lld", name, &calls) != 2)
            continue;
        for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++)
            if (strcmp(name, scripts[i]) == 0)
                nscripts += calls;
        if (strcmp(name, "set") == 0 || strcmp(name, "setnx") == 0)
            nsets += calls;
        printf("  %s: %lld\n", name, calls);
    }
    freeReplyObject(r);
    return nscripts > 0 ? nscripts : nsets;
}

static void wait_zero(void)
{
    /* Warm up: connection open, scripts loaded, so that only the attempt
     * itself is counted below. */
    lw_guard g;
    CHECK_RC(lock_str(&g, "warm", 10000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    redisReply *r = rh_cmd(&srv, "SET lock:zero someone-else PX 60000");
    freeReplyObject(r);
    lw_stats before, after;
    lw_stats_get(&before);
    r = rh_cmd(&srv, "CONFIG RESETSTAT");
    freeReplyObject(r);
    int64_t t0 = now_us();
    CHECK_RC(lock_str(&g, "zero", 10000, 0), LW_ETIMEOUT);
    int64_t took_us = now_us() - t0;
    printf("wait=0 on a busy lock: LW_ETIMEOUT after %lld us; commands:\n",
           (long long)took_us);
    long long n = acquire_commands();
    CHECK_EQ(n, 1);
    CHECK_RANGE(took_us / 1000, 0, 300);
    lw_stats_get(&after);
    CHECK_EQ(after.timed_out - before.timed_out, 1);

    /* And on a free lock, wait = 0 simply succeeds. */
    CHECK_RC(lock_str(&g, "zero-free", 10000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

/* ---- wake-up latency ---------------------------------------------------- */

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, int64_t *lat, int n)
{
    qsort(lat, (size_t)n, sizeof lat[0], cmp64);
    printf("wake-up latency (%s), release to waiter's acquire, %d rounds: "
           "min %lld us, median %lld us, max %lld us\n",
           what, n, (long long)lat[0], (long long)lat[n / 2],
           (long long)lat[n - 1]);
    CHECK_RANGE(lat[n / 2], 0, WAKE_MEDIAN_MAX_US);
    CHECK_RANGE(lat[n - 1], 0, WAKE_EACH_MAX_US);
}

struct waiter {
    atomic_int waiting;  /* about to call lock */
    atomic_llong got_us; /* when it got the lock */
    int rc;
};

static void *wait_for_it(void *arg)
{
    struct waiter *w = arg;
    lw_guard g;
    atomic_store(&w->waiting, 1);
    w->rc = lock_str(&g, "wake", 10000, 5000);
    atomic_store(&w->got_us, now_us());
    if (w->rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

static void wake_threads(void)
{
    int64_t lat[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, "wake", 10000, 0), LW_OK);
        struct waiter w = {0, 0, 99};
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, wait_for_it, &w), 0);
        while (!atomic_load(&w.waiting))
            sleep_ms(1);
        sleep_ms(100); /* let it find the lock busy and go to sleep */
        int64_t released = now_us();
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_RC(w.rc, LW_OK);
        lat[i] = atomic_load(&w.got_us) - released;
    }
    report("waiter in another thread", lat, ROUNDS);
}

/* The waiter in another process: only Redis can carry the wake-up. */
static void wake_processes(void)
{
    int go[2], back[2];
    CHECK_EQ(pipe(go), 0);
    CHECK_EQ(pipe(back), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        close(back[0]);
        char c;
        while (read(go[0], &c, 1) == 1) {
            lw_guard g;
            int rc = lock_str(&g, "wake-p", 10000, 5000);
            int64_t got = now_us();
            if (rc == LW_OK)
                lw_guard_leave(&g);
            else
                got = -rc; /* tell the parent what went wrong */
            if (write(back[1], &got, sizeof got) != (ssize_t)sizeof got)
                _exit(2);
        }
        lw_shutdown();
        _exit(0);
    }
    close(go[0]);
    close(back[1]);
    int64_t lat[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, "wake-p", 10000, 5000), LW_OK);
        CHECK_EQ(write(go[1], "x", 1), 1);
        sleep_ms(150); /* the child tries, finds it busy, sleeps */
        int64_t released = now_us();
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        int64_t got;
        CHECK_EQ(read(back[0], &got, sizeof got), (long)sizeof got);
        CHECK_MSG(got > 100, "child's lock failed: %s", lw_strerror((int)-got));
        lat[i] = got - released;
    }
    close(go[1]);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(back[0]);
    report("waiter in another process", lat, ROUNDS);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    /* The cross-process part first, so its fork happens before this process
     * has connections of its own (the fork test covers the other order). */
    wake_processes();
    wake_threads();
    deadlines();
    wait_zero();

    lw_shutdown();
    rh_stop(&srv);
    printf("wait: ok\n");
    return 0;
}

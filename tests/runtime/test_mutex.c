/* Mutual exclusion: processes x threads each doing read-modify-write on a
 * counter in Redis (GET, pause, SET: not atomic by itself) under one lock.
 * Any overlap of two critical sections loses an increment, so the final
 * value is exact only if the lock excluded everyone, across threads of a
 * process and across processes. */
#include "util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROCS   3
#define THREADS 4
#define ITERS   40

static rh_server srv;
static atomic_int inside;   /* holders in this process right now */
static atomic_int overlaps; /* times a holder saw another inside */
static atomic_int failures; /* lock calls that did not return LW_OK */

static long long get_counter(redisContext *c)
{
    redisReply *r = redisCommand(c, "GET counter");
    CHECK(r != NULL);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

static void *worker(void *arg)
{
    (void)arg;
    redisContext *c = rh_connect(&srv);
    CHECK(c != NULL);
    lw_lock_opts o = lock_opts(5000, 30000, -1);
    for (int i = 0; i < ITERS; i++) {
        lw_guard g;
        int rc = lw_lock(&g, "counter", 7, &o);
        if (rc != LW_OK) {
            fprintf(stderr, "lock: %s\n", lw_strerror(rc));
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        long long v = get_counter(c);
        sched_yield(); /* widen the window a broken lock would show */
        redisReply *r = redisCommand(c, "SET counter %lld", v + 1);
        CHECK(r != NULL);
        freeReplyObject(r);
        atomic_fetch_sub(&inside, 1);
        rc = lw_guard_leave(&g);
        if (rc != LW_OK) {
            fprintf(stderr, "leave: %s\n", lw_strerror(rc));
            atomic_fetch_add(&failures, 1);
        }
    }
    redisFree(c);
    return NULL;
}

/* THREADS workers in this process; returns 0 if all went well. */
static int run_process(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    return atomic_load(&failures) == 0 && atomic_load(&overlaps) == 0 ? 0 : 1;
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    /* Through the environment, as annotated code would be configured. */
    setenv("LOCKWEAVE_REDIS_URL", srv.url, 1);

    int64_t start = now_ms();
    pid_t kids[PROCS - 1];
    for (int p = 0; p < PROCS - 1; p++) {
        kids[p] = fork();
        CHECK(kids[p] >= 0);
        if (kids[p] == 0) {
            int r = run_process();
            lw_shutdown();
            fflush(stdout);
            _exit(r);
        }
    }
    int bad = run_process();
    for (int p = 0; p < PROCS - 1; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "child %d failed (status 0x%x)", p, st);
    }
    int64_t took = now_ms() - start;

    redisContext *c = rh_connect(&srv);
    CHECK(c != NULL);
    long long total = get_counter(c);
    redisFree(c);
    printf("mutex: %d processes x %d threads x %d = %lld increments in "
           "%lld ms (%.0f sections/s), overlaps in parent %d\n",
           PROCS, THREADS, ITERS, total, (long long)took,
           took > 0 ? total * 1000.0 / (double)took : 0.0,
           atomic_load(&overlaps));
    CHECK_EQ(bad, 0);
    CHECK_EQ(total, PROCS * THREADS * ITERS);
    CHECK_EQ(lock_exists(&srv, "counter"), 0);

    lw_shutdown();
    rh_stop(&srv);
    return 0;
}

/* Fencing tokens: strictly increasing per key across acquisitions, threads
 * and processes.  Each holder appends its token to a Redis list while it
 * holds the lock, so the list is in acquisition order and must be strictly
 * increasing. */
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROCS   2
#define THREADS 2
#define ITERS   25

static rh_server srv;

static void sequential(void)
{
    uint64_t prev = 0;
    for (int i = 0; i < 20; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, "seq", 5000, 0), LW_OK);
        uint64_t f = lw_fence();
        CHECK_MSG(f > prev, "fence %llu after %llu", (unsigned long long)f,
                  (unsigned long long)prev);
        prev = f;
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        CHECK_EQ(lw_fence(), 0);
    }
    /* Another key has its own tokens, also non-zero. */
    lw_guard g;
    CHECK_RC(lock_str(&g, "seq-other", 5000, 0), LW_OK);
    CHECK(lw_fence() > 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void *worker(void *arg)
{
    (void)arg;
    redisContext *c = rh_connect(&srv);
    CHECK(c != NULL);
    for (int i = 0; i < ITERS; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, "shared", 5000, 20000), LW_OK);
        redisReply *r = redisCommand(c, "RPUSH fences %llu",
                                     (unsigned long long)lw_fence());
        CHECK(r && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    redisFree(c);
    return NULL;
}

static void run_threads(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}

static void across_processes(void)
{
    pid_t kids[PROCS - 1];
    for (int p = 0; p < PROCS - 1; p++) {
        kids[p] = fork();
        CHECK(kids[p] >= 0);
        if (kids[p] == 0) {
            run_threads();
            lw_shutdown();
            _exit(0);
        }
    }
    run_threads();
    for (int p = 0; p < PROCS - 1; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
    }
    redisReply *r = rh_cmd(&srv, "LRANGE fences 0 -1");
    CHECK(r && r->type == REDIS_REPLY_ARRAY);
    CHECK_EQ(r->elements, PROCS * THREADS * ITERS);
    unsigned long long prev = 0;
    for (size_t i = 0; i < r->elements; i++) {
        unsigned long long f = strtoull(r->element[i]->str, NULL, 10);
        CHECK_MSG(f > prev, "fence #%zu is %llu after %llu", i, f, prev);
        prev = f;
    }
    printf("fence: %zu acquisitions by %d processes x %d threads, tokens "
           "strictly increasing up to %llu\n",
           r->elements, PROCS, THREADS, prev);
    freeReplyObject(r);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    CHECK_EQ(lw_fence(), 0);
    /* The processes first, forked while this one has no thread of
     * lockweave's yet: what is tested here is the fences, and a fork
     * beside running threads (runtime_fork's subject) can hang a child in
     * the ASan build, whose allocator is not fork-safe (test.sh). */
    across_processes();
    sequential();
    lw_shutdown();
    rh_stop(&srv);
    printf("fence: ok\n");
    return 0;
}

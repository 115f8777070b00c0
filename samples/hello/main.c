/*
 * hello: several threads add to one counter, each addition under the Redis
 * lock "lock:hello:counter".  The counter update is a deliberately slow
 * read-pause-write, so without the lock the threads would overwrite each
 * other's additions; with it the total comes out exact.
 *
 * Redis address: $LOCKWEAVE_REDIS_URL (default redis://127.0.0.1:6379).
 * Run it twice at once and each process still gets its own exact count, while
 * the two exclude each other through Redis.
 */
/* nanosleep() is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include <lockweave.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define ADDS    25

static long counter;

static void slow_pause(void)
{
    struct timespec ts = {0, 200000}; /* 0.2 ms: room for a race to show */
    nanosleep(&ts, NULL);
}

static void *adder(void *arg)
{
    int id = *(const int *)arg;
    lw_lock_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.expire_ms = 5000; /* lease: renewed by the watchdog while held */
    opts.wait_ms = 10000;  /* wait up to 10 s for a busy lock */
    opts.max_renew = -1;   /* renew as long as we hold it */
    static const char key[] = "hello:counter";

    for (int i = 0; i < ADDS; i++) {
        lw_guard g;
        int rc = lw_lock(&g, key, sizeof key - 1, &opts);
        if (rc != LW_OK) {
            fprintf(stderr, "thread %d: lock failed: %s\n", id,
                    lw_strerror(rc));
            return (void *)1;
        }
        long v = counter;
        slow_pause();
        counter = v + 1;
        uint64_t fence = lw_fence();
        rc = lw_guard_leave(&g);
        if (rc != LW_OK) {
            fprintf(stderr, "thread %d: lock lost: %s\n", id, lw_strerror(rc));
            return (void *)1;
        }
        if (i == ADDS - 1)
            printf("thread %d: done, last fencing token %llu\n", id,
                   (unsigned long long)fence);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    int ids[THREADS];
    int failed = 0;

    for (int i = 0; i < THREADS; i++) {
        ids[i] = i;
        pthread_create(&t[i], NULL, adder, &ids[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }

    lw_stats st;
    lw_stats_get(&st);
    printf("counter = %ld (expected %d)\n", counter, THREADS * ADDS);
    printf("locks acquired %llu, found busy %llu, waited %.1f ms in total, "
           "longest wait %.1f ms\n",
           (unsigned long long)st.acquired, (unsigned long long)st.contended,
           st.wait_total_us / 1000.0, st.wait_max_us / 1000.0);
    lw_shutdown();
    return failed || counter != THREADS * ADDS;
}

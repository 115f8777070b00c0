/* Mutual exclusion on a 3-master cluster, keys spread over every master:
 * processes x threads do a non-atomic read-yield-write on a per-key counter
 * in shared memory under the key's lock.  Any overlap loses an increment,
 * so exact totals mean the locks excluded everyone; fences must increase
 * from holder to holder of each key.  Few keys for many threads: waiters
 * queue and are woken or handed the lock across nodes. */
#include <lockweave.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rh_cluster.h"
#include "topology/slot.h"

#define PROCS   2
#define THREADS 4
#define ITERS   150
#define NKEYS   24

struct shared {
    atomic_int inside[NKEYS];
    long counter[NKEYS];             /* only touched under the key's lock */
    unsigned long long fence[NKEYS]; /* last fence seen, under the lock */
    atomic_int overlaps, failures, fence_regressions;
};

static struct shared *sh;
static rh_cluster cl;

static int key_of(int i, char *buf, size_t cap)
{
    return snprintf(buf, cap, "item:%d", i);
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u ^ (unsigned)getpid();
    lw_lock_opts o;

    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.wait_ms = 20000;
    o.max_renew = -1;
    for (int i = 0; i < ITERS; i++) {
        char key[32];
        int k = rand_r(&seed) % NKEYS, len = key_of(k, key, sizeof key), rc;
        lw_guard g;
        long v;

        rc = lw_lock(&g, key, (size_t)len, &o);
        if (rc != LW_OK) {
            fprintf(stderr, "lock %s: %s\n", key, lw_strerror(rc));
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside[k], 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        if (lw_fence() <= sh->fence[k])
            atomic_fetch_add(&sh->fence_regressions, 1);
        sh->fence[k] = lw_fence();
        v = sh->counter[k];
        sched_yield(); /* widen the window a broken lock would show */
        sh->counter[k] = v + 1;
        atomic_fetch_sub(&sh->inside[k], 1);
        rc = lw_guard_leave(&g);
        if (rc != LW_OK) {
            fprintf(stderr, "leave %s: %s\n", key, lw_strerror(rc));
            atomic_fetch_add(&sh->failures, 1);
        }
    }
    return NULL;
}

static void run_process(int p)
{
    pthread_t t[THREADS];

    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker,
                                (void *)(uintptr_t)(p * THREADS + i + 1)),
                 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}

/* hold_at_least in a cluster: after the body, the key stays on its
 * master with what is left of the hold as its TTL, and a second try with
 * wait 0 is refused. */
static void held_at_least(void)
{
    const char *key = "lock:job:{nightly}";
    const char *argv[] = {"PTTL", key};
    size_t lens[] = {4, strlen(key)};
    lw_lock_opts o = {.expire_ms = 30000,
                      .wait_ms = 0,
                      .max_renew = -1,
                      .hold_at_least_ms = 8000};
    lw_guard g;
    redisReply *r;

    CHECK_RC(lw_lock(&g, "job:{nightly}", 13, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    r = rh_cluster_cmd_argv(&cl, lw__key_slot(key, lens[1]), 2, argv, lens);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    printf("cluster hold: PTTL %lld ms after the body\n", r->integer);
    CHECK(r->integer > 0 && r->integer <= 8001);
    freeReplyObject(r);
    o.hold_at_least_ms = 0;
    CHECK_RC(lw_lock(&g, "job:{nightly}", 13, &o), LW_ETIMEOUT);
}

/* Several keys as one lock, in different slots (different masters). */
static void several_slots(void)
{
    lw_lock_opts o = {.expire_ms = 10000, .wait_ms = 1000, .max_renew = -1};
    lw_guard ga, gb, *g[2] = {&gb, &ga};
    const char *ka = "lock:acct:{a}", *kb = "lock:acct:{b}";

    CHECK(rh_cluster_master_of(&cl, lw__key_slot(ka, strlen(ka))) !=
          rh_cluster_master_of(&cl, lw__key_slot(kb, strlen(kb))));
    lw_guard_init(&ga, &o);
    lw_guard_key_str(&ga, "acct:{a}");
    lw_guard_init(&gb, &o);
    lw_guard_key_str(&gb, "acct:{b}");
    CHECK_RC(lw_guard_enter_all(g, 2), LW_OK);
    CHECK(lw_fence_of("acct:{a}", 8) != 0 && lw_fence_of("acct:{b}", 8) != 0);
    for (int i = 0; i < 2; i++) {
        const char *k = i ? kb : ka;
        const char *argv[] = {"EXISTS", k};
        size_t lens[] = {6, strlen(k)};
        redisReply *r =
            rh_cluster_cmd_argv(&cl, lw__key_slot(k, lens[1]), 2, argv, lens);
        CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
        freeReplyObject(r);
    }
    CHECK_RC(lw_guard_leave_all(g, 2), LW_OK);
}

static pthread_barrier_t sem_in, sem_out;

static void *shared_holder(void *arg)
{
    const lw_lock_opts *o = arg;
    lw_guard g;

    CHECK_RC(lw_lock(&g, "api:{t}", 7, o), LW_OK);
    pthread_barrier_wait(&sem_in);
    pthread_barrier_wait(&sem_out);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

/* A lock two holders share in a cluster (a 2-permit semaphore, then a read
 * lock): both hold at once (each in its own thread) and are counted in set
 * on the key's master, and a third (a writer, for the read lock) is
 * refused. */
static void shared(const lw_lock_opts *o, const lw_lock_opts *third,
                   const char *set)
{
    const char *argv[] = {"ZCOUNT", set, "-inf", "(+inf"};
    size_t lens[] = {6, strlen(set), 4, 5};
    pthread_t t[2];
    lw_guard g;
    redisReply *r;

    pthread_barrier_init(&sem_in, NULL, 3);
    pthread_barrier_init(&sem_out, NULL, 3);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, shared_holder, (void *)o) == 0);
    pthread_barrier_wait(&sem_in);
    r = rh_cluster_cmd_argv(&cl, lw__key_slot(set, lens[1]), 4, argv, lens);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 2);
    freeReplyObject(r);
    CHECK_RC(lw_lock(&g, "api:{t}", 7, third), LW_ETIMEOUT);
    pthread_barrier_wait(&sem_out);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    pthread_barrier_destroy(&sem_in);
    pthread_barrier_destroy(&sem_out);
}

static void semaphore_and_readers(void)
{
    lw_lock_opts sem = {.expire_ms = 10000, .wait_ms = 0, .permits = 2};
    lw_lock_opts rd = {.expire_ms = 10000, .flags = LW_LOCK_READ};
    lw_lock_opts wr = {.expire_ms = 10000};

    shared(&sem, &sem, "lock:api:{t}");
    shared(&rd, &wr, "{t}lock:api:{t}:r");
}

int main(void)
{
    pid_t kids[PROCS - 1];
    rh_server *owners[3] = {0};
    int nowners = 0;
    long total = 0;
    struct timespec t0, t1;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    /* The keys really are spread: every master serves some. */
    for (int k = 0; k < NKEYS; k++) {
        char key[40];
        int len = snprintf(key, sizeof key, "lock:item:%d", k), j;
        rh_server *m =
            rh_cluster_master_of(&cl, lw__key_slot(key, (size_t)len));
        CHECK(m != NULL);
        for (j = 0; j < nowners && owners[j] != m; j++)
            ;
        if (j == nowners)
            owners[nowners++] = m;
    }
    CHECK_EQ(nowners, 3);
    /* Through the environment, as annotated code would be configured. */
    setenv("LOCKWEAVE_REDIS_URL", cl.url, 1);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int p = 0; p < PROCS - 1; p++) {
        kids[p] = fork();
        CHECK(kids[p] >= 0);
        if (kids[p] == 0) {
            run_process(p + 1);
            lw_shutdown();
            _exit(0);
        }
    }
    run_process(0);
    for (int p = 0; p < PROCS - 1; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (0x%x)",
                  st);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int k = 0; k < NKEYS; k++)
        total += sh->counter[k];
    printf("cluster mutex: %d processes x %d threads x %d sections over %d "
           "keys on 3 masters: %ld counted in %.2f s; overlaps %d, failures "
           "%d, fence regressions %d\n",
           PROCS, THREADS, ITERS, NKEYS, total,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           atomic_load(&sh->overlaps), atomic_load(&sh->failures),
           atomic_load(&sh->fence_regressions));
    CHECK_EQ(atomic_load(&sh->failures), 0);
    CHECK_EQ(atomic_load(&sh->overlaps), 0);
    CHECK_EQ(atomic_load(&sh->fence_regressions), 0);
    CHECK_EQ(total, PROCS * THREADS * ITERS);
    /* Every lock was released on its own master. */
    for (int k = 0; k < NKEYS; k++) {
        char key[40];
        int len = snprintf(key, sizeof key, "lock:item:%d", k);
        const char *argv[] = {"EXISTS", key};
        size_t lens[] = {6, (size_t)len};
        redisReply *r = rh_cluster_cmd_argv(&cl, lw__key_slot(key, (size_t)len),
                                            2, argv, lens);
        CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
        CHECK_MSG(r->integer == 0, "%s still exists", key);
        freeReplyObject(r);
    }
    held_at_least();
    several_slots();
    semaphore_and_readers();
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}

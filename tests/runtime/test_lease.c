/*
 * Leases: a held lock as a value (lw_acquire, lw_release), on one server
 * and under Redlock:
 *   handed_over   4 processes x 4 threads: each lease is taken by one
 *                 thread and released by another (a releaser thread per
 *                 process); no two sections of a key overlap, fences rise
 *                 in the order the sections ran, nothing times out
 *   basics        the key in Redis while held and gone after; fence,
 *                 lw_lease_held(), lw_last_error(); bad arguments
 *   not_reentry   a thread holding a key through a guard waits for it like
 *                 anyone when it asks for a lease of it
 *   several_keys  all or none within one wait, in the global order (two
 *                 threads asking for the same keys in opposite orders);
 *                 a key given twice is taken once; each key's fence
 *   kinds         read leases share, a write lease excludes them, a
 *                 semaphore's N; hold_at_least keeps the key after release
 *   lost          a key deleted behind the lease's back: lw_lease_held()
 *                 turns 0, lw_release() says LW_ELOST
 *   forked        a child's lw_release() of its parent's lease is
 *                 LW_EFORKED and leaves the lock alone
 *   shutdown      lw_shutdown() gives a held lease's lock back; releasing
 *                 it afterwards is LW_ELOST
 *   redlock       a lease on three independent masters
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define PROCS   4
#define THREADS 4
#define ITERS   25

static rh_server srv;

static int take(const char *key, lw_lock_opts o, lw_lease **out)
{
    return lw_acquire(key, strlen(key), &o, out);
}

/* handed_over ------------------------------------------------------------ */

struct section {
    int64_t begin_us, end_us;
    uint64_t fence;
};

struct shared {
    atomic_int inside, overlaps, failures, n;
    struct section s[PROCS * THREADS * ITERS];
};

static struct shared *sh;

/* A one-slot mailbox from the locking threads to the releaser. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lw_lease *slot;
    int done;
} box = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void *releaser(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&box.mu);
    for (;;) {
        while (box.slot == NULL && !box.done)
            pthread_cond_wait(&box.cv, &box.mu);
        if (box.slot == NULL)
            break;
        lw_lease *l = box.slot;
        box.slot = NULL;
        pthread_cond_broadcast(&box.cv);
        pthread_mutex_unlock(&box.mu);
        if (lw_release(l) != LW_OK)
            atomic_fetch_add(&sh->failures, 1);
        pthread_mutex_lock(&box.mu);
    }
    pthread_mutex_unlock(&box.mu);
    return NULL;
}

/* Hand l to the releaser, once the slot is free. */
static void hand_over(lw_lease *l)
{
    pthread_mutex_lock(&box.mu);
    while (box.slot != NULL)
        pthread_cond_wait(&box.cv, &box.mu);
    box.slot = l;
    pthread_cond_broadcast(&box.cv);
    pthread_mutex_unlock(&box.mu);
}

static void *locker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        lw_lease *l;
        if (take("ho", lock_opts(10000, 30000, -1), &l) != LW_OK) {
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        int k = atomic_fetch_add(&sh->n, 1);
        sh->s[k].begin_us = now_us();
        sh->s[k].fence = lw_lease_fence(l);
        usleep(200);
        sh->s[k].end_us = now_us();
        atomic_fetch_sub(&sh->inside, 1);
        /* The section is over; the lock is given back by another thread. */
        hand_over(l);
    }
    return NULL;
}

static void handed_over_proc(int p)
{
    pthread_t t[THREADS], r;

    (void)p;
    use_server(&srv);
    CHECK_EQ(pthread_create(&r, NULL, releaser, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, locker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    pthread_mutex_lock(&box.mu);
    box.done = 1;
    pthread_cond_broadcast(&box.cv);
    pthread_mutex_unlock(&box.mu);
    CHECK_EQ(pthread_join(r, NULL), 0);
}

static int by_begin(const void *a, const void *b)
{
    const struct section *x = a, *y = b;
    return (x->begin_us > y->begin_us) - (x->begin_us < y->begin_us);
}

static void handed_over(void)
{
    int n;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    in_processes(PROCS, handed_over_proc);
    n = atomic_load(&sh->n);
    printf("handed_over: %d sections, %d overlapping, %d failed\n", n,
           atomic_load(&sh->overlaps), atomic_load(&sh->failures));
    CHECK_EQ(n, PROCS * THREADS * ITERS);
    CHECK_EQ(atomic_load(&sh->overlaps), 0);
    CHECK_EQ(atomic_load(&sh->failures), 0);
    qsort(sh->s, (size_t)n, sizeof sh->s[0], by_begin);
    for (int i = 1; i < n; i++) {
        CHECK_MSG(sh->s[i].begin_us >= sh->s[i - 1].end_us,
                  "sections %d and %d overlap", i - 1, i);
        CHECK_MSG(sh->s[i].fence > sh->s[i - 1].fence, "fence %llu after %llu",
                  (unsigned long long)sh->s[i].fence,
                  (unsigned long long)sh->s[i - 1].fence);
    }
    CHECK_EQ(lock_exists(&srv, "ho"), 0);
    munmap(sh, sizeof *sh);
}

/* basics ----------------------------------------------------------------- */

static void basics(void)
{
    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_lease *l, *other = (lw_lease *)&o;
    lw_stats before, after;

    lw_stats_get(&before);
    CHECK_RC(take("basic", o, &l), LW_OK);
    CHECK_RC(lw_last_error(), LW_OK);
    CHECK(l != NULL);
    CHECK(lw_lease_fence(l) > 0);
    CHECK_EQ(lw_lease_fence_of(l, "basic", 5), lw_lease_fence(l));
    CHECK_EQ(lw_lease_fence_of(l, "other", 5), 0);
    CHECK_EQ(lw_lease_held(l), 1);
    CHECK_EQ(lock_exists(&srv, "basic"), 1);
    /* Busy for anyone else, a lease or a guard. */
    CHECK_RC(take("basic", o, &other), LW_ETIMEOUT);
    CHECK(other == NULL);
    CHECK_RC(lw_last_error(), LW_ETIMEOUT);
    lw_stats_get(&after);
    CHECK_EQ(after.held, before.held + 1);
    CHECK_RC(lw_release(l), LW_OK);
    CHECK_EQ(lock_exists(&srv, "basic"), 0);
    lw_stats_get(&after);
    CHECK_EQ(after.held, before.held);
    CHECK_EQ(after.acquired, before.acquired + 1);

    /* Bad arguments. */
    CHECK_RC(lw_release(NULL), LW_EINVAL);
    CHECK_RC(lw_acquire("k", 1, &o, NULL), LW_EINVAL);
    CHECK_RC(lw_acquire(NULL, 1, &o, &l), LW_EINVAL);
    CHECK_RC(lw_acquire("k", 0, &o, &l), LW_EINVAL);
    CHECK_RC(lw_acquire("k", 1, NULL, &l), LW_EINVAL);
    o.expire_ms = 0;
    CHECK_RC(lw_acquire("k", 1, &o, &l), LW_EINVAL);
    CHECK(l == NULL);
    CHECK_EQ(lw_lease_held(NULL), 0);
    CHECK_EQ(lw_lease_fence(NULL), 0);
    printf("basics: ok\n");
}

/* not_reentry ------------------------------------------------------------ */

static void not_reentry(void)
{
    lw_guard g;
    lw_lease *l;

    CHECK_RC(lock_str(&g, "nr", 10000, 0), LW_OK);
    CHECK_RC(take("nr", lock_opts(10000, 200, -1), &l), LW_ETIMEOUT);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_RC(take("nr", lock_opts(10000, 0, -1), &l), LW_OK);
    /* And the other way: a guard is not satisfied by the thread's lease. */
    CHECK_RC(lock_str(&g, "nr", 10000, 200), LW_ETIMEOUT);
    CHECK_RC(lw_release(l), LW_OK);
    printf("not_reentry: ok\n");
}

/* several_keys ----------------------------------------------------------- */

static atomic_int pair_failures;

static void *pair_taker(void *arg)
{
    int reverse = (int)(intptr_t)arg;
    const void *keys[2] = {"pair:a", "pair:b"};
    size_t lens[2] = {6, 6};
    lw_lock_opts o = lock_opts(10000, 20000, -1);

    if (reverse) {
        keys[0] = "pair:b";
        keys[1] = "pair:a";
    }
    for (int i = 0; i < 30; i++) {
        lw_lease *l;
        if (lw_acquire_keys(keys, lens, 2, &o, &l) != LW_OK) {
            atomic_fetch_add(&pair_failures, 1);
            continue;
        }
        if (lw_lease_fence_of(l, "pair:a", 6) == 0 ||
            lw_lease_fence_of(l, "pair:b", 6) == 0)
            atomic_fetch_add(&pair_failures, 1);
        if (lw_release(l) != LW_OK)
            atomic_fetch_add(&pair_failures, 1);
    }
    return NULL;
}

static void several_keys(void)
{
    const void *keys[3] = {"sk:1", "sk:2", "sk:1"};
    size_t lens[3] = {4, 4, 4};
    lw_lock_opts o = lock_opts(10000, 300, -1);
    pthread_t t[2];
    lw_lease *l, *busy;

    /* Opposite orders, one global order: no deadlock, nothing times out. */
    for (intptr_t i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, pair_taker, (void *)i), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(atomic_load(&pair_failures), 0);

    /* A key given twice is taken once. */
    CHECK_RC(lw_acquire_keys(keys, lens, 3, &o, &l), LW_OK);
    CHECK(lw_lease_fence_of(l, "sk:1", 4) > 0);
    CHECK(lw_lease_fence_of(l, "sk:2", 4) > 0);
    /* All or none: sk:2 is busy, so sk:3 is given back. */
    keys[0] = "sk:3";
    CHECK_RC(lw_acquire_keys(keys, lens, 2, &o, &busy), LW_ETIMEOUT);
    CHECK_EQ(lock_exists(&srv, "sk:3"), 0);
    CHECK_RC(lw_release(l), LW_OK);
    CHECK_EQ(lock_exists(&srv, "sk:1"), 0);
    CHECK_EQ(lock_exists(&srv, "sk:2"), 0);
    CHECK_RC(lw_acquire_keys(keys, lens, 0, &o, &l), LW_EINVAL);
    CHECK_RC(lw_acquire_keys(keys, lens, 65, &o, &l), LW_EINVAL);
    printf("several_keys: ok\n");
}

/* kinds ------------------------------------------------------------------ */

static void kinds(void)
{
    lw_lock_opts rd = lock_opts(10000, 0, -1), wr = rd, sem = rd, hold;
    lw_lease *r1, *r2, *w, *s[3];

    rd.flags = LW_LOCK_READ;
    CHECK_RC(take("kind:rw", rd, &r1), LW_OK);
    CHECK_RC(take("kind:rw", rd, &r2), LW_OK); /* readers share */
    CHECK_RC(take("kind:rw", wr, &w), LW_ETIMEOUT);
    CHECK_RC(lw_release(r1), LW_OK);
    CHECK_RC(lw_release(r2), LW_OK);
    CHECK_RC(take("kind:rw", wr, &w), LW_OK);
    CHECK_RC(take("kind:rw", rd, &r1), LW_ETIMEOUT);
    CHECK_RC(lw_release(w), LW_OK);

    sem.permits = 2;
    CHECK_RC(take("kind:sem", sem, &s[0]), LW_OK);
    CHECK_RC(take("kind:sem", sem, &s[1]), LW_OK);
    CHECK_RC(take("kind:sem", sem, &s[2]), LW_ETIMEOUT);
    CHECK_RC(lw_release(s[0]), LW_OK);
    CHECK_RC(take("kind:sem", sem, &s[2]), LW_OK);
    CHECK_RC(lw_release(s[1]), LW_OK);
    CHECK_RC(lw_release(s[2]), LW_OK);

    hold = lock_opts(10000, 0, -1);
    hold.hold_at_least_ms = 3000;
    CHECK_RC(take("kind:hold", hold, &w), LW_OK);
    CHECK_RC(lw_release(w), LW_OK);
    CHECK_EQ(lock_exists(&srv, "kind:hold"), 1); /* kept for the hold */
    CHECK(lock_pttl(&srv, "kind:hold") > 1000);
    printf("kinds: ok\n");
}

/* lost ------------------------------------------------------------------- */

static int not_held(void *arg)
{
    return lw_lease_held(arg) == 0;
}

static void lost(void)
{
    lw_lease *l;
    lw_stats before, after;

    lw_stats_get(&before);
    CHECK_RC(take("lost", lock_opts(900, 0, -1), &l), LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:lost"), 1);
    /* The watchdog's next renewal (every lease/3) finds it gone. */
    CHECK(wait_until(not_held, l, 5000) >= 0);
    CHECK_RC(lw_release(l), LW_ELOST);
    lw_stats_get(&after);
    CHECK_EQ(after.lost, before.lost + 1);

    /* Released before the watchdog looked: the release itself notices. */
    CHECK_RC(take("lost", lock_opts(30000, 0, -1), &l), LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:lost"), 1);
    CHECK_RC(lw_release(l), LW_ELOST);
    printf("lost: ok\n");
}

/* forked ----------------------------------------------------------------- */

static void forked(void)
{
    lw_lease *l;
    pid_t child;
    int status;

    CHECK_RC(take("fk", lock_opts(10000, 0, -1), &l), LW_OK);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        CHECK_EQ(lw_lease_held(l), 0);
        CHECK_EQ(lw_lease_fence(l), 0);
        CHECK_RC(lw_release(l), LW_EFORKED);
        _exit(0);
    }
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(lock_exists(&srv, "fk"), 1);
    CHECK_EQ(lw_lease_held(l), 1);
    CHECK_RC(lw_release(l), LW_OK);
    printf("forked: ok\n");
}

/* shutdown --------------------------------------------------------------- */

static void shutdown_lease(void)
{
    lw_lease *l;

    CHECK_RC(take("sd", lock_opts(10000, 0, -1), &l), LW_OK);
    lw_shutdown();
    CHECK_EQ(lock_exists(&srv, "sd"), 0); /* given back by lw_shutdown() */
    CHECK_RC(lw_release(l), LW_ELOST);
    use_server(&srv);
    printf("shutdown: ok\n");
}

/* redlock ---------------------------------------------------------------- */

static void redlock(void)
{
    rh_server m[3];
    char url[256];
    lw_lease *l, *busy;
    int n = 0;

    for (int i = 0; i < 3; i++) {
        CHECK_EQ(rh_start(&m[i], NULL), 0);
        n += snprintf(url + n, sizeof url - (size_t)n, "%s%s", i ? "," : "",
                      m[i].url);
    }
    use_url(url, 1000, 2000);
    CHECK_RC(take("rl", lock_opts(10000, 0, -1), &l), LW_OK);
    CHECK_EQ(lw_lease_fence(l), 0); /* no fences under Redlock */
    CHECK_EQ(lw_lease_held(l), 1);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(lock_exists(&m[i], "rl"), 1);
    CHECK_RC(take("rl", lock_opts(10000, 100, -1), &busy), LW_ETIMEOUT);
    CHECK_RC(lw_release(l), LW_OK);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(lock_exists(&m[i], "rl"), 0);
    lw_shutdown();
    for (int i = 0; i < 3; i++)
        rh_stop(&m[i]);
    use_server(&srv);
    printf("redlock: ok\n");
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    basics();
    not_reentry();
    several_keys();
    kinds();
    lost();
    forked();
    handed_over();
    shutdown_lease();
    redlock();
    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("lease: ok\n");
    return 0;
}

/* In-process cohorts: threads of one process that want the same key share
 * its place in Redis's queue, and the lock goes from thread to thread with
 * no round trip, a bounded number of times in a row.
 *   handed_locally  8 threads on one key: exclusion, fences strictly
 *                   increasing (+1 from thread to thread), and fewer lock
 *                   commands in Redis than sections
 *   two_threads     two threads taking turns: a run's fences come in one
 *                   INCRBY, not one per hand-off
 *   bounded_run     another process queued in Redis gets the key after at
 *                   most LOCKWEAVE_LOCAL_HANDOFFS + 1 sections of ours
 *   old_lease       a lease with less than 3/4 of its length left goes back
 *                   through Redis, not to the next thread
 *   counter_lost    fences keep increasing from thread to thread when the
 *                   fence counter is lost while a thread holds the key
 *   wait_rules      wait 0 beside a sibling holder, a waiter's deadline
 *   shutdown        waiters on the process's list return LW_ESHUTDOWN
 *   forked          a child forked while threads hold and wait takes the
 *                   key through Redis, not behind the parent's threads
 *   removed_first   the key removed behind the holder's back (what a
 *                   forced unlock or an eviction does) and taken by another
 *                   process before the holder's first hand-off of a run:
 *                   the holder learns LW_ELOST, no fence of the run is
 *                   minted, and the sibling gets the key after the other
 *                   process, with a higher fence
 *   removed_mid_run the same between two later hand-offs: the section that
 *                   ended while the other process held the key, and the
 *                   sibling it handed the key to, both learn LW_ELOST, and
 *                   the sibling's fence is below the other process's */
#include "util.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define ITERS   40

static rh_server srv;

/* Calls of the commands that take or give back a lock (SET NX, fence
 * INCR and INCRBY, the scripts, BLPOP on a mailbox). */
static long long lock_calls(void)
{
    static const char *const names[] = {"set",  "incr",    "incrby",
                                        "eval", "evalsha", "blpop"};

    return command_calls(&srv, names, sizeof names / sizeof *names);
}

static lw_stats stats(void)
{
    lw_stats s;
    lw_stats_get(&s);
    return s;
}

/* handed_locally --------------------------------------------------------- */

static struct {
    pthread_mutex_t mu; /* guards n and fences: taken inside the section */
    int inside;         /* threads in the section right now */
    int overlaps;
    size_t n;
    uint64_t fences[THREADS * ITERS];
} sh = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *section_loop(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, "cohort", 10000, 20000), LW_OK);
        if (__atomic_add_fetch(&sh.inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&sh.overlaps, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&sh.mu);
        sh.fences[sh.n++] = lw_fence();
        pthread_mutex_unlock(&sh.mu);
        sleep_ms(1); /* long enough for the others to line up */
        __atomic_sub_fetch(&sh.inside, 1, __ATOMIC_SEQ_CST);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    return NULL;
}

static void handed_locally(void)
{
    pthread_t t[THREADS];
    lw_stats before = stats(), after;
    long long calls = lock_calls(), used;
    size_t plus_one = 0;

    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, section_loop, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    after = stats();
    used = lock_calls() - calls;
    CHECK_EQ(sh.overlaps, 0);
    CHECK_EQ(sh.n, (size_t)THREADS * ITERS);
    for (size_t i = 1; i < sh.n; i++) {
        CHECK_MSG(sh.fences[i] > sh.fences[i - 1], "fence %llu after %llu",
                  (unsigned long long)sh.fences[i],
                  (unsigned long long)sh.fences[i - 1]);
        plus_one += sh.fences[i] == sh.fences[i - 1] + 1;
    }
    printf("handed_locally: %zu sections, %llu handed from thread to thread "
           "(%zu fences +1), %lld lock commands in Redis\n",
           sh.n,
           (unsigned long long)(after.handed_locally - before.handed_locally),
           plus_one, used);
    CHECK(after.handed_locally - before.handed_locally > sh.n / 2);
    CHECK_EQ(after.acquired - before.acquired, sh.n);
    CHECK(plus_one > sh.n / 2);
    /* Through Redis, every section costs at least a take and a give-back. */
    CHECK_MSG(used < (long long)sh.n, "%lld lock commands for %zu sections",
              used, sh.n);
    CHECK_EQ(lock_exists(&srv, "cohort"), 0);
}

/* two_threads ------------------------------------------------------------ */

#define DUO_ITERS 16

static struct {
    int wants[2];         /* the thread is asking for the key, or about to */
    uint64_t asked_at[2]; /* lw_stats.contended just before it asked */
    int done[2];
    uint64_t fence[2 * DUO_ITERS]; /* in section order: the sections */
    int n;                         /* alternate, each written under the lock */
} duo;

/* Has the other thread joined the process's list for the key?  While we
 * hold it, nobody else can find it busy: the count moved past what the
 * other thread read before asking means it waits on the list (the count
 * is raised under the list's mutex, which our release takes next). */
static int other_waits(void *arg)
{
    int other = *(int *)arg;

    return __atomic_load_n(&duo.done[other], __ATOMIC_SEQ_CST) ||
           (__atomic_load_n(&duo.wants[other], __ATOMIC_SEQ_CST) &&
            stats().contended >
                __atomic_load_n(&duo.asked_at[other], __ATOMIC_SEQ_CST));
}

/* Each holder leaves only once the other thread waits for the key (or has
 * no section left): every release has one waiter to hand on to. */
static void *duo_loop(void *arg)
{
    int me = (int)(intptr_t)arg, other = 1 - me;

    for (int i = 0; i < DUO_ITERS; i++) {
        lw_guard g;
        __atomic_store_n(&duo.asked_at[me], stats().contended,
                         __ATOMIC_SEQ_CST);
        __atomic_store_n(&duo.wants[me], 1, __ATOMIC_SEQ_CST);
        CHECK_RC(lock_str(&g, "duo", 10000, 20000), LW_OK);
        duo.fence[duo.n++] = lw_fence();
        __atomic_store_n(&duo.wants[me], 0, __ATOMIC_SEQ_CST);
        CHECK(wait_until(other_waits, &other, 10000) >= 0);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    __atomic_store_n(&duo.done[me], 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void two_threads(void)
{
    pthread_t t[2];
    lw_stats before = stats(), after;
    long long minted = 1;
    uint64_t handed;

    for (intptr_t i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, duo_loop, (void *)i), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    after = stats();
    handed = after.handed_locally - before.handed_locally;
    /* A fence that is not its predecessor's + 1 was minted by a script of
     * its own (each starts at the server's clock or above): an
     * acquisition through Redis, or the batch for the rest of a run. */
    CHECK_EQ(duo.n, 2 * DUO_ITERS);
    for (int i = 1; i < duo.n; i++) {
        CHECK_MSG(duo.fence[i] > duo.fence[i - 1], "fence %llu after %llu",
                  (unsigned long long)duo.fence[i],
                  (unsigned long long)duo.fence[i - 1]);
        minted += duo.fence[i] != duo.fence[i - 1] + 1;
    }
    printf("two_threads: %d sections, %llu handed from thread to thread, "
           "%lld scripts minted their fences\n",
           2 * DUO_ITERS, (unsigned long long)handed, minted);
    /* Runs of LOCKWEAVE_LOCAL_HANDOFFS + 1 (default 16) sections, each
     * begun by an acquisition through Redis; one that began while the
     * other thread was still on its way to the list may end early.  Each
     * run mints twice: its acquisition, then its hand-offs' batch. */
    CHECK(handed >= DUO_ITERS);
    CHECK_MSG(minted <= 2 * (2 * DUO_ITERS - (long long)handed),
              "%lld mints for %llu hand-offs", minted,
              (unsigned long long)handed);
}

/* bounded_run ------------------------------------------------------------ */

#define RUN_HANDOFFS 3

static int stop_run;
static int seen_queued; /* our sections that saw the other process queued */

/* While a thread of ours holds the key, our other threads wait on the
 * process's list, not in Redis: anyone in Redis's queue is the child. */
static void *run_loop(void *arg)
{
    redisContext *c = rh_connect(&srv);

    (void)arg;
    CHECK(c != NULL);
    while (!__atomic_load_n(&stop_run, __ATOMIC_SEQ_CST)) {
        lw_guard g;
        redisReply *r;
        CHECK_RC(lock_str(&g, "run", 10000, 20000), LW_OK);
        r = redisCommand(c, "ZCARD {lock:run}:q");
        CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
        if (r->integer > 0 &&
            __atomic_add_fetch(&seen_queued, 1, __ATOMIC_SEQ_CST) > 100)
            __atomic_store_n(&stop_run, 1, __ATOMIC_SEQ_CST); /* starved */
        freeReplyObject(r);
        sleep_ms(1);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    redisFree(c);
    return NULL;
}

static void bounded_run(void)
{
    char n[16];
    pthread_t t[4];
    int go[2], status;
    pid_t child;
    lw_guard g;

    /* Strict FIFO in Redis (no competing young waiter): the child is handed
     * the key by the first release through Redis after it queued. */
    snprintf(n, sizeof n, "%d", RUN_HANDOFFS);
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", n, 1);
    setenv("LOCKWEAVE_HANDOFF_MS", "0", 1);
    use_server(&srv);
    CHECK_EQ(pipe(go), 0);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char b;
        close(go[1]);
        CHECK_EQ(read(go[0], &b, 1), 1);
        CHECK_RC(lock_str(&g, "run", 10000, 10000), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        lw_shutdown();
        _exit(0);
    }
    close(go[0]);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, run_loop, NULL), 0);
    sleep_ms(50);
    CHECK_EQ(write(go[1], "x", 1), 1);
    CHECK_EQ(waitpid(child, &status, 0), child);
    __atomic_store_n(&stop_run, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    close(go[1]);
    printf("bounded_run: %d of our sections saw the other process queued "
           "(at most %d)\n",
           seen_queued, RUN_HANDOFFS + 1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_RANGE(seen_queued, 0, RUN_HANDOFFS + 1);
    unsetenv("LOCKWEAVE_LOCAL_HANDOFFS");
    unsetenv("LOCKWEAVE_HANDOFF_MS");
    use_server(&srv);
}

/* old_lease, wait_rules, shutdown: one holder thread and waiters -------- */

struct holder {
    const char *key;
    lw_lock_opts opts;
    int hold_ms;   /* > 0: leave after this long; else when `release` posts */
    sem_t entered; /* posted once it holds the key */
    sem_t release;
    uint64_t fence; /* lw_fence() in the section */
    int64_t in_us;  /* when the section began */
    int rc;         /* what leaving the section returned */
    pthread_t t;
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;
    lw_guard g;

    CHECK_RC(lw_lock(&g, h->key, strlen(h->key), &h->opts), LW_OK);
    h->in_us = now_us();
    h->fence = lw_fence();
    sem_post(&h->entered);
    if (h->hold_ms > 0)
        sleep_ms(h->hold_ms);
    else
        sem_wait(&h->release);
    h->rc = lw_guard_leave(&g);
    return NULL;
}

/* A thread that takes key with o and holds it: hold_ms, or until `release`
 * is posted.  Returns at once: `entered` is posted once it holds it. */
static void holder_spawn(struct holder *h, const char *key, lw_lock_opts o,
                         int hold_ms)
{
    h->key = key;
    h->opts = o;
    h->hold_ms = hold_ms;
    sem_init(&h->entered, 0, 0);
    sem_init(&h->release, 0, 0);
    CHECK_EQ(pthread_create(&h->t, NULL, holder_main, h), 0);
}

/* The same, returning once it holds the key. */
static void holder_start(struct holder *h, const char *key, lw_lock_opts o,
                         int hold_ms)
{
    holder_spawn(h, key, o, hold_ms);
    sem_wait(&h->entered);
}

static void holder_join(struct holder *h)
{
    CHECK_EQ(pthread_join(h->t, NULL), 0);
    sem_destroy(&h->entered);
    sem_destroy(&h->release);
}

struct waiter {
    const char *key;
    uint32_t wait_ms;
    int rc;
    int64_t took_ms;
    uint64_t fence; /* lw_fence() once it held the key */
    pthread_t t;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    int64_t t0 = now_ms();
    lw_guard g;

    w->rc = lock_str(&g, w->key, 10000, w->wait_ms);
    w->took_ms = now_ms() - t0;
    if (w->rc == LW_OK) {
        w->fence = lw_fence();
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    return NULL;
}

static void waiter_start(struct waiter *w, const char *key, uint32_t wait_ms)
{
    *w = (struct waiter){.key = key, .wait_ms = wait_ms};
    CHECK_EQ(pthread_create(&w->t, NULL, waiter_main, w), 0);
}

static int contended_reaches(void *arg)
{
    return stats().contended >= *(uint64_t *)arg;
}

/* Block until n more acquisitions than `from` have found their key busy. */
static void await_contended(uint64_t from, uint64_t n)
{
    uint64_t want = from + n;
    CHECK(wait_until(contended_reaches, &want, 10000) >= 0);
}

static void old_lease(void)
{
    struct holder h;
    struct waiter w;
    lw_stats before;

    /* No renewals: after 800 ms of its 2000 ms lease the holder has 1200 ms
     * left at most, less than 3/4 of the waiter's lease (10000 ms). */
    holder_start(&h, "old", lock_opts(2000, 0, 0), 800);
    before = stats();
    waiter_start(&w, "old", 20000);
    await_contended(before.contended, 1);
    holder_join(&h);
    CHECK_EQ(pthread_join(w.t, NULL), 0);
    CHECK_RC(h.rc, LW_OK);
    CHECK_RC(w.rc, LW_OK);
    printf(
        "old_lease: handed on from thread to thread: %llu\n",
        (unsigned long long)(stats().handed_locally - before.handed_locally));
    CHECK_EQ(stats().handed_locally, before.handed_locally);
}

static void counter_lost(void)
{
    struct waiter w;
    lw_stats before;
    uint64_t f1;
    lw_guard g;

    /* A lease far longer than the waiter's: it is handed on locally even
     * after a long stall of this machine (3/4 of 10 s must be left). */
    CHECK_RC(lock_str(&g, "lost", 60000, 0), LW_OK);
    f1 = lw_fence();
    before = stats();
    waiter_start(&w, "lost", 20000);
    await_contended(before.contended, 1);
    forget_fences(&srv);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(w.t, NULL), 0);
    CHECK_RC(w.rc, LW_OK);
    printf("counter_lost: fence %llu, counter deleted, handed on with %llu\n",
           (unsigned long long)f1, (unsigned long long)w.fence);
    CHECK_EQ(stats().handed_locally, before.handed_locally + 1);
    CHECK_MSG(w.fence > f1, "fence went from %llu to %llu",
              (unsigned long long)f1, (unsigned long long)w.fence);
}

static void wait_rules(void)
{
    struct holder h;
    struct waiter w;
    lw_guard g;
    long long calls;

    holder_start(&h, "rules", lock_opts(10000, 0, -1), 0);
    /* wait 0 beside a sibling that holds it: busy, no round trip. */
    calls = lock_calls();
    CHECK_RC(lock_str(&g, "rules", 10000, 0), LW_ETIMEOUT);
    CHECK_EQ(lock_calls(), calls + 0);
    /* A waiter on the process's list keeps its own deadline. */
    waiter_start(&w, "rules", 300);
    CHECK_EQ(pthread_join(w.t, NULL), 0);
    CHECK_RC(w.rc, LW_ETIMEOUT);
    CHECK(w.took_ms >= 300);
    sem_post(&h.release);
    holder_join(&h);
    CHECK_RC(h.rc, LW_OK);
    CHECK_EQ(lock_exists(&srv, "rules"), 0);
    printf("wait_rules: ok (waiter gave up after %lld ms)\n",
           (long long)w.took_ms);
}

static void shutdown_waiters(void)
{
    struct holder h;
    struct waiter w[2];
    lw_stats before;
    int64_t t0;

    holder_start(&h, "sd", lock_opts(10000, 0, -1), 0);
    before = stats();
    for (int i = 0; i < 2; i++)
        waiter_start(&w[i], "sd", 20000);
    await_contended(before.contended, 2);
    t0 = now_ms();
    lw_shutdown();
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pthread_join(w[i].t, NULL), 0);
        CHECK_RC(w[i].rc, LW_ESHUTDOWN);
    }
    printf("shutdown: waiters out %lld ms after lw_shutdown() (wait 20000)\n",
           (long long)(now_ms() - t0));
    /* Their code says why they returned; the bound only tells a hang. */
    CHECK(now_ms() - t0 < 15000);
    sem_post(&h.release);
    holder_join(&h);
    CHECK_RC(h.rc, LW_ELOST); /* lw_shutdown() gave it back */
    CHECK_EQ(lock_exists(&srv, "sd"), 0);
    use_server(&srv);
}

static void forked(void)
{
    struct holder h;
    struct waiter w;
    lw_stats before;
    pid_t child;
    int status;

    holder_start(&h, "fk", lock_opts(10000, 0, -1), 0);
    before = stats();
    waiter_start(&w, "fk", 20000);
    await_contended(before.contended, 1);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        /* The parent's holder and waiter are not this process's. */
        lw_guard g;
        CHECK_RC(lock_str(&g, "fk", 10000, 10000), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        lw_shutdown();
        _exit(0);
    }
    sem_post(&h.release);
    holder_join(&h);
    CHECK_EQ(pthread_join(w.t, NULL), 0);
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK_RC(h.rc, LW_OK);
    CHECK_RC(w.rc, LW_OK);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("forked: ok\n");
}

/* removed_first, removed_mid_run: the key removed behind our back ------- */

/* What the other process's section saw. */
struct other_result {
    int rc; /* what leaving it returned */
    uint64_t fence;
    int64_t in_us, out_us; /* the section's start and end */
};

/* Another process that, told to go, takes key (waiting up to 20 s), holds
 * it hold_ms and reports what it saw. */
struct other {
    pid_t pid;
    int go[2], res[2];
};

static void other_start(struct other *o, const char *key, int hold_ms)
{
    CHECK_EQ(pipe(o->go), 0);
    CHECK_EQ(pipe(o->res), 0);
    o->pid = fork();
    CHECK(o->pid >= 0);
    if (o->pid == 0) {
        struct other_result r = {0};
        lw_guard g;
        char b;
        close(o->go[1]);
        close(o->res[0]);
        CHECK_EQ(read(o->go[0], &b, 1), 1);
        CHECK_RC(lock_str(&g, key, 10000, 20000), LW_OK);
        r.in_us = now_us();
        r.fence = lw_fence();
        sleep_ms(hold_ms);
        r.out_us = now_us();
        r.rc = lw_guard_leave(&g);
        CHECK_EQ(write(o->res[1], &r, sizeof r), (ssize_t)sizeof r);
        lw_shutdown();
        _exit(0);
    }
    close(o->go[0]);
    close(o->res[1]);
}

static void other_go(struct other *o)
{
    CHECK_EQ(write(o->go[1], "x", 1), 1);
}

static void other_join(struct other *o, struct other_result *r)
{
    int status;

    CHECK_EQ(read(o->res[0], r, sizeof *r), (ssize_t)sizeof *r);
    CHECK_EQ(waitpid(o->pid, &status, 0), o->pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(o->go[1]);
    close(o->res[0]);
}

static const char *removed_key;

/* Is someone queued for removed_key in Redis?  (Our threads wait on the
 * process's list: that is the other process.) */
static int queued_in_redis(void *arg)
{
    redisReply *r = rh_cmd(&srv, "ZCARD {lock:%s}:q", removed_key);
    int n = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;

    (void)arg;
    if (r != NULL)
        freeReplyObject(r);
    return n > 0;
}

/* Does removed_key hold a token other than ours (arg)? */
static int taken_by_other(void *arg)
{
    const char *ours = arg;
    redisReply *r = rh_cmd(&srv, "GET lock:%s", removed_key);
    int taken =
        r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, ours) != 0;

    if (r != NULL)
        freeReplyObject(r);
    return taken;
}

/* Once the other process waits in Redis's queue for key, remove the key as
 * a forced unlock or an eviction would, and return once the other process
 * holds it. */
static void remove_behind_back(struct other *o, const char *key)
{
    char ours[128];
    redisReply *r;

    removed_key = key;
    other_go(o);
    CHECK(wait_until(queued_in_redis, NULL, 10000) >= 0);
    r = rh_cmd(&srv, "GET lock:%s", key);
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING && r->len < sizeof ours);
    snprintf(ours, sizeof ours, "%s", r->str);
    freeReplyObject(r);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:%s", key), 1);
    CHECK(wait_until(taken_by_other, ours, 10000) >= 0);
}

/* Leases far longer than any stall of this machine: the lock is handed on
 * from thread to thread whatever the timing (3/4 of a lease must be left),
 * and only the removal takes it away. */
#define REMOVED_LEASE_MS 60000

static void removed_first(void)
{
    struct other o;
    struct other_result p;
    struct holder a, b;
    lw_stats before;

    other_start(&o, "rm1", 300);
    holder_start(&a, "rm1", lock_opts(REMOVED_LEASE_MS, 0, -1), 0);
    before = stats();
    holder_spawn(&b, "rm1", lock_opts(REMOVED_LEASE_MS, 20000, -1), 1);
    await_contended(before.contended, 1);
    remove_behind_back(&o, "rm1");
    sem_post(&a.release);
    holder_join(&a);
    holder_join(&b);
    other_join(&o, &p);
    printf("removed_first: holder fence %llu -> %s; other process fence %llu "
           "-> %s; sibling fence %llu -> %s, %+lld us after the other "
           "process's section\n",
           (unsigned long long)a.fence, lw_strerror(a.rc),
           (unsigned long long)p.fence, lw_strerror(p.rc),
           (unsigned long long)b.fence, lw_strerror(b.rc),
           (long long)(b.in_us - p.out_us));
    CHECK_RC(a.rc, LW_ELOST);
    CHECK_RC(p.rc, LW_OK);
    CHECK_RC(b.rc, LW_OK);
    CHECK(p.fence > a.fence);
    CHECK(b.fence > p.fence);
    CHECK(b.in_us >= p.out_us);
    CHECK_EQ(stats().handed_locally, before.handed_locally);
}

static void removed_mid_run(void)
{
    struct other o;
    struct other_result p;
    struct holder a, b, c;
    lw_stats before;

    other_start(&o, "rm2", 1000);
    holder_start(&a, "rm2", lock_opts(REMOVED_LEASE_MS, 0, -1), 0);
    before = stats();
    holder_spawn(&b, "rm2", lock_opts(REMOVED_LEASE_MS, 20000, -1), 0);
    await_contended(before.contended, 1);
    /* The run's first hand-off mints its fences: the key is still ours. */
    sem_post(&a.release);
    holder_join(&a);
    sem_wait(&b.entered);
    CHECK_RC(a.rc, LW_OK);
    holder_spawn(&c, "rm2", lock_opts(REMOVED_LEASE_MS, 20000, -1), 0);
    await_contended(before.contended, 2);
    remove_behind_back(&o, "rm2");
    sem_post(&b.release);
    sem_wait(&c.entered);
    sem_post(&c.release);
    holder_join(&b);
    holder_join(&c);
    other_join(&o, &p);
    printf("removed_mid_run: fences %llu -> %s, %llu -> %s, %llu -> %s; "
           "other process %llu -> %s\n",
           (unsigned long long)a.fence, lw_strerror(a.rc),
           (unsigned long long)b.fence, lw_strerror(b.rc),
           (unsigned long long)c.fence, lw_strerror(c.rc),
           (unsigned long long)p.fence, lw_strerror(p.rc));
    CHECK_EQ(stats().handed_locally, before.handed_locally + 2);
    CHECK_RC(b.rc, LW_ELOST);
    CHECK_RC(c.rc, LW_ELOST);
    CHECK_RC(p.rc, LW_OK);
    CHECK(a.fence < b.fence && b.fence < c.fence && c.fence < p.fence);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    handed_locally();
    two_threads();
    bounded_run();
    old_lease();
    counter_lost();
    wait_rules();
    forked();
    removed_first();
    removed_mid_run();
    shutdown_waiters();
    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("cohort: ok\n");
    return 0;
}

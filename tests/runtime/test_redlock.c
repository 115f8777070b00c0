/*
 * Redlock over five independent masters (a comma-separated
 * LOCKWEAVE_REDIS_URL): the lock is on every master and gone from every
 * master after release; fence is 0; threads and a forked process exclude each
 * other; threads of one process taking turns vote once per run; it works
 * with two masters down and fails closed (LW_EREDIS, body not run) with three
 * down; a master that stops while threads keep locking and comes back empty
 * one lease later breaks nothing; renewal by a quorum keeps a lock past its
 * expire; a lock deleted behind its back on three masters is reported lost,
 * on two it is not.  Correctness bounds only, no timing assertions.
 */
#include "util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N          5
#define CONNECT_MS 300
#define COMMAND_MS 1000

static rh_server srv[N];
static char url[N * 64];

/* ---- looks at the masters --------------------------------------------- */

/* How many running masters have lock:<key>. */
static int holders(const char *key)
{
    int n = 0;
    for (int i = 0; i < N; i++)
        if (srv[i].pid != 0 && !srv[i].paused)
            n += lock_exists(&srv[i], key);
    return n;
}

static void del_on(int i, const char *key)
{
    CHECK_EQ(rh_cmd_int(&srv[i], "DEL lock:%s", key), 1);
}

static int not_held(void *arg)
{
    (void)arg;
    return lw_still_held() == 0;
}

/* ---- basics ------------------------------------------------------------- */

static void basics(void)
{
    lw_guard g;
    CHECK_RC(lock_str(&g, "basic", 10000, 0), LW_OK);
    CHECK_EQ(lw_fence(), 0); /* no order across independent masters */
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(holders("basic"), N);
    /* One token, the same on every master. */
    redisReply *first = rh_cmd(&srv[0], "GET lock:basic");
    CHECK(first != NULL && first->type == REDIS_REPLY_STRING);
    for (int i = 1; i < N; i++) {
        redisReply *r = rh_cmd(&srv[i], "GET lock:basic");
        CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
        CHECK(r->len == first->len && memcmp(r->str, first->str, r->len) == 0);
        freeReplyObject(r);
    }
    freeReplyObject(first);
    CHECK(lock_pttl(&srv[0], "basic") > 5000);

    /* Reentrant as in single-server mode: no second lock, no deadlock. */
    lw_guard inner;
    CHECK_RC(lock_str(&inner, "basic", 10000, 0), LW_OK);
    CHECK_EQ(lw_fence(), 0);
    CHECK_RC(lw_guard_leave(&inner), LW_OK);
    CHECK_EQ(holders("basic"), N);

    /* Busy, wait 0: tried once, LW_ETIMEOUT, from another thread. */
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(holders("basic"), 0);
    CHECK_EQ(lw_fence(), 0);
    printf("basics: on %d masters while held, on none after release\n", N);
}

struct busy_arg {
    const char *key;
    uint32_t wait_ms;
    int rc;
    int64_t took_ms;
};

static void *try_lock(void *p)
{
    struct busy_arg *a = p;
    lw_guard g;
    int64_t t0 = now_ms();
    a->rc = lock_str(&g, a->key, 5000, a->wait_ms);
    a->took_ms = now_ms() - t0;
    if (a->rc == LW_OK)
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static struct busy_arg run_try(const char *key, uint32_t wait_ms)
{
    struct busy_arg a = {key, wait_ms, 1, 0};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, try_lock, &a), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return a;
}

/* Busy: wait 0 fails at once; a waiter gets it once the holder leaves. */
static void busy(void)
{
    lw_guard g;
    CHECK_RC(lock_str(&g, "busy", 5000, 0), LW_OK);
    struct busy_arg a = run_try("busy", 0);
    CHECK_RC(a.rc, LW_ETIMEOUT);
    CHECK_EQ(holders("busy"), N); /* the loser gave back nothing of ours */

    a = (struct busy_arg){"busy", 5000, 1, 0};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, try_lock, &a), 0);
    sleep_ms(300);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(a.rc, LW_OK);
    printf("busy: waiter got the lock after %lld ms\n", (long long)a.took_ms);
    CHECK_EQ(holders("busy"), 0);
}

/* ---- mutual exclusion --------------------------------------------------- */

#define THREADS 3
#define ITERS   25

static atomic_int inside, overlaps, failures;

/* Read-modify-write of a counter on master 0 (not atomic by itself). */
static void *mx_worker(void *arg)
{
    const char *key = arg;
    redisContext *c = rh_connect(&srv[0]);
    CHECK(c != NULL);
    lw_lock_opts o = lock_opts(5000, 20000, -1);
    for (int i = 0; i < ITERS; i++) {
        lw_guard g;
        int rc = lw_lock(&g, key, strlen(key), &o);
        if (rc != LW_OK) {
            fprintf(stderr, "lock: %s\n", lw_strerror(rc));
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        redisReply *r = redisCommand(c, "GET mx:%s", key);
        CHECK(r != NULL);
        long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
        freeReplyObject(r);
        sched_yield();
        r = redisCommand(c, "SET mx:%s %lld", key, v + 1);
        CHECK(r != NULL);
        freeReplyObject(r);
        atomic_fetch_sub(&inside, 1);
        if (lw_guard_leave(&g) != LW_OK)
            atomic_fetch_add(&failures, 1);
    }
    redisFree(c);
    return NULL;
}

static int mx_process(const char *key)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, mx_worker, (void *)key), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    return atomic_load(&failures) == 0 && atomic_load(&overlaps) == 0 ? 0 : 1;
}

/* THREADS here and THREADS in a forked child on one key. */
static void mutual_exclusion(const char *key)
{
    int64_t t0 = now_ms();
    fflush(stdout); /* or the child prints it again */
    pid_t kid = fork();
    CHECK(kid >= 0);
    if (kid == 0) {
        int r = mx_process(key);
        lw_shutdown();
        fflush(stdout);
        _exit(r);
    }
    int bad = mx_process(key);
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "child failed (status 0x%x)", st);
    redisReply *r = rh_cmd(&srv[0], "GET mx:%s", key);
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    long long total = atoll(r->str);
    freeReplyObject(r);
    printf("mutual exclusion (%s): 2 processes x %d threads x %d = %lld "
           "increments in %lld ms\n",
           key, THREADS, ITERS, total, (long long)(now_ms() - t0));
    CHECK_EQ(bad, 0);
    CHECK_EQ(total, 2 * THREADS * ITERS);
    CHECK_EQ(holders(key), 0);
}

/* ---- threads of one process taking turns --------------------------------
 *
 * Siblings share one vote: the next leader asks the masters only once the
 * last one's release round is over, so (every master up) it never finds its
 * own process's lock there.  Every vote round (one SET per master) is then
 * a process's acquisition: SETs on each master == sections not handed on in
 * memory.
 */

#define SIB_ITERS 400 /* ~75 runs of 16 */

static long long set_calls(int i)
{
    static const char *const set = "set";

    return command_calls(&srv[i], &set, 1);
}

static void *sib_worker(void *arg)
{
    (void)arg;
    lw_lock_opts o = lock_opts(5000, 20000, -1);
    for (int i = 0; i < SIB_ITERS; i++) {
        lw_guard g;
        if (lw_lock(&g, "sib", 3, &o) != LW_OK) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        sched_yield();
        atomic_fetch_sub(&inside, 1);
        if (lw_guard_leave(&g) != LW_OK)
            atomic_fetch_add(&failures, 1);
    }
    return NULL;
}

static void siblings(void)
{
    pthread_t t[THREADS];
    lw_stats before, after;
    for (int i = 0; i < N; i++) {
        redisReply *r = rh_cmd(&srv[i], "CONFIG RESETSTAT");
        CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    lw_stats_get(&before);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, sib_worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    lw_stats_get(&after);
    long long sections = (long long)(after.acquired - before.acquired);
    long long handed =
        (long long)(after.handed_locally - before.handed_locally);
    printf("siblings: %lld sections, %lld handed on in memory, SETs per "
           "master:",
           sections, handed);
    for (int i = 0; i < N; i++)
        printf(" %lld", set_calls(i));
    printf("\n");
    CHECK_EQ(atomic_load(&failures), 0);
    CHECK_EQ(atomic_load(&overlaps), 0);
    CHECK_EQ(sections, THREADS * SIB_ITERS);
    for (int i = 0; i < N; i++)
        CHECK_EQ(set_calls(i), sections - handed);
    CHECK_EQ(holders("sib"), 0);
}

/* ---- masters down --------------------------------------------------------
 */

static int entered;

static int guarded(const char *key, uint32_t wait_ms)
{
    lw_guard g;
    int rc = lock_str(&g, key, 5000, wait_ms);
    if (rc != LW_OK)
        return rc;
    entered++;
    return lw_guard_leave(&g);
}

/* Retry until a call succeeds (masters back after their backoff). */
static int64_t recovers(const char *key, int within_ms)
{
    int64_t t0 = now_ms();
    int rc;
    while ((rc = guarded(key, 0)) != LW_OK && now_ms() - t0 < within_ms)
        sleep_ms(50);
    CHECK_MSG(rc == LW_OK, "no recovery within %d ms: %s", within_ms,
              lw_strerror(rc));
    return now_ms() - t0;
}

static void two_then_three_down(void)
{
    /* Two down: one killed (crash), one stopped. */
    CHECK_EQ(rh_kill(&srv[3]), 0);
    CHECK_EQ(rh_stop_keep(&srv[4]), 0);
    lw_guard g;
    CHECK_RC(lock_str(&g, "down2", 5000, 0), LW_OK);
    CHECK_EQ(holders("down2"), N - 2);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(holders("down2"), 0);
    mutual_exclusion("mx-down2");

    /* Three down: fail closed, the body does not run, whatever the wait. */
    CHECK_EQ(rh_stop_keep(&srv[2]), 0);
    int before = entered;
    CHECK_RC(guarded("down3", 0), LW_EREDIS);
    CHECK_RC(lw_last_error(), LW_EREDIS);
    int64_t t0 = now_ms();
    CHECK_RC(guarded("down3", 3000), LW_EREDIS);
    printf("three masters down: %s after %lld ms (wait 3000)\n",
           lw_strerror(LW_EREDIS), (long long)(now_ms() - t0));
    CHECK_EQ(entered, before);
    CHECK_EQ(holders("down3"), 0); /* what the two live ones granted: given
                                      back */

    /* A paused (hung) master counts as down too. */
    CHECK_EQ(rh_start_again(&srv[2]), 0);
    CHECK_EQ(rh_pause(&srv[1]), 0);
    t0 = now_ms();
    CHECK_RC(guarded("hung", 0), LW_EREDIS);
    printf("two down + one hung: LW_EREDIS after %lld ms\n",
           (long long)(now_ms() - t0));
    CHECK_EQ(rh_resume(&srv[1]), 0);

    CHECK_EQ(rh_start_again(&srv[3]), 0);
    CHECK_EQ(rh_start_again(&srv[4]), 0);
    printf("all masters back: recovered after %lld ms\n",
           (long long)recovers("back", 5000));
    CHECK_EQ(entered, before + 1);
}

/* ---- a master restarted mid-run -----------------------------------------
 *
 * Restarted without persistence, a master forgets the locks it granted.
 * Redlock is safe across that only if the master stays down for one lease
 * (protocol.md): a holder that won exactly a quorum counting it (the rest
 * busy, slow or down) would hold a minority once it is back, and the next
 * caller could win a quorum beside it.  Down one lease, every grant the
 * master took part in has ended when it returns.
 */

#define RS_LEASE_MS 2000

static atomic_int stop;
static atomic_llong restarted_at;

struct rs_result {
    int ok, ok_after, failed;
};

static void *rs_worker(void *arg)
{
    struct rs_result *r = arg;
    lw_lock_opts o = lock_opts(RS_LEASE_MS, 5000, -1);
    while (!atomic_load(&stop)) {
        lw_guard g;
        if (lw_lock(&g, "restart", 7, &o) != LW_OK) {
            r->failed++;
            sleep_ms(10);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        sleep_ms(2);
        atomic_fetch_sub(&inside, 1);
        if (lw_guard_leave(&g) == LW_OK) {
            r->ok++;
            long long at = atomic_load(&restarted_at);
            r->ok_after += at != 0 && now_ms() > at;
        } else {
            r->failed++;
        }
    }
    return NULL;
}

static int no_restart_holder(void *arg)
{
    (void)arg;
    return holders("restart") == 0;
}

static void restart_mid_run(void)
{
    pthread_t t[THREADS];
    struct rs_result res[THREADS];
    memset(res, 0, sizeof res);
    atomic_store(&overlaps, 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, rs_worker, &res[i]), 0);
    sleep_ms(700);
    CHECK_EQ(rh_stop_keep(&srv[2]), 0); /* no persistence: it forgets all */
    sleep_ms(RS_LEASE_MS);
    CHECK_EQ(rh_start_again(&srv[2]), 0);
    atomic_store(&restarted_at, now_ms());
    sleep_ms(1000);
    atomic_store(&stop, 1);
    int ok = 0, ok_after = 0, failed = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ(pthread_join(t[i], NULL), 0);
        ok += res[i].ok;
        ok_after += res[i].ok_after;
        failed += res[i].failed;
    }
    printf("master down one lease mid-run: %d sections (%d after it came "
           "back), %d failed, %d overlaps\n",
           ok, ok_after, failed, atomic_load(&overlaps));
    CHECK_EQ(atomic_load(&overlaps), 0);
    CHECK(ok_after > 0);
    CHECK_EQ(failed, 0); /* four masters stayed up: a quorum throughout */
    /* Released on a quorum; a master whose answer was late (a slow
     * machine) keeps the key until its lease ends, and no longer. */
    CHECK_MSG(wait_until(no_restart_holder, NULL, RS_LEASE_MS + 1000) >= 0,
              "the lock is still on %d masters a lease after the last "
              "release",
              holders("restart"));
}

/* ---- renewal and loss ----------------------------------------------------
 */

/* Renewed by a quorum past its expire, even with two masters gone. */
static void renewal(void)
{
    lw_stats before, after;
    lw_stats_get(&before);
    lw_guard g;
    CHECK_RC(lock_str(&g, "renew", 1000, 0), LW_OK);
    sleep_ms(500);
    CHECK_EQ(rh_kill(&srv[0]), 0);
    CHECK_EQ(rh_kill(&srv[1]), 0);
    sleep_ms(2000); /* 2.5 leases in all */
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(holders("renew"), N - 2);
    CHECK(lock_pttl(&srv[2], "renew") > 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    lw_stats_get(&after);
    printf("renewal: held 2.5 s on a 1 s lease (two masters killed after "
           "0.5 s), %llu renewals\n",
           (unsigned long long)(after.renewed - before.renewed));
    CHECK(after.renewed - before.renewed >= 2);
    CHECK_EQ(holders("renew"), 0);
    CHECK_EQ(rh_start_again(&srv[0]), 0);
    CHECK_EQ(rh_start_again(&srv[1]), 0);
    recovers("renew-back", 5000);
}

static void deleted_behind_its_back(void)
{
    /* On two masters: a quorum still has it. */
    lw_guard g;
    CHECK_RC(lock_str(&g, "del2", 1000, 0), LW_OK);
    del_on(0, "del2");
    del_on(1, "del2");
    sleep_ms(800); /* two renewals */
    CHECK_EQ(lw_still_held(), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* On three: lost, noticed by the watchdog. */
    lw_stats before, after;
    lw_stats_get(&before);
    CHECK_RC(lock_str(&g, "del3", 1000, 0), LW_OK);
    del_on(0, "del3");
    del_on(2, "del3");
    del_on(4, "del3");
    int64_t seen = wait_until(not_held, NULL, 3000);
    printf("deleted on 3 of 5 masters: lw_still_held() 0 after %lld ms\n",
           (long long)seen);
    CHECK(seen >= 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    CHECK_RC(lw_last_error(), LW_ELOST);
    lw_stats_get(&after);
    CHECK_EQ(after.lost - before.lost, 1);
    CHECK_EQ(holders("del3"), 0);

    /* Deleted, then left at once: the release itself notices. */
    CHECK_RC(lock_str(&g, "del3b", 30000, 0), LW_OK);
    del_on(1, "del3b");
    del_on(2, "del3b");
    del_on(3, "del3b");
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);

    /* Taken over on three by another owner: lost, and the intruder's keys
     * stay. */
    CHECK_RC(lock_str(&g, "take", 30000, 0), LW_OK);
    for (int i = 0; i < 3; i++) {
        redisReply *r = rh_cmd(&srv[i], "SET lock:take intruder PX 60000");
        CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    CHECK_EQ(holders("take"), 3);
}

int main(void)
{
    size_t len = 0;
    for (int i = 0; i < N; i++) {
        CHECK_EQ(rh_start(&srv[i], NULL), 0);
        len += (size_t)snprintf(url + len, sizeof url - len, "%s%s",
                                i ? "," : "", srv[i].url);
    }
    printf("LOCKWEAVE_REDIS_URL=%s\n", url);
    use_url(url, CONNECT_MS, COMMAND_MS);

    basics();
    busy();
    mutual_exclusion("mx");
    siblings();
    renewal();
    deleted_behind_its_back();
    restart_mid_run();
    two_then_three_down();

    lw_shutdown();
    for (int i = 0; i < N; i++)
        rh_stop(&srv[i]);
    printf("redlock: ok\n");
    return 0;
}

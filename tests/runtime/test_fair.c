/* Fair waiting: the Redis-side queue, hand-off on release, and the cleanup
 * of waiters that gave up or died. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define HOG_THREADS 4

static rh_server srv;

struct hog_arg {
    const char *key;
    int64_t end_ms;
};

static void *hog_thread(void *p)
{
    const struct hog_arg *a = p;
    while (now_ms() < a->end_ms) {
        lw_guard g;
        if (lock_str(&g, a->key, 5000, 5000) == LW_OK)
            lw_guard_leave(&g);
    }
    return NULL;
}

/* A process whose threads take and release `key` back to back for run_ms:
 * a lock without hand-off lets them win every race against a waiter that
 * must first wake up. */
static pid_t start_hog(const char *key, int run_ms)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct hog_arg a = {key, now_ms() + run_ms};
        pthread_t t[HOG_THREADS];
        for (int i = 0; i < HOG_THREADS; i++)
            pthread_create(&t[i], NULL, hog_thread, &a);
        for (int i = 0; i < HOG_THREADS; i++)
            pthread_join(t[i], NULL);
        _exit(0);
    }
    return pid;
}

static void no_starvation(void)
{
    pid_t hog = start_hog("fair", 2500);
    sleep_ms(200); /* let the hog get going */
    for (int i = 0; i < 5; i++) {
        lw_guard g;
        int64_t t0 = now_ms();
        int rc = lock_str(&g, "fair", 5000, 300);
        printf("waiter beside a barging hog: %s after %lld ms\n",
               lw_strerror(rc), (long long)(now_ms() - t0));
        CHECK_RC(rc, LW_OK);
        lw_guard_leave(&g);
        sleep_ms(20);
    }
    CHECK_EQ(waitpid(hog, NULL, 0), hog);
}

static long long queue_len(const char *key)
{
    return rh_cmd_int(&srv, "ZCARD {lock:%s}:q", key);
}

struct waiter_arg {
    const char *key;
    uint32_t wait_ms;
    int rc;
    uint64_t fence;
};

static void *waiter(void *p)
{
    struct waiter_arg *a = p;
    lw_guard g;
    a->rc = lock_str(&g, a->key, 5000, a->wait_ms);
    if (a->rc == LW_OK) {
        a->fence = lw_fence();
        lw_guard_leave(&g);
    }
    return NULL;
}

static void timeout_leaves_queue(void)
{
    lw_guard g;
    pthread_t t;
    struct waiter_arg a = {"q", 300, 0, 0};

    CHECK_RC(lock_str(&g, "q", 5000, 0), LW_OK);
    CHECK_EQ(pthread_create(&t, NULL, waiter, &a), 0);
    sleep_ms(100);
    CHECK_EQ(queue_len("q"), 1);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(a.rc, LW_ETIMEOUT);
    CHECK_EQ(queue_len("q"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void handed_to_live_waiter(void)
{
    lw_guard g;
    pthread_t t;
    struct waiter_arg a = {"h", 5000, 0, 0};
    uint64_t mine;

    CHECK_RC(lock_str(&g, "h", 5000, 0), LW_OK);
    mine = lw_fence();
    CHECK_EQ(pthread_create(&t, NULL, waiter, &a), 0);
    sleep_ms(100); /* well past the hand-off age: release hands it over */
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(a.rc, LW_OK);
    CHECK(a.fence > mine);
    CHECK_EQ(queue_len("h"), 0);
}

/* By default a release hands the lock to the oldest waiter whatever the age
 * of its queue entry: nobody takes it past a queued waiter, not even the
 * thread that releases it and asks again at once.  The waiter is another
 * process, stopped once queued so that it cannot race that thread, and its
 * entry is made to look younger than any hand-off age (scored a minute
 * ahead, as a server whose clock stepped back would score it): with an age
 * to wait for, the release would only wake it and leave the lock free. */
static void fifo_by_default(void)
{
    lw_guard g, again;
    redisReply *head;
    char alive[128];
    pid_t child;
    int rc, status;

    CHECK_RC(lock_str(&g, "f", 5000, 0), LW_OK);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        lw_guard cg;
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* stopped, it must not outlive a
                                             failed check */
        rc = lock_str(&cg, "f", 5000, 10000);
        if (rc == LW_OK)
            rc = lw_guard_leave(&cg);
        _exit(rc == LW_OK ? 0 : 1);
    }
    for (int i = 0; i < 500 && queue_len("f") == 0; i++)
        sleep_ms(10);
    CHECK_EQ(kill(child, SIGSTOP), 0);
    head = rh_cmd(&srv, "ZRANGE {lock:f}:q 0 0 WITHSCORES");
    CHECK(head != NULL && head->elements == 2);
    /* Stopped, it refreshes nothing: keep its alive key (1 s) from running
     * out however slow this machine is, or the release would skip it as
     * dead. */
    snprintf(alive, sizeof alive, "{lock:f}:w:%.*s",
             (int)strcspn(head->element[0]->str, "|"), head->element[0]->str);
    CHECK_EQ(rh_cmd_int(&srv, "PEXPIRE %s 60000", alive), 1);
    CHECK_EQ(rh_cmd_int(&srv, "ZADD {lock:f}:q XX %lld %s",
                        atoll(head->element[1]->str) + 60000000LL,
                        head->element[0]->str),
             0);
    freeReplyObject(head);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    rc = lock_str(&again, "f", 5000, 0);
    printf("asked again right after releasing to a young waiter: %s\n",
           lw_strerror(rc));
    if (rc == LW_OK)
        lw_guard_leave(&again);
    CHECK_EQ(kill(child, SIGCONT), 0);
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK_RC(rc, LW_ETIMEOUT);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A waiter killed while queued stops refreshing its alive key: a release
 * after that must skip it, not hand it a lock nobody would release. */
static void dead_waiter_skipped(void)
{
    lw_guard g;
    pid_t child;

    CHECK_RC(lock_str(&g, "d", 5000, 0), LW_OK);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        lw_guard cg;
        lock_str(&cg, "d", 5000, 10000);
        _exit(0);
    }
    sleep_ms(300);
    CHECK_EQ(queue_len("d"), 1);
    CHECK_EQ(kill(child, SIGKILL), 0);
    CHECK_EQ(waitpid(child, NULL, 0), child);
    sleep_ms(1300); /* its alive key (1 s) runs out */
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "d"), 0);
    CHECK_EQ(queue_len("d"), 0);
}

int main(void)
{
    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    no_starvation();
    timeout_leaves_queue();
    handed_to_live_waiter();
    fifo_by_default();
    dead_waiter_skipped();
    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("fair: ok\n");
    return 0;
}

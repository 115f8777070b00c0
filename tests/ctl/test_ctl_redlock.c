/*
 * lockweave-ctl with Redlock's independent masters (three servers): inspect
 * shows every master's state and calls a lock held only when a quorum holds
 * one token, list does the same per key, unlock deletes the lock on every
 * master (its holder gets LW_ELOST, a contender gets the lock), and a
 * master that is down is reported as such without hiding the others.
 * inspect names the holder's process and thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctl_util.h"
#include "util.h"

#define N 3

static rh_server srv[N];
static char url[N * 40];

static const jv *master(const jv *j, int i)
{
    const jv *m = jv_get(j, "masters");

    CHECK(m != NULL && m->type == 'a' && m->n == N);
    return m->items[i];
}

static long long exists_on(int i, const char *key)
{
    return rh_cmd_int(&srv[i], "EXISTS %s", key);
}

struct contender {
    int rc; /* atomic: 1 until lock_str() returned */
    pthread_t th;
};

static void *contender_main(void *arg)
{
    struct contender *c = arg;
    lw_guard g;
    int rc = lock_str(&g, "rl:4", 10000, 10000);

    if (rc == LW_OK)
        lw_guard_leave(&g);
    __atomic_store_n(&c->rc, rc, __ATOMIC_RELEASE);
    return NULL;
}

static int contender_done(void *arg)
{
    return __atomic_load_n(&((struct contender *)arg)->rc, __ATOMIC_ACQUIRE) !=
           1;
}

int main(int argc, char **argv)
{
    static const char *const want2[N] = {"held", "held", "other"};
    struct contender con = {.rc = 1};
    struct ctl_run r;
    const jv *locks;
    lw_guard g;
    jv *j;
    int at = 0;

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    ctl_init(argc, argv);
    for (int i = 0; i < N; i++) {
        CHECK(rh_start(&srv[i], NULL) == 0);
        at += snprintf(url + at, sizeof url - (size_t)at, "%s%s", i ? "," : "",
                       srv[i].url);
    }
    use_url(url, 1000, 2000);

    /* rl:2 held by a quorum with one token, rl:3 by one master only. */
    for (int i = 0; i < N; i++) {
        freeReplyObject(rh_cmd(&srv[i], "SET lock:rl:2 %s PX 60000",
                               i < 2 ? "tokA" : "tokB"));
        if (i == 0)
            freeReplyObject(rh_cmd(&srv[i], "SET lock:rl:3 tokC PX 60000"));
    }

    CHECK_RC(lock_str(&g, "rl:1", 20000, 0), LW_OK);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "inspect", "rl:1", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "topology"), "redlock");
    CHECK_EQ(jv_bool(j, "held"), 1);
    CHECK_EQ(jv_int(j, "holders"), 3);
    CHECK_EQ(jv_int(j, "quorum"), 2);
    for (int i = 0; i < N; i++) {
        CHECK_STR(jv_str(master(j, i), "state"), "held");
        CHECK_RANGE(jv_int(master(j, i), "ttl_ms"), 1, 20000);
    }
    /* Who holds it: this process, this thread, from its connection's
     * name on the masters. */
    const jv *h = jv_get(j, "holder");
    CHECK(h != NULL && h->type == 'o');
    CHECK_EQ(jv_bool(h, "connected"), 1);
    CHECK_EQ(jv_int(h, "pid"), (long long)getpid());
    CHECK_EQ(jv_int(h, "thread"), (long long)syscall(SYS_gettid));
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "inspect", "rl:1", NULL);
    char text[64];
    snprintf(text, sizeof text, "holder   process %ld, thread %ld,",
             (long)getpid(), (long)syscall(SYS_gettid));
    CHECK_MSG(strstr(r.out, text) != NULL, "no \"%s\" in:\n%s", text, r.out);
    ctl_run_free(&r);

    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "inspect", "rl:2", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_int(j, "holders"), 2);
    for (int i = 0; i < N; i++)
        CHECK_STR(jv_str(master(j, i), "state"), want2[i]);
    jv_free(j);
    ctl_run_free(&r);

    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "inspect", "rl:3", NULL);
    CHECK_EQ(r.status, 1);
    j = ctl_json(&r);
    CHECK_EQ(jv_bool(j, "held"), 0);
    CHECK_EQ(jv_int(j, "holders"), 1);
    CHECK_STR(jv_str(master(j, 1), "state"), "free");
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "inspect", "rl:3", NULL);
    CHECK(strstr(r.out, "held     no: 1 of 3") != NULL);
    ctl_run_free(&r);

    /* list: each key's masters, held by a quorum or not. */
    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "list", "rl:*", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    locks = jv_get(j, "locks");
    CHECK_EQ(locks->n, 3);
    CHECK_EQ(jv_int(j, "held"), 2);
    CHECK_STR(jv_str(locks->items[0], "key"), "rl:1");
    CHECK_EQ(jv_int(locks->items[0], "holders"), 3);
    CHECK_STR(jv_str(locks->items[1], "key"), "rl:2");
    CHECK_EQ(jv_bool(locks->items[1], "held"), 1);
    for (int i = 0; i < N; i++)
        CHECK_STR(jv_str(master(locks->items[1], i), "state"), want2[i]);
    CHECK_STR(jv_str(locks->items[2], "key"), "rl:3");
    CHECK_EQ(jv_bool(locks->items[2], "held"), 0);
    jv_free(j);
    ctl_run_free(&r);

    /* Declined at the terminal: every master as it was. */
    ctl_run(&r, url, CTL_IN_TTY, "n\n", "--json", "unlock", "--force", "rl:2",
            NULL);
    CHECK_EQ(r.status, 5);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "result"), "declined");
    for (int i = 0; i < N; i++) {
        CHECK_STR(jv_str(master(j, i), "result"), want2[i]);
        CHECK_EQ(exists_on(i, "lock:rl:2"), 1);
    }
    jv_free(j);
    ctl_run_free(&r);

    /* unlock: gone from every master; the holder learns it. */
    ctl_run(&r, url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes", "rl:1",
            NULL);
    CHECK_EQ(r.status, 0);
    ctl_run_free(&r);
    for (int i = 0; i < N; i++)
        CHECK_EQ(exists_on(i, "lock:rl:1"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "unlock", "--force", "--yes",
            "rl:2", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "result"), "unlocked");
    for (int i = 0; i < N; i++) {
        CHECK_STR(jv_str(master(j, i), "result"), "unlocked");
        CHECK_EQ(exists_on(i, "lock:rl:2"), 0);
    }
    jv_free(j);
    ctl_run_free(&r);

    /* A contender that would time out gets the lock once it is broken. */
    CHECK_RC(lock_str(&g, "rl:4", 30000, 0), LW_OK);
    CHECK(pthread_create(&con.th, NULL, contender_main, &con) == 0);
    sleep_ms(100);
    CHECK(!contender_done(&con));
    ctl_run(&r, url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes", "rl:4",
            NULL);
    CHECK_EQ(r.status, 0);
    ctl_run_free(&r);
    CHECK(wait_until(contender_done, &con, 5000) >= 0);
    CHECK(pthread_join(con.th, NULL) == 0);
    CHECK_RC(con.rc, LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);

    /* One master down: still a quorum; it shows as down. */
    CHECK(rh_stop(&srv[2]) == 0);
    CHECK_RC(lock_str(&g, "rl:5", 20000, 0), LW_OK);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "inspect", "rl:5", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_int(j, "holders"), 2);
    CHECK_STR(jv_str(master(j, 2), "state"), "down");
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "list", NULL);
    CHECK_EQ(r.status, 3);
    j = ctl_json(&r);
    CHECK_EQ(jv_bool(master(j, 0), "scanned"), 1);
    CHECK_EQ(jv_bool(master(j, 2), "scanned"), 0);
    CHECK_EQ(jv_get(j, "locks")->n, 2); /* rl:3 and rl:5 */
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes", "rl:5",
            NULL);
    CHECK_EQ(r.status, 3);
    ctl_run_free(&r);
    CHECK_EQ(exists_on(0, "lock:rl:5"), 0);
    CHECK_EQ(exists_on(1, "lock:rl:5"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);

    lw_shutdown();
    for (int i = 0; i < N; i++)
        rh_stop(&srv[i]);
    printf("ctl_redlock: ok\n");
    return 0;
}

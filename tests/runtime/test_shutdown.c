/*
 * lw_shutdown() with guards still entered (the header's promise): their
 * locks are released in Redis at once (not left to their TTL), the guards
 * read as lost (lw_still_held() 0, leaving is LW_ELOST and touches
 * nothing), and the next guarded call starts the runtime again.  Threads
 * waiting for a lock meanwhile return LW_ESHUTDOWN long before their wait
 * ends, having left the queue — whether blocked on their mailbox or, with
 * BLPOP denied, polling.
 */
#include <pthread.h>
#include <string.h>

#include "util.h"

static rh_server srv;
static pthread_barrier_t held, shut, done;

struct waiter {
    pthread_t t;
    int rc;
    int64_t took_ms;
};

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    int64_t t0 = now_ms();
    lw_guard g;

    w->rc = lock_str(&g, "sd-wait", 30000, 20000);
    w->took_ms = now_ms() - t0;
    if (w->rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

static int queued(void *arg)
{
    return rh_cmd_int(&srv, "ZCARD {lock:sd-wait}:q") == *(long long *)arg;
}

/* Two threads wait for a lock held by this one; lw_shutdown() ends their
 * waits: LW_ESHUTDOWN, far within the 20 s wait, the queue left empty and
 * the lock released rather than handed to a waiter that is gone. */
static void waiters(const char *url)
{
    struct waiter w[2];
    long long two = 2;
    lw_guard g;

    use_url(url, 1000, 2000);
    CHECK_RC(lock_str(&g, "sd-wait", 30000, 0), LW_OK);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&w[i].t, NULL, wait_for_lock, &w[i]) == 0);
    CHECK(wait_until(queued, &two, 10000) >= 0);
    sleep_ms(300); /* both blocked (or asleep) by now */
    lw_shutdown();
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_join(w[i].t, NULL) == 0);
        printf("%s: waiter %d: %s after %lld ms\n", url, i,
               lw_strerror(w[i].rc), (long long)w[i].took_ms);
        CHECK_RC(w[i].rc, LW_ESHUTDOWN);
        CHECK(w[i].took_ms < 15000);
    }
    CHECK_EQ(rh_cmd_int(&srv, "ZCARD {lock:sd-wait}:q"), 0);
    CHECK_EQ(lock_exists(&srv, "sd-wait"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
}

static void *holder(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "sd-thread", 30000, 0), LW_OK);
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&shut); /* lw_shutdown() ran meanwhile */
    CHECK_EQ(lw_still_held(), 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    pthread_barrier_wait(&done);
    return NULL;
}

int main(void)
{
    pthread_t t;
    lw_guard g;

    /* "nopop" may run everything but BLPOP: its waiters poll. */
    static const char *const acl[] = {"--user", "nopop", "on",     "nopass",
                                      "~*",     "+@all", "-blpop", NULL};
    char url[128];
    rh_opts o;

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);

    rh_opts_init(&o);
    o.extra_args = acl;
    CHECK_EQ(rh_start(&srv, &o), 0);
    waiters(srv.url);
    /* The same URL (rediss:// too, under LW_TEST_TLS) as user "nopop". */
    const char *rest = strstr(srv.url, "://");
    CHECK(rest != NULL);
    snprintf(url, sizeof url, "%.*s://nopop:x@%s", (int)(rest - srv.url),
             srv.url, rest + 3);
    waiters(url);

    use_server(&srv);
    pthread_barrier_init(&held, NULL, 2);
    pthread_barrier_init(&shut, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    CHECK(pthread_create(&t, NULL, holder, NULL) == 0);
    CHECK_RC(lock_str(&g, "sd-main", 30000, 0), LW_OK);
    pthread_barrier_wait(&held);
    CHECK_EQ(lock_exists(&srv, "sd-main"), 1);
    CHECK_EQ(lock_exists(&srv, "sd-thread"), 1);

    lw_shutdown();
    CHECK_EQ(lock_exists(&srv, "sd-main"), 0);
    CHECK_EQ(lock_exists(&srv, "sd-thread"), 0);
    CHECK_EQ(lw_still_held(), 0);
    pthread_barrier_wait(&shut);
    pthread_barrier_wait(&done);
    CHECK(pthread_join(t, NULL) == 0);
    /* Nothing in Redis changed by the leave: another owner's lock stays. */
    freeReplyObject(rh_cmd(&srv, "SET lock:sd-main intruder PX 30000"));
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    CHECK_EQ(lock_exists(&srv, "sd-main"), 1);
    freeReplyObject(rh_cmd(&srv, "DEL lock:sd-main"));

    /* The runtime starts again on the next call. */
    use_server(&srv);
    CHECK_RC(lock_str(&g, "sd-main", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    lw_shutdown();
    rh_stop(&srv);
    printf("shutdown: ok\n");
    return 0;
}

/*
 * Run once (REDIS_ONCE's runtime: a guard with once_window_ms), against a
 * real redis-server, each "host" a forked process:
 *   - duplicates from several processes at once: one body, all its result;
 *   - later duplicates: LW_EDONE and the value; the window's end: runs again;
 *   - a failed first run (failed_if): the key is free, the next call runs;
 *     one that fails while another waits: the waiter runs the body;
 *   - a first run SIGKILLed while a second caller waits: the waiter runs
 *     the body once the lease ends, within its wait;
 *   - wait = 0 during a run: LW_ETIMEOUT; a waiter gets the run's result;
 *   - result types stored exactly: int64 min, uint64 max, doubles, none;
 *   - the mark deleted behind a run's back: never two LW_OK (the first
 *     returns LW_ELOST);
 *   - Redlock refused (LW_ECONFIG); bad options and leases LW_EINVAL.
 * No timing assertion: every wait is a generous deadline, and an order of
 * events is made with pipes, never with sleeps.
 */
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define WINDOW_MS 60000
#define LONG_WAIT 30000

static rh_server srv;

static lw_lock_opts once_opts(uint32_t window_ms, uint32_t expire_ms,
                              uint32_t wait_ms)
{
    lw_lock_opts o = lock_opts(expire_ms, wait_ms, -1);
    o.once_window_ms = window_ms;
    return o;
}

/* How many times a body ran, across processes: a counter in Redis. */
static long long ran(const char *key)
{
    redisReply *r = rh_cmd(&srv, "GET ran:%s", key);
    long long n = r != NULL && r->type == REDIS_REPLY_STRING
                      ? strtoll(r->str, NULL, 10)
                      : 0;

    freeReplyObject(r);
    return n;
}

static void count_run(const char *key)
{
    redisContext *c = rh_connect(&srv);
    redisReply *r;

    CHECK(c != NULL);
    r = redisCommand(c, "INCR ran:%s", key);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    redisFree(c);
}

/* What a woven wrapper of an int64_t function does: enter; LW_EDONE reads
 * the stored result; LW_OK runs the body (count_run, then go_fd's byte
 * when go_fd >= 0, ready_fd told first), stores value unless failed. */
static int once_i64(const char *key, const lw_lock_opts *o, int64_t value,
                    int failed, int ready_fd, int go_fd, int64_t *out)
{
    lw_guard g;
    char b;
    int rc;

    lw_guard_init(&g, o);
    lw_guard_key_str(&g, key);
    rc = lw_guard_enter(&g);
    CHECK_EQ(lw_last_error(), rc);
    if (rc == LW_EDONE) {
        CHECK_RC(lw_once_outcome_i64(&g, out), LW_OK);
        return rc;
    }
    if (rc != LW_OK)
        return rc;
    count_run(key);
    if (ready_fd >= 0)
        CHECK_EQ(write(ready_fd, "r", 1), 1);
    if (go_fd >= 0)
        CHECK_EQ(read(go_fd, &b, 1), 1);
    *out = value;
    if (!failed)
        lw_once_done_i64(&g, value);
    return lw_guard_leave(&g);
}

/* ---- duplicates at once ------------------------------------------------ */

static void dup_child(int i)
{
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, LONG_WAIT);
    int64_t v = -1;
    int rc;

    use_server(&srv);
    /* Each would store its own number: all must see the one run's. */
    rc = once_i64("order:dup", &o, 1000 + i, 0, -1, -1, &v);
    CHECK_MSG(rc == LW_OK || rc == LW_EDONE, "child %d: %s", i,
              lw_strerror(rc));
    {
        redisContext *c = rh_connect(&srv);
        redisReply *r =
            redisCommand(c, "RPUSH got %lld:%d", (long long)v, rc == LW_OK);
        freeReplyObject(r);
        redisFree(c);
    }
}

static void duplicates_at_once(void)
{
    redisReply *r;
    long long first = -1;
    int oks = 0;

    in_processes(8, dup_child);
    CHECK_EQ(ran("order:dup"), 1);
    r = rh_cmd(&srv, "LRANGE got 0 -1");
    CHECK(r != NULL && r->elements == 8);
    for (size_t i = 0; i < r->elements; i++) {
        long long v;
        int ok;
        CHECK_EQ(sscanf(r->element[i]->str, "%lld:%d", &v, &ok), 2);
        if (first < 0)
            first = v;
        CHECK_EQ(v, first); /* one result for all */
        oks += ok;
    }
    freeReplyObject(r);
    CHECK_EQ(oks, 1);
    printf("duplicates at once: 8 processes, 1 run, all got %lld\n", first);
}

/* ---- later duplicates, the window's end --------------------------------- */

static void later_and_window_end(void)
{
    lw_lock_opts o = once_opts(1500, 1000, 0);
    redisReply *r;
    int64_t v;
    int64_t t0 = now_ms();

    CHECK_RC(once_i64("order:later", &o, 7, 0, -1, -1, &v), LW_OK);
    CHECK_EQ(lw_last_error(), LW_OK);
    r = rh_cmd(&srv, "GET lock:order:later");
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    CHECK_MSG(strncmp(r->str, "done:i:7 ", 9) == 0, "mark %s", r->str);
    freeReplyObject(r);
    CHECK(lock_pttl(&srv, "order:later") <= 1501);
    v = 0;
    if (once_i64("order:later", &o, 8, 0, -1, -1, &v) == LW_EDONE) {
        CHECK_EQ(v, 7);
        CHECK_EQ(lw_last_error(), LW_EDONE);
    } else {
        CHECK(now_ms() - t0 >= 1500); /* only a slow machine gets here */
    }
    /* The window over (the mark gone by its TTL): the body runs again. */
    while (lock_exists(&srv, "order:later"))
        sleep_ms(50);
    CHECK_RC(once_i64("order:later", &o, 9, 0, -1, -1, &v), LW_OK);
    CHECK_EQ(ran("order:later"), 2);
    printf("later duplicate: LW_EDONE with 7; after the window: ran again\n");
}

/* ---- failed runs ----------------------------------------------------------
 */

static void failed_then_retry(void)
{
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, 0);
    int64_t v;

    CHECK_RC(once_i64("order:fail", &o, 1, 1, -1, -1, &v), LW_OK);
    CHECK(!lock_exists(&srv, "order:fail")); /* free for a retry */
    CHECK_RC(once_i64("order:fail", &o, 2, 0, -1, -1, &v), LW_OK);
    CHECK_RC(once_i64("order:fail", &o, 3, 0, -1, -1, &v), LW_EDONE);
    CHECK_EQ(v, 2);
    CHECK_EQ(ran("order:fail"), 2);
    printf("failed run: the next call ran, the one after got its 2\n");
}

/* A child runs key's body: tells ready, waits for go, stores value (or
 * fails); exits with its leave's code, negated. */
static pid_t run_in_child(const char *key, const lw_lock_opts *o, int64_t value,
                          int failed, int *ready, int *go)
{
    int r[2], g[2];
    pid_t pid;

    CHECK_EQ(pipe(r), 0);
    CHECK_EQ(pipe(g), 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int64_t v;
        int rc;
        close(r[0]);
        close(g[1]);
        use_server(&srv);
        rc = once_i64(key, o, value, failed, r[1], g[0], &v);
        lw_shutdown();
        _exit(-rc);
    }
    close(r[1]);
    close(g[0]);
    *ready = r[0];
    *go = g[1];
    return pid;
}

static int child_rc(pid_t pid)
{
    int st;

    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return -WEXITSTATUS(st);
}

/* A waiter while the run fails: handed the key, it runs the body. */
static void waiter_runs_after_failure(void)
{
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, LONG_WAIT);
    int ready, go;
    char b;
    int64_t v;
    pid_t pid = run_in_child("order:handed", &o, 1, 1, &ready, &go);

    CHECK_EQ(read(ready, &b, 1), 1);
    /* Waiting: the go is given from another process once we are queued. */
    {
        pid_t helper = fork();
        CHECK(helper >= 0);
        if (helper == 0) {
            /* Its own connection: the parent's is the parent's. */
            redisContext *c = rh_connect(&srv);
            for (;;) {
                redisReply *r = redisCommand(c, "EXISTS {lock:order:handed}:q");
                int queued = r != NULL && r->integer == 1;
                freeReplyObject(r);
                if (queued)
                    break;
                usleep(20000);
            }
            redisFree(c);
            _exit(write(go, "g", 1) == 1 ? 0 : 1);
        }
        CHECK_RC(once_i64("order:handed", &o, 2, 0, -1, -1, &v), LW_OK);
        CHECK_EQ(waitpid(helper, NULL, 0), helper);
    }
    CHECK_RC(child_rc(pid), LW_OK);
    CHECK_EQ(ran("order:handed"), 2);
    CHECK_RC(once_i64("order:handed", &o, 3, 0, -1, -1, &v), LW_EDONE);
    CHECK_EQ(v, 2);
    close(ready);
    close(go);
    printf("failed run with a waiter: the waiter ran the body\n");
}

/* ---- a run's process killed ---------------------------------------------- */

static void killed_run(void)
{
    lw_lock_opts dead = once_opts(WINDOW_MS, 2000, 0);
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, LONG_WAIT);
    int64_t v;

    die_holding(&srv, "order:killed", &dead);
    CHECK(lock_exists(&srv, "order:killed")); /* its lease, still there */
    CHECK_RC(once_i64("order:killed", &o, 5, 0, -1, -1, &v), LW_OK);
    CHECK_RC(once_i64("order:killed", &o, 6, 0, -1, -1, &v), LW_EDONE);
    CHECK_EQ(v, 5);
    printf("killed run: the waiter ran the body after its lease\n");
}

/* ---- callers during a run -------------------------------------------------
 */

static void during_a_run(void)
{
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, 0);
    lw_lock_opts w = once_opts(WINDOW_MS, 10000, LONG_WAIT);
    int ready, go;
    char b;
    int64_t v = -1;
    pid_t pid = run_in_child("order:during", &o, 77, 0, &ready, &go);

    CHECK_EQ(read(ready, &b, 1), 1);
    /* wait = 0: refused at once, the body not run. */
    CHECK_RC(once_i64("order:during", &o, 1, 0, -1, -1, &v), LW_ETIMEOUT);
    CHECK_EQ(lw_last_error(), LW_ETIMEOUT);
    CHECK_EQ(write(go, "g", 1), 1);
    /* A caller that waits gets the run's result. */
    CHECK_RC(once_i64("order:during", &w, 2, 0, -1, -1, &v), LW_EDONE);
    CHECK_EQ(v, 77);
    CHECK_RC(child_rc(pid), LW_OK);
    CHECK_EQ(ran("order:during"), 1);
    close(ready);
    close(go);
    printf("during a run: wait 0 LW_ETIMEOUT, a waiter got 77\n");
}

/* The mark removed behind the run's back: another run may start, and
 * then the first one's answer is LW_ELOST, never a second LW_OK. */
static void removed_mark(void)
{
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, 0);
    int ready, go;
    char b;
    int64_t v;
    redisReply *r;
    pid_t pid = run_in_child("order:del", &o, 1, 0, &ready, &go);

    CHECK_EQ(read(ready, &b, 1), 1);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:order:del"), 1);
    CHECK_RC(once_i64("order:del", &o, 2, 0, -1, -1, &v), LW_OK);
    CHECK_EQ(write(go, "g", 1), 1);
    CHECK_RC(child_rc(pid), LW_ELOST);
    r = rh_cmd(&srv, "GET lock:order:del");
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING &&
          strncmp(r->str, "done:i:2 ", 9) == 0);
    freeReplyObject(r);
    close(ready);
    close(go);
    printf("mark deleted during the run: the run LW_ELOST, the second OK\n");
}

/* ---- result types ----------------------------------------------------------
 */

static void types(void)
{
    lw_lock_opts o = once_opts(WINDOW_MS, 10000, 0);
    const double ds[] = {0.1, -0.0, DBL_MAX, DBL_MIN / 4, -1.0 / 3, 1e300};
    lw_guard g;
    int64_t i;
    uint64_t u;
    double d;
    char key[32];

    /* int64 */
    CHECK_RC(once_i64("t:i64", &o, INT64_MIN, 0, -1, -1, &i), LW_OK);
    CHECK_RC(once_i64("t:i64", &o, 0, 0, -1, -1, &i), LW_EDONE);
    CHECK_EQ(i, INT64_MIN);
    /* uint64, and a type read as another: LW_EINVAL */
    for (int pass = 0; pass < 2; pass++) {
        lw_guard_init(&g, &o);
        lw_guard_key_str(&g, "t:u64");
        if (pass == 0) {
            CHECK_RC(lw_guard_enter(&g), LW_OK);
            lw_once_done_u64(&g, UINT64_MAX);
            CHECK_RC(lw_guard_leave(&g), LW_OK);
        } else {
            CHECK_RC(lw_guard_enter(&g), LW_EDONE);
            CHECK_RC(lw_once_outcome_u64(&g, &u), LW_OK);
            CHECK(u == UINT64_MAX);
            CHECK_RC(lw_once_outcome_i64(&g, &i), LW_EINVAL);
        }
    }
    /* doubles, bit for bit */
    for (size_t k = 0; k < sizeof ds / sizeof *ds; k++) {
        snprintf(key, sizeof key, "t:d%zu", k);
        for (int pass = 0; pass < 2; pass++) {
            lw_guard_init(&g, &o);
            lw_guard_key_str(&g, key);
            if (pass == 0) {
                CHECK_RC(lw_guard_enter(&g), LW_OK);
                lw_once_done_double(&g, ds[k]);
                CHECK_RC(lw_guard_leave(&g), LW_OK);
            } else {
                CHECK_RC(lw_guard_enter(&g), LW_EDONE);
                CHECK_RC(lw_once_outcome_double(&g, &d), LW_OK);
                CHECK_MSG(memcmp(&d, &ds[k], sizeof d) == 0, "%.17g != %.17g",
                          d, ds[k]);
            }
        }
    }
    /* no value kept (void, or a struct): done, nothing to read */
    for (int pass = 0; pass < 2; pass++) {
        lw_guard_init(&g, &o);
        lw_guard_key_str(&g, "t:void");
        if (pass == 0) {
            CHECK_RC(lw_guard_enter(&g), LW_OK);
            lw_once_done_void(&g);
            CHECK_RC(lw_guard_leave(&g), LW_OK);
        } else {
            CHECK_RC(lw_guard_enter(&g), LW_EDONE);
            CHECK_RC(lw_once_outcome_i64(&g, &i), LW_EINVAL);
            CHECK_RC(lw_once_outcome_double(&g, &d), LW_EINVAL);
        }
    }
    printf("types: int64 min, uint64 max, 6 doubles exact, none\n");
}

/* ---- what is refused
 * --------------------------------------------------------- */

static void refused(void)
{
    lw_lock_opts o = once_opts(1000, 2000, 0); /* expire > window */
    lw_lease *l = NULL;
    lw_guard g, inner;
    int64_t v;
    char url[256];

    CHECK_RC(once_i64("r:bad", &o, 1, 0, -1, -1, &v), LW_EINVAL);
    o = once_opts(WINDOW_MS, 2000, 0);
    o.permits = 2;
    CHECK_RC(once_i64("r:bad", &o, 1, 0, -1, -1, &v), LW_EINVAL);
    o.permits = 0;
    CHECK_RC(lw_acquire("r:lease", 7, &o, &l), LW_EINVAL);
    CHECK(l == NULL);
    /* Run once inside its own run: refused, not a deadlock. */
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "r:nest");
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    lw_guard_init(&inner, &o);
    lw_guard_key_str(&inner, "r:nest");
    CHECK_RC(lw_guard_enter(&inner), LW_EINVAL);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    /* Redlock: LW_ECONFIG, the body not run. */
    {
        rh_server b, c;
        rh_opts ro;
        rh_opts_init(&ro);
        CHECK(rh_start(&b, &ro) == 0);
        CHECK(rh_start(&c, &ro) == 0);
        snprintf(url, sizeof url, "%s,%s,%s", srv.url, b.url, c.url);
        use_url(url, 1000, 2000);
        CHECK_RC(once_i64("r:redlock", &o, 1, 0, -1, -1, &v), LW_ECONFIG);
        CHECK_EQ(ran("r:redlock"), 0);
        use_server(&srv);
        CHECK(rh_stop(&b) == 0);
        CHECK(rh_stop(&c) == 0);
    }
    printf("refused: expire > window, permits, a lease, nesting, Redlock\n");
}

int main(void)
{
    rh_opts ro;

    rh_opts_init(&ro);
    CHECK(rh_start(&srv, &ro) == 0);
    use_server(&srv);

    duplicates_at_once();
    later_and_window_end();
    failed_then_retry();
    waiter_runs_after_failure();
    killed_run();
    during_a_run();
    removed_mark();
    types();
    refused();

    lw_shutdown();
    CHECK(rh_stop(&srv) == 0);
    printf("once: ok\n");
    return 0;
}

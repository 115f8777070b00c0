/* Redis answering errors instead of OK: out of memory (maxmemory with
 * noeviction), a read-only replica, a busy script, the client limit, lock
 * keys holding the wrong type, and NOSCRIPT after SCRIPT FLUSH.  Each error
 * gives a clear code (LW_EREDIS), the body does not run, nothing is left
 * held, and locks work again once the cause is gone; a flushed script cache
 * is not even an error (EVALSHA falls back to EVAL).  A lock Redis holds
 * as another kind, or with other permits, is LW_EINVAL, said in the log
 * and by lw_strerror(). */
#include "util.h"

#include <pthread.h>
#include <string.h>

#define BOUND_MS 5000

static rh_server srv;
static int body_runs;
static int failures; /* checks that let the rest run first */

/* One guarded call; the body counts its runs. */
static int call(const char *key, uint32_t wait_ms, int64_t *took)
{
    lw_guard g;
    int64_t t0 = now_ms();
    int rc = lock_str(&g, key, 5000, wait_ms);
    if (took)
        *took = now_ms() - t0;
    if (rc == LW_OK) {
        body_runs++;
        rc = lw_guard_leave(&g);
    }
    return rc;
}

static void refused(const char *what, const char *key, uint32_t wait_ms)
{
    int before = body_runs;
    int64_t took;
    lw_stats st0, st1;
    lw_stats_get(&st0);
    int rc = call(key, wait_ms, &took);
    lw_stats_get(&st1);
    printf("%-30s %s after %lld ms\n", what, lw_strerror(rc), (long long)took);
    CHECK_MSG(rc == LW_EREDIS, "%s: %s, expected LW_EREDIS", what,
              lw_strerror(rc));
    CHECK_RC(lw_last_error(), LW_EREDIS);
    CHECK_EQ(body_runs, before);
    CHECK_RANGE(took, 0, BOUND_MS);
    CHECK_EQ(st1.held, st0.held);
    CHECK_EQ(st1.acquired, st0.acquired);
}

static void config_set(rh_server *s, const char *name, const char *value)
{
    redisReply *r = rh_cmd(s, "CONFIG SET %s %s", name, value);
    CHECK_MSG(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET %s %s failed",
              name, value);
    freeReplyObject(r);
}

static void out_of_memory(void)
{
    /* A lock taken before memory runs out. */
    lw_guard held;
    CHECK_RC(lock_str(&held, "oom-held", 5000, 0), LW_OK);

    config_set(&srv, "maxmemory-policy", "noeviction");
    config_set(&srv, "maxmemory", "1");
    refused("maxmemory reached", "oom-new", 1000);
    CHECK_EQ(lock_exists(&srv, "oom-new"), 0);
    /* Releasing frees memory and needs none: the held lock goes away
     * cleanly instead of lingering until its TTL. */
    int rc = lw_guard_leave(&held);
    printf("release under maxmemory: %s\n", lw_strerror(rc));
    CHECK_RC(rc, LW_OK);
    CHECK_EQ(lock_exists(&srv, "oom-held"), 0);

    config_set(&srv, "maxmemory", "0");
    CHECK_RC(call("oom-new", 0, NULL), LW_OK);
}

static void read_only_replica(void)
{
    static char port[16];
    snprintf(port, sizeof port, "%d", srv.port);
    static const char *const args[] = {"--replicaof", "127.0.0.1", port, NULL};
    rh_opts o;
    rh_opts_init(&o);
    o.extra_args = args;
    rh_server replica;
    CHECK_EQ(rh_start(&replica, &o), 0);

    use_server(&replica);
    refused("read-only replica", "on-replica", 1000);
    refused("read-only replica, again", "on-replica", 0);
    CHECK_EQ(rh_cmd_int(&replica, "EXISTS lock:on-replica"), 0);

    /* Back on the master, the same key works. */
    use_server(&srv);
    CHECK_RC(call("on-replica", 0, NULL), LW_OK);
    rh_stop(&replica);
}

/* ---- a script that keeps the server busy -------------------------------- */

static void *busy_script(void *arg)
{
    redisContext *c = arg;
    /* Spins ~1.5 s inside Redis; everyone else gets -BUSY meanwhile. */
    redisReply *r = redisCommand(
        c, "EVAL %s 0",
        "local t = redis.call('time') "
        "local s = tonumber(t[1]) * 1000000 + tonumber(t[2]) "
        "while true do "
        "  t = redis.call('time') "
        "  if tonumber(t[1]) * 1000000 + tonumber(t[2]) - s > 1500000 then "
        "    return 1 end "
        "end");
    if (r)
        freeReplyObject(r);
    return NULL;
}

static int server_busy(void *arg)
{
    (void)arg;
    redisReply *r = rh_cmd(&srv, "PING");
    int busy =
        r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSY", 4) == 0;
    if (r)
        freeReplyObject(r);
    return busy;
}

static void busy(void)
{
    config_set(&srv, "busy-reply-threshold", "100");
    redisContext *c = rh_connect(&srv);
    CHECK(c != NULL);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, busy_script, c), 0);
    CHECK_MSG(wait_until(server_busy, NULL, 3000) >= 0,
              "the server never answered BUSY");
    refused("busy script (-BUSY)", "during-busy", 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    redisFree(c);
    config_set(&srv, "busy-reply-threshold", "5000");
    CHECK_RC(call("during-busy", 0, NULL), LW_OK);
}

/* ---- the client limit --------------------------------------------------- */

struct thread_call {
    const char *key;
    int rc;
};

static void *call_in_thread(void *arg)
{
    struct thread_call *tc = arg;
    tc->rc = call(tc->key, 0, NULL);
    return NULL;
}

static void max_clients(void)
{
    /* Every connection now open may stay; no new one is admitted.  A new
     * thread needs a connection of its own. */
    long long n = 0;
    redisReply *r = rh_cmd(&srv, "CLIENT LIST");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    for (const char *p = r->str; (p = strchr(p, '\n')) != NULL; p++)
        n++;
    freeReplyObject(r);
    char v[24];
    snprintf(v, sizeof v, "%lld", n);
    config_set(&srv, "maxclients", v);

    struct thread_call tc = {"max-clients", 0};
    pthread_t t;
    int before = body_runs;
    CHECK_EQ(pthread_create(&t, NULL, call_in_thread, &tc), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    printf("%-30s %s\n", "maxclients reached", lw_strerror(tc.rc));
    CHECK_RC(tc.rc, LW_EREDIS);
    CHECK_EQ(body_runs, before);

    config_set(&srv, "maxclients", "10000");
    CHECK_EQ(pthread_create(&t, NULL, call_in_thread, &tc), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(tc.rc, LW_OK);
}

/* ---- someone else's data under lockweave's names ------------------------ */

static void wrong_types(void)
{
    /* The lock key is a hash. */
    freeReplyObject(rh_cmd(&srv, "HSET lock:wt-hash f v"));
    refused("lock key is a hash", "wt-hash", 500);
    CHECK_EQ(rh_cmd_int(&srv, "HLEN lock:wt-hash"), 1); /* untouched */

    /* The fence counter is not a number: the lock cannot mint a fence.
     * The lock key that the same round trip may have set must not stay
     * behind, held by nobody until its TTL. */
    freeReplyObject(rh_cmd(&srv, "SET {lockweave}lock:fences abc"));
    refused("fence counter not a number", "wt-fence", 0);
    redisReply *fr = rh_cmd(&srv, "GET {lockweave}lock:fences");
    CHECK_MSG(fr != NULL && fr->type == REDIS_REPLY_STRING &&
                  strcmp(fr->str, "abc") == 0,
              "the fence counter was not left as it was");
    freeReplyObject(fr);
    long long orphan = lock_exists(&srv, "wt-fence");
    freeReplyObject(rh_cmd(&srv, "DEL {lockweave}lock:fences"));
    int rc = call("wt-fence", 0, NULL);
    printf("after repairing the fence counter: %s (lock key %s)\n",
           lw_strerror(rc), orphan ? "was left behind" : "was not left");
    if (orphan || rc != LW_OK) {
        /* Reported at the end, after the other cases have run. */
        fprintf(stderr,
                "a failed acquisition left lock:wt-fence held by nobody "
                "(the next try: %s)\n",
                lw_strerror(rc));
        failures++;
    }
}

/* ---- a lock Redis holds as another kind ---------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char logs[4096];

static void keep_log(int level, const char *msg, void *ud)
{
    size_t n;

    (void)level;
    (void)ud;
    pthread_mutex_lock(&log_mu);
    n = strlen(logs);
    snprintf(logs + n, sizeof logs - n, "%s\n", msg);
    pthread_mutex_unlock(&log_mu);
}

static pthread_barrier_t kind_in, kind_out;

static void *hold_two_permits(void *arg)
{
    lw_lock_opts o = lock_opts(5000, 0, -1);
    lw_guard g;

    (void)arg;
    o.permits = 2;
    CHECK_RC(lw_lock(&g, "other-n", 7, &o), LW_OK);
    pthread_barrier_wait(&kind_in);
    pthread_barrier_wait(&kind_out);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

/* A semaphore of 2 held, asked for with 3 permits, and as a read lock:
 * LW_EINVAL, the body not run, a log line saying how Redis holds it, and
 * lw_strerror() saying that this is what LW_EINVAL can mean. */
static void other_kind(void)
{
    lw_lock_opts o = lock_opts(5000, 0, -1);
    const char *text = lw_strerror(LW_EINVAL);
    pthread_t t;
    lw_guard g;

    pthread_barrier_init(&kind_in, NULL, 2);
    pthread_barrier_init(&kind_out, NULL, 2);
    CHECK_EQ(pthread_create(&t, NULL, hold_two_permits, NULL), 0);
    pthread_barrier_wait(&kind_in);
    lw_set_logger(keep_log, NULL, LW_LOG_WARN);
    o.permits = 3;
    CHECK_RC(lw_lock(&g, "other-n", 7, &o), LW_EINVAL);
    CHECK_MSG(strstr(logs, "asked for as a semaphore of 3 permits, but Redis "
                           "holds it as n:2") != NULL,
              "log:\n%s", logs);
    o.permits = 0;
    o.flags = LW_LOCK_READ;
    CHECK_RC(lw_lock(&g, "other-n", 7, &o), LW_EINVAL);
    CHECK_MSG(strstr(logs, "asked for as a read lock, but Redis holds it as "
                           "type:zset") != NULL,
              "log:\n%s", logs);
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    pthread_barrier_wait(&kind_out);
    CHECK_EQ(pthread_join(t, NULL), 0);
    pthread_barrier_destroy(&kind_in);
    pthread_barrier_destroy(&kind_out);
    CHECK_MSG(strstr(text, "another kind") != NULL &&
                  strstr(text, "other permits") != NULL &&
                  strstr(text, "see the log") != NULL,
              "lw_strerror(LW_EINVAL) = \"%s\"", text);
}

/* ---- NOSCRIPT ----------------------------------------------------------- */

struct waiter {
    const char *key;
    int rc;
    int ran;
};

static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    lw_guard g;
    w->rc = lock_str(&g, w->key, 5000, 10000);
    if (w->rc == LW_OK) {
        w->ran = 1;
        w->rc = lw_guard_leave(&g);
    }
    return NULL;
}

static void script_flush(void)
{
    /* Release, renewal and queueing all run scripts. */
    lw_guard g;
    CHECK_RC(lock_str(&g, "flushed", 600, 0), LW_OK);
    freeReplyObject(rh_cmd(&srv, "SCRIPT FLUSH"));
    /* A waiter queues (script) while the holder's lease is renewed
     * (script) past its 600 ms. */
    struct waiter w = {"flushed", 0, 0};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, wait_for, &w), 0);
    sleep_ms(300);
    freeReplyObject(rh_cmd(&srv, "SCRIPT FLUSH"));
    sleep_ms(1200);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lock_exists(&srv, "flushed"), 1);
    freeReplyObject(rh_cmd(&srv, "SCRIPT FLUSH"));
    CHECK_RC(lw_guard_leave(&g), LW_OK); /* release after a flush */
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(w.rc, LW_OK);
    CHECK_EQ(w.ran, 1);
    CHECK_EQ(lock_exists(&srv, "flushed"), 0);

    /* Several flushes in a row, between plain calls. */
    for (int i = 0; i < 3; i++) {
        freeReplyObject(rh_cmd(&srv, "SCRIPT FLUSH"));
        CHECK_RC(call("flushed", 0, NULL), LW_OK);
    }
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    CHECK_RC(call("warm-up", 0, NULL), LW_OK);

    script_flush();
    out_of_memory();
    read_only_replica();
    busy();
    wrong_types();
    other_kind();
    max_clients();

    lw_stats st;
    lw_stats_get(&st);
    CHECK_EQ(st.held, 0);
    CHECK(st.redis_errors > 0);

    CHECK_EQ(failures, 0);
    lw_shutdown();
    rh_stop(&srv);
    printf("redis_errors: ok\n");
    return 0;
}

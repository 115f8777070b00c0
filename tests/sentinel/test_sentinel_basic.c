/*
 * Behind Redis Sentinel, no failover (tests/harness/rh_sentinel.h):
 * - discovery: locks land on the master the sentinels name, and the log
 *   says which master and which sentinel named it;
 * - every lock kind (mutex, read/write, semaphore, several keys,
 *   hold_at_least, run once), fences rising, wait_replicas (WAIT on the
 *   master);
 * - a lease, and a request on an event loop (a poll() loop through the
 *   hooks);
 * - lockweave-ctl with the same URL: list, inspect and unlock --force on
 *   the master;
 * - a master name no sentinel knows: LW_ECONFIG within the connect
 *   timeout, logged with the name;
 * - a master that turns replica behind the sentinels' back (REPLICAOF
 *   sent to it directly, so that no +switch-master tells): a request
 *   there meets READONLY, the sentinels are asked again, and the lock is
 *   taken once it is a master again, within the wait; a new connection to
 *   it while a replica is refused (ROLE), the call failing at its
 *   deadline; and when the sentinels name another master meanwhile
 *   (nothing announced), the READONLY sends the request there;
 * - a sentinel down (the first of the URL): the others answer;
 * - every sentinel down once the master is known: locks go on, none asks
 *   a sentinel (discovery costs nothing per call).
 */
#include <lockweave.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_util.h"
#include "rh_sentinel.h"
#include "util.h"

static rh_sentinel sn;
static rh_server *master;

/* ---- the log ----------------------------------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_len;

static void capture(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&log_mu);
    log_len += (size_t)snprintf(log_text + log_len, sizeof log_text - log_len,
                                "%s\n", msg);
    if (log_len >= sizeof log_text)
        log_len = sizeof log_text - 1;
    pthread_mutex_unlock(&log_mu);
}

static void log_clear(void)
{
    pthread_mutex_lock(&log_mu);
    log_len = 0;
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_mu);
}

/* 1 when a line logged since log_clear() holds every one of the words
 * (NULL-terminated). */
static int logged(const char *first, ...)
{
    int found = 0;

    pthread_mutex_lock(&log_mu);
    for (char *line = log_text; *line && !found;) {
        char *nl = strchr(line, '\n');
        va_list ap;
        *nl = '\0';
        found = strstr(line, first) != NULL;
        va_start(ap, first);
        for (const char *w; found && (w = va_arg(ap, const char *)) != NULL;)
            found = strstr(line, w) != NULL;
        va_end(ap);
        *nl = '\n';
        line = nl + 1;
    }
    pthread_mutex_unlock(&log_mu);
    return found;
}

static void configure(const char *url, int wait_replicas)
{
    lw_config cfg;

    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 500;
    cfg.command_timeout_ms = 1000;
    cfg.wait_replicas = wait_replicas;
    /* Seconds for the replicas to acknowledge: a loaded machine may keep
     * them from it for a few hundred ms.  Above the command timeout: the
     * reply to WAIT is waited for that much longer. */
    if (wait_replicas > 0)
        cfg.wait_timeout_ms = 3000;
    CHECK_RC(lw_configure(&cfg), LW_OK);
}

/* ---- discovery and the lock kinds ------------------------------------- */

static void discovery(void)
{
    char port[16];
    lw_guard g;

    log_clear();
    configure(sn.url, 0);
    CHECK_RC(lock_str(&g, "basic:1", 10000, 1000), LW_OK);
    CHECK(lock_exists(master, "basic:1"));
    /* Not on a replica by mistake: a replica has it by replication only. */
    CHECK(rh_sentinel_is_master(master));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(!lock_exists(master, "basic:1"));
    snprintf(port, sizeof port, ":%d", master->port);
    CHECK_MSG(
        logged("master " RH_SENTINEL_NAME " is", port, "(sentinel ", NULL),
        "no line names the master and the sentinel:\n%s", log_text);
}

static void kinds(void)
{
    lw_lock_opts o = lock_opts(10000, 2000, -1);
    lw_guard a, b, c, *both[2] = {&a, &b};
    uint64_t f1, f2;

    /* A mutex; its fence rises. */
    CHECK_RC(lw_lock(&a, "kind:m", 6, &o), LW_OK);
    f1 = lw_fence();
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    CHECK_RC(lw_lock(&a, "kind:m", 6, &o), LW_OK);
    f2 = lw_fence();
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    CHECK_MSG(f2 > f1, "fences %llu then %llu", (unsigned long long)f1,
              (unsigned long long)f2);

    /* Readers share; a writer waits for them. */
    o.flags = LW_LOCK_READ;
    CHECK_RC(lw_lock(&a, "kind:rw", 7, &o), LW_OK);
    CHECK_RC(lw_lock(&b, "kind:rw", 7, &o), LW_OK);
    CHECK_EQ(rh_cmd_int(master, "EXISTS {lock:kind:rw}:r"), 1);
    CHECK_RC(lw_guard_leave(&b), LW_OK);
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    o.flags = 0;
    CHECK_RC(lw_lock(&a, "kind:rw", 7, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&a), LW_OK);

    /* A semaphore of 2. */
    o.permits = 2;
    CHECK_RC(lw_lock(&a, "kind:sem", 8, &o), LW_OK);
    CHECK_RC(lw_lock(&b, "kind:sem", 8, &o), LW_OK);
    CHECK_RANGE(rh_cmd_int(master, "ZCARD lock:kind:sem"), 2, 3);
    CHECK_RC(lw_guard_leave(&b), LW_OK);
    CHECK_RC(lw_guard_leave(&a), LW_OK);
    o.permits = 0;

    /* Two keys as one. */
    lw_guard_init(&a, &o);
    lw_guard_key_str(&a, "kind:x");
    lw_guard_init(&b, &o);
    lw_guard_key_str(&b, "kind:y");
    CHECK_RC(lw_guard_enter_all(both, 2), LW_OK);
    CHECK(lock_exists(master, "kind:x") && lock_exists(master, "kind:y"));
    CHECK_RC(lw_guard_leave_all(both, 2), LW_OK);

    /* Run once: the mark and its result on the master; a later call gets
     * the result, not a run. */
    {
        lw_lock_opts once = lock_opts(10000, 2000, -1);
        int64_t v = 0;
        once.once_window_ms = 60000;
        CHECK_RC(lw_lock(&c, "kind:once", 9, &once), LW_OK);
        lw_once_done_i64(&c, 42);
        CHECK_RC(lw_guard_leave(&c), LW_OK);
        CHECK_EQ(rh_cmd_int(master, "EXISTS lock:kind:once"), 1);
        CHECK_RC(lw_lock(&c, "kind:once", 9, &once), LW_EDONE);
        CHECK_RC(lw_once_outcome_i64(&c, &v), LW_OK);
        CHECK_EQ(v, 42);
    }

    /* hold_at_least: the key stays past the release. */
    o.hold_at_least_ms = 1500;
    CHECK_RC(lw_lock(&c, "kind:h", 6, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&c), LW_OK);
    CHECK(lock_exists(master, "kind:h"));
    CHECK_RANGE(lock_pttl(master, "kind:h"), 1, 1600);
}

/* wait_replicas: WAIT on the master counts both replicas; asked for one
 * more, it runs its full timeout, longer than the command timeout, and the
 * lock is given back (LW_EREPLICAS, not a read timed out: LW_EREDIS). */
static void replicas(void)
{
    lw_guard g;

    /* Both replicas connected and in step first. */
    CHECK_EQ(rh_sentinel_wait_replicated(master, 30000), 0);
    configure(sn.url, 2);
    CHECK_RC(lock_str(&g, "wait:1", 10000, 1000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    configure(sn.url, 3); /* one more than there are */
    CHECK_RC(lock_str(&g, "wait:2", 10000, 0), LW_EREPLICAS);
    CHECK(!lock_exists(master, "wait:2"));
    configure(sn.url, 0);
}

/* ---- a lease, and a request on a loop ---------------------------------- */

struct poll_loop {
    int fd;
    lw_loop *lw;
};

static void *pl_watch(void *loop, int fd, lw_loop *lw)
{
    struct poll_loop *p = loop;

    p->fd = fd;
    p->lw = lw;
    return p;
}

static void pl_unwatch(void *handle)
{
    ((struct poll_loop *)handle)->fd = -1;
}

struct outcome {
    int done, rc;
    lw_lease *lease;
};

static void acquired(lw_lease *lease, int status, void *ud)
{
    struct outcome *o = ud;

    o->done = 1;
    o->rc = status;
    o->lease = lease;
}

static void released(int status, void *ud)
{
    struct outcome *o = ud;

    o->done = 1;
    o->rc = status;
}

static void run_until(struct poll_loop *p, const int *done)
{
    int64_t end = now_ms() + 10000;

    while (!*done && now_ms() < end) {
        struct pollfd pfd = {p->fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) > 0)
            lw_loop_dispatch(p->lw);
    }
    CHECK_MSG(*done, "no callback within 10 s");
}

static void leases(void)
{
    lw_lock_opts o = lock_opts(10000, 2000, -1);
    struct poll_loop p = {-1, NULL};
    lw_loop_hooks h = {0};
    struct outcome out = {0};
    lw_lease *lease;
    lw_loop *loop;

    CHECK_RC(lw_acquire("lease:1", 7, &o, &lease), LW_OK);
    CHECK(lock_exists(master, "lease:1"));
    CHECK(lw_lease_fence(lease) > 0);
    CHECK_RC(lw_release(lease), LW_OK);
    CHECK(!lock_exists(master, "lease:1"));

    h.loop = &p;
    h.watch = pl_watch;
    h.unwatch = pl_unwatch;
    loop = lw_loop_new(&h);
    CHECK(loop != NULL);
    CHECK_RC(lw_acquire_async(loop, "loop:1", 6, &o, acquired, &out), LW_OK);
    run_until(&p, &out.done);
    CHECK_RC(out.rc, LW_OK);
    CHECK(lock_exists(master, "loop:1"));
    lease = out.lease;
    out = (struct outcome){0};
    CHECK_RC(lw_release_async(lease, released, &out), LW_OK);
    run_until(&p, &out.done);
    CHECK_RC(out.rc, LW_OK);
    CHECK(!lock_exists(master, "loop:1"));
    lw_loop_free(loop);
}

/* ---- lockweave-ctl ------------------------------------------------------ */

static void ctl(void)
{
    struct ctl_run r;
    lw_guard g;
    jv *j;

    CHECK_RC(lock_str(&g, "ctl:1", 30000, 1000), LW_OK);
    ctl_run(&r, sn.url, CTL_IN_NULL, NULL, "--json", "list", "ctl:*", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_int(j, "held"), 1);
    CHECK_STR(jv_str(jv_get(j, "locks")->items[0], "key"), "ctl:1");
    jv_free(j);
    ctl_run_free(&r);

    ctl_run(&r, sn.url, CTL_IN_NULL, NULL, "--json", "inspect", "ctl:1", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_bool(j, "held"), 1);
    CHECK_RANGE(jv_int(j, "ttl_ms"), 1, 30000);
    jv_free(j);
    ctl_run_free(&r);

    ctl_run(&r, sn.url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes",
            "ctl:1", NULL);
    CHECK_EQ(r.status, 0);
    ctl_run_free(&r);
    CHECK(!lock_exists(master, "ctl:1"));
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
}

/* ---- names, sentinels down ---------------------------------------------- */

static void unknown_name(void)
{
    lw_config cfg;
    char url[300];
    int64_t t0;
    lw_guard g;

    snprintf(url, sizeof url, "%.*snobody",
             (int)(strlen(sn.url) - strlen(RH_SENTINEL_NAME)), sn.url);
    log_clear();
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 2000;
    cfg.command_timeout_ms = 2000;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    t0 = now_ms();
    CHECK_RC(lock_str(&g, "nobody:1", 10000, 20000), LW_ECONFIG);
    /* Within the connect timeout, not the lock's 20 s wait. */
    CHECK_RANGE(now_ms() - t0, 0, cfg.connect_timeout_ms);
    CHECK_MSG(logged("no sentinel knows a master named \"nobody\"", NULL),
              "not logged with the name:\n%s", log_text);
    CHECK_RC(lock_str(&g, "nobody:1", 10000, 5000), LW_ECONFIG);
}

static rh_server lone, upstream;
/* A replica in sync at once, not after the default 5 s delay. */
static const char *const quick_sync[] = {"--repl-diskless-sync-delay", "0",
                                         NULL};
static int lone_back_ms;

static void *lone_promote(void *unused)
{
    (void)unused;
    sleep_ms(lone_back_ms);
    CHECK_EQ(rh_ok(rh_cmd(&lone, "REPLICAOF NO ONE"), "REPLICAOF"), 0);
    return NULL;
}

/* lone, monitored as "lone" by the sentinels, made a replica of upstream
 * (they fail it over to no one: it has no replica). */
static void demote_lone(void)
{
    CHECK_EQ(rh_ok(rh_cmd(&lone, "REPLICAOF 127.0.0.1 %d", upstream.port),
                   "REPLICAOF"),
             0);
    CHECK_EQ(rh_sentinel_wait_replica(&lone, 10000), 0);
}

/* Every sentinel monitors "lone" at port (never failing it over: none
 * counts it down within the test), or no longer. */
static void monitor_lone(int port)
{
    for (int i = 0; i < RH_SENTINELS; i++) {
        CHECK_EQ(rh_ok(rh_cmd(&sn.sentinel[i],
                              "SENTINEL MONITOR lone 127.0.0.1 %d 2", port),
                       "SENTINEL MONITOR"),
                 0);
        CHECK_EQ(rh_ok(rh_cmd(&sn.sentinel[i], "SENTINEL SET lone "
                                               "down-after-milliseconds "
                                               "60000"),
                       "SENTINEL SET"),
                 0);
    }
}

static void unmonitor_lone(void)
{
    for (int i = 0; i < RH_SENTINELS; i++)
        CHECK_EQ(rh_ok(rh_cmd(&sn.sentinel[i], "SENTINEL REMOVE lone"),
                       "SENTINEL REMOVE"),
                 0);
}

static void demoted_behind_their_back(void)
{
    char url[300], port[16];
    pthread_t t;
    int64_t t0;
    lw_guard g;
    rh_opts o;

    rh_opts_init(&o);
    o.extra_args = quick_sync;
    CHECK_EQ(rh_start(&lone, &o), 0);
    CHECK_EQ(rh_start(&upstream, &o), 0);
    monitor_lone(lone.port);
    snprintf(url, sizeof url, "%.*slone",
             (int)(strlen(sn.url) - strlen(RH_SENTINEL_NAME)), sn.url);
    configure(url, 0);
    CHECK_RC(lock_str(&g, "lone:1", 10000, 1000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* This thread's connection is open on lone when it turns replica. */
    demote_lone();
    log_clear();
    lone_back_ms = 700;
    CHECK_EQ(pthread_create(&t, NULL, lone_promote, NULL), 0);
    t0 = now_ms();
    CHECK_RC(lock_str(&g, "lone:1", 10000, 5000), LW_OK);
    CHECK_RANGE(now_ms() - t0, 600, 5000);
    /* The thread is done with the harness's connection to lone (not
     * thread-safe: its reply to REPLICAOF could be read here). */
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK(lock_exists(&lone, "lone:1"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_MSG(logged("lone", "READONLY", NULL), "READONLY not logged:\n%s",
              log_text);

    /* A new connection to it while it is a replica. */
    demote_lone();
    log_clear();
    configure(url, 0);
    t0 = now_ms();
    CHECK_RC(lock_str(&g, "lone:2", 10000, 400), LW_EREDIS);
    CHECK_RANGE(now_ms() - t0, 300, 3000);
    CHECK_MSG(logged("ROLE says slave", NULL), "ROLE not logged:\n%s",
              log_text);

    /* The sentinels' answer changes with nothing announced (no
     * +switch-master: "lone" is monitored anew at upstream's address)
     * while this thread's connection is open on lone, a master again: when
     * lone turns replica, its READONLY sends the request to the sentinels,
     * and on to upstream. */
    CHECK_EQ(rh_ok(rh_cmd(&lone, "REPLICAOF NO ONE"), "REPLICAOF"), 0);
    configure(url, 0); /* anew: lone's failures above were logged once */
    CHECK_RC(lock_str(&g, "lone:3", 10000, 5000), LW_OK);
    CHECK(lock_exists(&lone, "lone:3"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    unmonitor_lone();
    monitor_lone(upstream.port);
    demote_lone();
    log_clear();
    CHECK_RC(lock_str(&g, "lone:4", 10000, 5000), LW_OK);
    CHECK(lock_exists(&upstream, "lone:4"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    snprintf(port, sizeof port, ":%d", upstream.port);
    CHECK_MSG(logged("lone", "READONLY", NULL) &&
                  logged("failover noticed", port, NULL),
              "READONLY, then upstream, not logged:\n%s", log_text);

    unmonitor_lone();
    rh_stop(&lone);
    rh_stop(&upstream);
}

static void sentinel_down(void)
{
    lw_guard g;

    CHECK_EQ(rh_stop(&sn.sentinel[0]), 0);
    log_clear();
    configure(sn.url, 0);
    CHECK_RC(lock_str(&g, "down:1", 10000, 2000), LW_OK);
    CHECK(lock_exists(master, "down:1"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_MSG(logged("master " RH_SENTINEL_NAME " is", NULL),
              "discovery not logged:\n%s", log_text);
}

static void *many(void *arg)
{
    lw_lock_opts o = lock_opts(10000, 2000, -1);
    char key[32];
    int t = (int)(intptr_t)arg;

    for (int i = 0; i < 100; i++) {
        lw_guard g;
        int len = snprintf(key, sizeof key, "many:%d", i % 5);
        CHECK_RC(lw_lock(&g, key, (size_t)len, &o), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    (void)t;
    return NULL;
}

/* Known once, the master needs no sentinel: new threads (new connections)
 * lock with every sentinel gone. */
static void all_sentinels_down(void)
{
    pthread_t t[4];
    lw_guard g;

    CHECK_RC(lock_str(&g, "known:1", 10000, 1000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    for (int i = 1; i < RH_SENTINELS; i++)
        CHECK_EQ(rh_stop(&sn.sentinel[i]), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, many, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}

int main(int argc, char **argv)
{
    ctl_init(argc, argv);
    CHECK_EQ(rh_sentinel_start(&sn, NULL), 0);
    master = rh_sentinel_master_by(&sn, -1);
    CHECK(master == &sn.node[0]);
    lw_set_logger(capture, NULL, LW_LOG_INFO);

    discovery();
    kinds();
    replicas();
    leases();
    ctl();
    unknown_name();
    demoted_behind_their_back();
    sentinel_down();
    all_sentinels_down();

    lw_shutdown();
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    rh_sentinel_stop(&sn);
    printf("sentinel_basic: ok\n");
    return 0;
}

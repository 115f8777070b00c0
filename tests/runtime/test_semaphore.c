/*
 * Semaphores (permits = N) on one server:
 *   - N holders at once, proved with a barrier (each holds until all N
 *     do), and the N + 1st refused meanwhile;
 *   - 4 processes x 3 threads on a 3-permit key never count more than 3
 *     holders in their sections, and every section runs (waiters are woken
 *     or handed permits, none times out);
 *   - a SIGKILLed holder's permit comes back when its lease ends;
 *   - users disagreeing on N, or a semaphore asked of a mutex's key, get
 *     LW_EINVAL; under Redlock a semaphore is LW_ECONFIG;
 *   - hold_at_least keeps the permit after the body; the watchdog renews
 *     a permit;
 *   - a holder 1 or 2 ms from the end of its lease makes a try busy (or
 *     free), never "held as another kind".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

#define N       3
#define PROCS   4
#define THREADS 3
#define ITERS   15

struct shared {
    atomic_int inside, most, failures, sections;
};

static struct shared *sh;
static rh_server srv;

static lw_lock_opts sem_opts(uint32_t expire_ms, uint32_t wait_ms,
                             uint32_t permits)
{
    lw_lock_opts o = lock_opts(expire_ms, wait_ms, -1);
    o.permits = permits;
    return o;
}

static int take(lw_guard *g, const char *key, lw_lock_opts o)
{
    return lw_lock(g, key, strlen(key), &o);
}

static pthread_barrier_t all_in, checked;

static void *holder(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(take(&g, "api:t1", sem_opts(10000, 5000, N)), LW_OK);
    pthread_barrier_wait(&all_in); /* N hold at once, or this never returns */
    pthread_barrier_wait(&checked);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void n_at_once(void)
{
    pthread_t t[N];
    lw_guard g;

    pthread_barrier_init(&all_in, NULL, N + 1);
    pthread_barrier_init(&checked, NULL, N + 1);
    for (int i = 0; i < N; i++)
        CHECK(pthread_create(&t[i], NULL, holder, NULL) == 0);
    pthread_barrier_wait(&all_in);
    CHECK_EQ(rh_cmd_int(&srv, "ZCOUNT lock:api:t1 -inf (+inf"), N);
    CHECK_RC(take(&g, "api:t1", sem_opts(10000, 0, N)), LW_ETIMEOUT);
    pthread_barrier_wait(&checked);
    for (int i = 0; i < N; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(lock_exists(&srv, "api:t1"), 0); /* gone with its last holder */
    pthread_barrier_destroy(&all_in);
    pthread_barrier_destroy(&checked);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        lw_guard g;
        if (take(&g, "api:busy", sem_opts(10000, 20000, N)) != LW_OK) {
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        int now = atomic_fetch_add(&sh->inside, 1) + 1;
        for (int m = atomic_load(&sh->most);
             now > m && !atomic_compare_exchange_weak(&sh->most, &m, now);)
            ;
        usleep(2000);
        atomic_fetch_sub(&sh->inside, 1);
        atomic_fetch_add(&sh->sections, 1);
        if (lw_guard_leave(&g) != LW_OK)
            atomic_fetch_add(&sh->failures, 1);
    }
    return NULL;
}

/* One process of the stress: THREADS workers. */
static void workers(int proc)
{
    pthread_t t[THREADS];

    (void)proc;
    use_server(&srv);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
}

static void never_more_than_n(void)
{
    in_processes(PROCS, workers);
    printf("%d sections on %d permits: at most %d holders at once, %d "
           "failures\n",
           atomic_load(&sh->sections), N, atomic_load(&sh->most),
           atomic_load(&sh->failures));
    CHECK_EQ(atomic_load(&sh->failures), 0);
    CHECK_EQ(atomic_load(&sh->sections), PROCS * THREADS * ITERS);
    CHECK(atomic_load(&sh->most) <= N);
}

/* A holder killed while it holds the only permit: the permit comes back
 * when its 1 s lease ends, not never. */
static void killed_holder(void)
{
    lw_lock_opts o = sem_opts(1000, 0, 1);
    lw_guard g;

    die_holding(&srv, "api:dead", &o);
    CHECK_RC(take(&g, "api:dead", sem_opts(10000, 0, 1)), LW_ETIMEOUT);
    CHECK_RC(take(&g, "api:dead", sem_opts(10000, 10000, 1)), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void *hold_two(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(take(&g, "api:n", sem_opts(10000, 0, 2)), LW_OK);
    pthread_barrier_wait(&all_in);
    pthread_barrier_wait(&checked);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void disagreements(void)
{
    pthread_t t;
    lw_guard g;

    pthread_barrier_init(&all_in, NULL, 2);
    pthread_barrier_init(&checked, NULL, 2);
    CHECK(pthread_create(&t, NULL, hold_two, NULL) == 0);
    pthread_barrier_wait(&all_in);
    CHECK_RC(take(&g, "api:n", sem_opts(10000, 0, 3)), LW_EINVAL);
    CHECK_RC(take(&g, "api:n", sem_opts(10000, 0, 2)), LW_OK); /* agrees */
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    pthread_barrier_wait(&checked);
    CHECK(pthread_join(t, NULL) == 0);
    /* Nobody holds it now: another N may start afresh. */
    CHECK_RC(take(&g, "api:n", sem_opts(10000, 0, 5)), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    pthread_barrier_destroy(&all_in);
    pthread_barrier_destroy(&checked);

    /* A mutex's key (another process's) asked for as a semaphore. */
    freeReplyObject(rh_cmd(&srv, "SET lock:api:mutex 0123abcd PX 10000"));
    CHECK_RC(take(&g, "api:mutex", sem_opts(10000, 0, 2)), LW_EINVAL);
}

/* What is left of the first holder's lease on key, by the server's clock. */
static long long first_lease_left_ms(const char *key)
{
    redisReply *r = rh_cmd(&srv, "ZRANGE %s 0 0 WITHSCORES", key);
    redisReply *t = rh_cmd(&srv, "TIME");
    long long left;

    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    CHECK(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    left = atoll(r->element[1]->str) - (atoll(t->element[0]->str) * 1000 +
                                        atoll(t->element[1]->str) / 1000);
    freeReplyObject(r);
    freeReplyObject(t);
    return left;
}

/* hold_at_least: after the body the permit stays taken, for the rest of
 * the hold (not the lease). */
static void hold_at_least(void)
{
    lw_lock_opts o = sem_opts(30000, 0, 1);
    lw_guard g;

    o.hold_at_least_ms = 8000;
    CHECK_RC(take(&g, "api:job", o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    long long left = first_lease_left_ms("lock:api:job");
    printf("hold: the permit is kept %lld ms more\n", left);
    CHECK(left > 0 && left <= 8001);
    CHECK_RC(take(&g, "api:job", sem_opts(10000, 0, 1)), LW_ETIMEOUT);
}

/* The watchdog renews a permit like a mutex's lease: held 2.5 leases. */
static void renewed(void)
{
    lw_guard g;

    CHECK_RC(take(&g, "api:long", sem_opts(1000, 0, 2)), LW_OK);
    sleep_ms(2500);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void redlock_refused(void)
{
    rh_server s[3];
    char url[256];
    int n = 0;
    lw_guard g;

    for (int i = 0; i < 3; i++) {
        CHECK_EQ(rh_start(&s[i], NULL), 0);
        n += snprintf(url + n, sizeof url - (size_t)n, "%s%s", i ? "," : "",
                      s[i].url);
    }
    use_url(url, 1000, 2000);
    CHECK_RC(take(&g, "api:rl", sem_opts(10000, 0, 2)), LW_ECONFIG);
    lw_shutdown();
    for (int i = 0; i < 3; i++)
        rh_stop(&s[i]);
}

/* A holder of the only permit whose lease ends 1 or 2 ms from now by the
 * server's clock, set in one script so that no time passes between reading
 * the clock and setting the score. */
static void holder_ending_in(const char *key, int ms)
{
    static const char setup[] =
        "local t = redis.call('time')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / "
        "1000)\n"
        "redis.call('del', KEYS[1])\n"
        "redis.call('zadd', KEYS[1], now + tonumber(ARGV[1]), 'someone')\n"
        "redis.call('zadd', KEYS[1], '+inf', 'n:1')\n"
        "return redis.call('pexpire', KEYS[1], 1000)\n";
    char ms_str[8];
    const char *argv[] = {"EVAL", setup, "1", key, ms_str};

    snprintf(ms_str, sizeof ms_str, "%d", ms);
    redisReply *r = rh_cmd_argv(&srv, 5, argv, NULL);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
}

/* A try against a holder about to leave: its reply carries the holder's
 * TTL, which must never read as "held as another kind". */
static void ending_holder(void)
{
    int busy = 0, free_now = 0;

    for (int i = 0; i < 300; i++) {
        lw_guard g;
        holder_ending_in("lock:api:end", 1 + i % 2);
        int rc = take(&g, "api:end", sem_opts(10000, 0, 1));
        CHECK_MSG(rc == LW_ETIMEOUT || rc == LW_OK, "try %d: %s", i,
                  lw_strerror(rc));
        if (rc == LW_OK) {
            free_now++;
            CHECK_RC(lw_guard_leave(&g), LW_OK);
        } else {
            busy++;
        }
    }
    printf("ending_holder: 300 tries, %d busy, %d found the permit free\n",
           busy, free_now);
}

int main(void)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    n_at_once();
    never_more_than_n();
    killed_holder();
    disagreements();
    hold_at_least();
    renewed();
    ending_holder();
    redlock_refused();

    lw_shutdown();
    rh_stop(&srv);
    printf("semaphore: ok\n");
    return 0;
}

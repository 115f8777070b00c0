/*
 * Event loops (lw_loop, lw_acquire_async, lw_release_async), on libevent
 * and libuv, against real servers:
 *   in_flight     3 processes, each a loop with 32 requests in flight on
 *                 one key, every section released from its callback's
 *                 timer: no overlap across requests and processes, fences
 *                 rising, every request served
 *   liveness      while a request waits seconds for a lock another
 *                 process holds, the loop keeps running its timers; it is
 *                 then served
 *   fifo          requests of one loop for a busy key are served in the
 *                 order they were made
 *   bounded       64 requests waiting on 64 busy keys open a bounded
 *                 number of connections
 *   turns         requests of the loop for one free key: each handed the
 *                 lock by the release before it, in memory (the key keeps
 *                 the run's token), local_handoffs times in a row at
 *                 least, then taken from Redis again; a fence each,
 *                 rising, every release LW_OK
 *   turns_burst   the same, each section released in the callback that
 *                 began it: a run's last checks go with its release, and
 *                 still every release LW_OK
 *   turns_on      the same, each section released once the check of the
 *                 one before is answered, nobody else waiting in Redis:
 *                 the run goes on past local_handoffs, one take for all
 *   turns_yield   the same while another process waits for the key in
 *                 Redis: the run ends within local_handoffs sections of
 *                 its arrival, and the other process is served next
 *   turns_on_lost the key taken over in the section whose check may let
 *                 the run go on: LW_ELOST for it and the next, no LW_OK
 *   turns_lost    the key taken over behind a run handed on in memory:
 *                 the section it was taken from and the one handed it after
 *                 release LW_ELOST, never LW_OK; the key is left to its
 *                 new owner, and the next request waits for it
 *   turn_waits    a request waiting its turn behind a lease of the loop
 *                 times out when its own wait runs out, the lease still
 *                 held, counted in lw_stats as a blocking wait is; one
 *                 canceled is never handed the lock
 *   turn_late     a release hands the lock past a request whose wait ran
 *                 out while the server, stopped, held the pumps (and the
 *                 clock that times waiters out) up: LW_ETIMEOUT for it
 *   cancel        lw_cancel_async(): the callback runs at once with
 *                 LW_ECANCELED, and the lock it was waiting for is not
 *                 kept when it comes
 *   freed         lw_loop_free() with a request pending and a lease held:
 *                 ECANCELED, the lease's key given back, no callback after
 *   freed_in_callback  lw_loop_free() from a callback while others are
 *                 done: they end LW_ECANCELED inside it, their locks given
 *                 back, no callback after it, no request started from them
 *   freed_in_cancel  the same from a callback lw_cancel_async() runs
 *   other_thread  a lease taken on the loop released with lw_release()
 *                 from another thread
 *   other_thread_turn  the same at once for a lease handed on in memory:
 *                 the section before it still confirmed LW_OK (its check
 *                 reads the key before that release), no lost lock
 *   errors        bad arguments at once (no callback); a wait that runs
 *                 out and an unreachable server through the callback
 *   kinds         read leases share, a semaphore's N, several keys
 *   woven_body    what a woven `loop =` wrapper does: keys built by guards
 *                 (lw_acquire_guards_async), the body run under its lease
 *                 (lw_fence, lw_fence_of, lw_still_held, a guard of its
 *                 key re-entered), lw_take_lease() once
 *   faults        connections cut, the server paused, the server restarted
 *                 while 8 requests wait: each ends (served or told why),
 *                 and a request after it is served
 *   shutdown      lw_shutdown() ends a waiting request: LW_ESHUTDOWN, also
 *                 one waiting its turn behind a lease of its loop
 *   pipelined     256 acquisitions of free keys at once on a new loop, then
 *                 their releases: every one LW_OK, fences distinct and
 *                 rising per key, the keys gone after, and a few new
 *                 connections for all of them (the loop's pumps), not one
 *                 per worker
 *   pipelined_lost  keys deleted behind their holders' backs: every
 *                 pipelined release says LW_ELOST, never LW_OK
 *   pipelined_mixed free keys asked for while requests of the same loop
 *                 wait on keys another process holds: the free ones are
 *                 served at once, the busy ones later, in the order asked
 *   pipelined_apart  someone else's data under some keys of a batch: those
 *                 requests fail (acquisitions LW_EREDIS, releases
 *                 LW_ELOST), each of the others as if alone
 *   pipelined_faults  the pump's batches while another thread keeps
 *                 killing this process's connections: each acquisition
 *                 held (its key there, its fence its own) or LW_EREDIS,
 *                 each release LW_OK or LW_ELOST, never anything else
 *   uv            the same through <lockweave/uv.h>
 */
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <lockweave/event.h>
#include <lockweave/uv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

static rh_server srv;

/* One request of a test: what its callback saw. */
struct req {
    int done, status, order;
    uint64_t fence;
    lw_lease *lease;
    int64_t done_ms; /* now_ms() when its callback ran */
};

static int served; /* callbacks run so far, in order */

static void on_acquired(lw_lease *l, int status, void *ud)
{
    struct req *r = ud;

    r->done = 1;
    r->done_ms = now_ms();
    r->status = status;
    r->order = ++served;
    r->lease = l;
    r->fence = l != NULL ? lw_lease_fence(l) : 0;
}

static int released_status = 1;

static void on_released(int status, void *ud)
{
    (void)ud;
    released_status = status;
}

/* Run base until cond(arg) or timeout_ms; 0 when cond held. */
static int run_until(struct event_base *base, int (*cond)(void *), void *arg,
                     int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;

    while (!cond(arg)) {
        if (now_ms() > end)
            return -1;
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
    return 0;
}

static int req_done(void *arg)
{
    return ((struct req *)arg)->done;
}

static int released(void *arg)
{
    (void)arg;
    return released_status != 1;
}

/* in_flight -------------------------------------------------------------- */

#define PROCS    3
#define INFLIGHT 32
#define ROUNDS   4

struct shared {
    atomic_int inside, overlaps, failures, sections, n;
    struct {
        int64_t begin_us;
        uint64_t fence;
    } s[PROCS * INFLIGHT * ROUNDS];
};

static struct shared *sh;

struct flight {
    struct event_base *base;
    lw_loop *loop;
    struct event *timer;
    lw_lease *lease;
    int left; /* sections this request still makes */
};

static void start_flight(struct flight *f);

static void end_section(evutil_socket_t fd, short what, void *arg)
{
    struct flight *f = arg;

    (void)fd;
    (void)what;
    atomic_fetch_sub(&sh->inside, 1);
    if (lw_release_async(f->lease, NULL, NULL) != LW_OK)
        atomic_fetch_add(&sh->failures, 1);
    if (--f->left > 0)
        start_flight(f);
}

static void flight_acquired(lw_lease *l, int status, void *ud)
{
    struct flight *f = ud;
    struct timeval tv = {0, 300};
    int k;

    if (status != LW_OK) {
        atomic_fetch_add(&sh->failures, 1);
        return;
    }
    if (atomic_fetch_add(&sh->inside, 1) != 0)
        atomic_fetch_add(&sh->overlaps, 1);
    k = atomic_fetch_add(&sh->n, 1);
    sh->s[k].begin_us = now_us();
    sh->s[k].fence = lw_lease_fence(l);
    atomic_fetch_add(&sh->sections, 1);
    f->lease = l;
    /* The section goes on across the loop's turns: a timer ends it. */
    evtimer_add(f->timer, &tv);
}

static void start_flight(struct flight *f)
{
    lw_lock_opts o = lock_opts(10000, 60000, -1);

    if (lw_acquire_async(f->loop, "flight", 6, &o, flight_acquired, f) != LW_OK)
        atomic_fetch_add(&sh->failures, 1);
}

static int flights_over(void *arg)
{
    struct flight *f = arg;

    for (int i = 0; i < INFLIGHT; i++)
        if (f[i].left > 0)
            return 0;
    return 1;
}

static void in_flight_proc(int p)
{
    struct event_base *base = event_base_new();
    struct flight f[INFLIGHT];
    lw_loop *loop;

    (void)p;
    use_server(&srv);
    loop = lw_loop_event(base);
    CHECK(loop != NULL);
    for (int i = 0; i < INFLIGHT; i++) {
        f[i] = (struct flight){.base = base, .loop = loop, .left = ROUNDS};
        f[i].timer = evtimer_new(base, end_section, &f[i]);
        start_flight(&f[i]);
    }
    CHECK_EQ(run_until(base, flights_over, f, 60000), 0);
    lw_loop_free(loop);
    for (int i = 0; i < INFLIGHT; i++)
        event_free(f[i].timer);
    event_base_free(base);
}

static int by_begin(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void in_flight(void)
{
    int n;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    in_processes(PROCS, in_flight_proc);
    n = atomic_load(&sh->n);
    printf("in_flight: %d sections from %d requests in flight in each of %d "
           "processes, %d overlapping, %d failed\n",
           n, INFLIGHT, PROCS, atomic_load(&sh->overlaps),
           atomic_load(&sh->failures));
    CHECK_EQ(n, PROCS * INFLIGHT * ROUNDS);
    CHECK_EQ(atomic_load(&sh->overlaps), 0);
    CHECK_EQ(atomic_load(&sh->failures), 0);
    qsort(sh->s, (size_t)n, sizeof sh->s[0], by_begin);
    for (int i = 1; i < n; i++)
        CHECK_MSG(sh->s[i].fence > sh->s[i - 1].fence, "fence %llu after %llu",
                  (unsigned long long)sh->s[i].fence,
                  (unsigned long long)sh->s[i - 1].fence);
    CHECK_EQ(lock_exists(&srv, "flight"), 0);
    munmap(sh, sizeof *sh);
}

/* liveness, fifo, bounded: a lock held by another process ---------------- */

static int ticks;

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    ticks++;
}

/* The other process that holds the keys requests wait for.  It is forked
 * once, at the start, while this process has no threads: a child forked
 * later would inherit memory the runtime's threads were using at that
 * instant (a handshake, a release under way), which only they could free
 * and the child would report lost. */
struct order {
    char key[16];
    int keys;     /* 1: key; N: bnd:0 .. bnd:N-1 in one multi-key guard */
    int hold_ms;  /* held this long, then given back */
    int may_lose; /* a fault may take the lock away: LW_ELOST is no failure */
};

static int to_holder[2], from_holder[2];
static pid_t holder;

static void holder_main(void)
{
    enum { N = 64 };
    struct order o;

    close(to_holder[1]);
    close(from_holder[0]);
    use_server(&srv);
    while (read(to_holder[0], &o, sizeof o) == (ssize_t)sizeof o) {
        lw_lock_opts lo = lock_opts(30000, 30000, -1);
        lw_guard g[N], *gp[N];
        char key[16], ok;
        int rc;

        CHECK(o.keys >= 1 && o.keys <= N);
        for (int i = 0; i < o.keys; i++) {
            if (o.keys == 1)
                snprintf(key, sizeof key, "%s", o.key);
            else
                snprintf(key, sizeof key, "bnd:%d", i);
            lw_guard_init(&g[i], &lo);
            lw_guard_key_str(&g[i], key);
            gp[i] = &g[i];
        }
        CHECK_RC(lw_guard_enter_all(gp, o.keys), LW_OK);
        CHECK_EQ(write(from_holder[1], "x", 1), 1);
        sleep_ms(o.hold_ms);
        rc = lw_guard_leave_all(gp, o.keys);
        ok = rc == LW_OK || (o.may_lose && rc == LW_ELOST) ? '0' : '1';
        CHECK_EQ(write(from_holder[1], &ok, 1), 1);
    }
    lw_shutdown();
    _exit(0);
}

static void holder_start(void)
{
    CHECK_EQ(pipe(to_holder), 0);
    CHECK_EQ(pipe(from_holder), 0);
    /* Not in the redis-servers rh_restart() starts: the holder sees its
     * end of file when this process closes its end. */
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(fcntl(to_holder[i], F_SETFD, FD_CLOEXEC), 0);
        CHECK_EQ(fcntl(from_holder[i], F_SETFD, FD_CLOEXEC), 0);
    }
    holder = fork();
    CHECK(holder >= 0);
    if (holder == 0)
        holder_main();
    close(to_holder[0]);
    close(from_holder[1]);
}

static void holder_stop(void)
{
    int status;

    close(to_holder[1]);
    CHECK_EQ(waitpid(holder, &status, 0), holder);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(from_holder[0]);
}

/* Set while a fault may take the holder's lock away (its leave then says
 * LW_ELOST, rightly). */
static int holder_may_lose;

/* Has the holder take keys (see struct order) for hold_ms; returns once it
 * holds them. */
static void hold_keys_elsewhere(const char *key, int keys, int hold_ms)
{
    struct order o = {
        .keys = keys, .hold_ms = hold_ms, .may_lose = holder_may_lose};
    char b;

    snprintf(o.key, sizeof o.key, "%s", key);
    CHECK_EQ(write(to_holder[1], &o, sizeof o), (ssize_t)sizeof o);
    CHECK_EQ(read(from_holder[0], &b, 1), 1);
    CHECK_EQ(b, 'x');
}

static void hold_elsewhere(const char *key, int hold_ms)
{
    hold_keys_elsewhere(key, 1, hold_ms);
}

/* Waits until the holder gave its keys back, and checks it could. */
static void holder_done(void)
{
    char b;

    CHECK_EQ(read(from_holder[0], &b, 1), 1);
    CHECK_EQ(b, '0');
}

static void liveness(struct event_base *base, lw_loop *loop)
{
    struct event *t = event_new(base, -1, EV_PERSIST, tick, NULL);
    struct timeval every = {0, 50000};
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r = {0};
    int64_t t0;
    hold_elsewhere("live", 1500);

    ticks = 0;
    event_add(t, &every);
    t0 = now_ms();
    CHECK_RC(lw_acquire_async(loop, "live", 4, &o, on_acquired, &r), LW_OK);
    CHECK_EQ(r.done, 0); /* returned at once */
    CHECK_EQ(run_until(base, req_done, &r, 30000), 0);
    printf("liveness: served after %lld ms; the loop ticked %d times "
           "meanwhile (every 50 ms)\n",
           (long long)(now_ms() - t0), ticks);
    CHECK_RC(r.status, LW_OK);
    /* Over a second and a half: a blocked loop ticks once or twice. */
    CHECK_MSG(ticks >= 5, "the loop ticked %d times in %lld ms", ticks,
              (long long)(now_ms() - t0));
    released_status = 1;
    CHECK_RC(lw_release_async(r.lease, on_released, NULL), LW_OK);
    CHECK_EQ(run_until(base, released, NULL, 10000), 0);
    CHECK_RC(released_status, LW_OK);
    event_free(t);
    holder_done();
}

static int all_done(void *arg)
{
    struct req *r = arg;

    for (int i = 0; i < 4; i++)
        if (!r[i].done)
            return 0;
    return 1;
}

static void fifo(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r[4] = {{0}};
    hold_elsewhere("fifo", 500);

    served = 0;
    for (int i = 0; i < 4; i++) {
        CHECK_RC(lw_acquire_async(loop, "fifo", 4, &o, on_acquired, &r[i]),
                 LW_OK);
        usleep(20000); /* each in the queue before the next comes */
    }
    /* Each is served when the one before is given back. */
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(run_until(base, req_done, &r[i], 30000), 0);
        CHECK_RC(r[i].status, LW_OK);
        CHECK_EQ(r[i].order, i + 1);
        CHECK_RC(lw_release_async(r[i].lease, NULL, NULL), LW_OK);
    }
    CHECK_EQ(run_until(base, all_done, r, 1000), 0);
    holder_done();
    printf("fifo: served in the order asked\n");
}

/* Connections of this process Redis knows (by their names). */
static int my_connections(void)
{
    char prefix[64];
    redisReply *r = rh_cmd(&srv, "CLIENT LIST TYPE normal");
    int n = 0;

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    snprintf(prefix, sizeof prefix, ":%d:", (int)getpid());
    for (const char *p = r->str; (p = strstr(p, "name=lockweave:")) != NULL;
         p++) {
        const char *end = strchr(p, ' ');
        const char *at = strstr(p, prefix);
        n += at != NULL && (end == NULL || at < end);
    }
    freeReplyObject(r);
    return n;
}

static void bounded(struct event_base *base, lw_loop *loop)
{
    enum { N = 64 };
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r[N] = {{0}};
    char key[16];
    int conns;

    /* One process holds all 64 keys: a multi-key guard. */
    hold_keys_elsewhere("", N, 1500);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "bnd:%d", i);
        CHECK_RC(
            lw_acquire_async(loop, key, strlen(key), &o, on_acquired, &r[i]),
            LW_OK);
    }
    sleep_ms(500);
    conns = my_connections();
    for (int i = 0; i < N; i++) {
        CHECK_EQ(run_until(base, req_done, &r[i], 30000), 0);
        CHECK_RC(r[i].status, LW_OK);
        CHECK_RC(lw_release_async(r[i].lease, NULL, NULL), LW_OK);
    }
    holder_done();
    printf("bounded: %d requests waiting on %d busy keys held %d connections "
           "of this process\n",
           N, N, conns);
    /* The loop's workers (16 waiting, 2 releasing), its two pumps' (which
     * tried each key first and found it busy), the watchdog's and this
     * thread's: not one per request; and more than a few, or the requests
     * would wait behind each other's waits. */
    CHECK_MSG(conns <= 22, "%d connections", conns);
    CHECK_MSG(conns >= 16, "%d connections", conns);
}

/* More requests waiting than the loop has workers to wait with: each
 * request's wait counts from its call, not from when a worker took it up,
 * so every one ends LW_ETIMEOUT when its own wait runs out, whatever its
 * place in the loop's queue. */
static void waits(struct event_base *base, lw_loop *loop)
{
    enum { N = 48, WAIT_MS = 1000 };
    lw_lock_opts o = lock_opts(10000, WAIT_MS, -1);
    struct req r[N] = {{0}};
    int64_t asked_ms, first_ms = INT64_MAX, last_ms = 0;
    char key[16];

    /* Held past every wait counted from the call: 16 workers wait at
     * once, the rest queue (counted from a worker, they would be handed
     * the keys). */
    hold_keys_elsewhere("", N, 2 * WAIT_MS);
    asked_ms = now_ms();
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "bnd:%d", i);
        CHECK_RC(
            lw_acquire_async(loop, key, strlen(key), &o, on_acquired, &r[i]),
            LW_OK);
    }
    for (int i = 0; i < N; i++) {
        CHECK_EQ(run_until(base, req_done, &r[i], 30000), 0);
        CHECK_RC(r[i].status, LW_ETIMEOUT);
        if (r[i].done_ms - asked_ms > last_ms)
            last_ms = r[i].done_ms - asked_ms;
        if (r[i].done_ms - asked_ms < first_ms)
            first_ms = r[i].done_ms - asked_ms;
    }
    printf("waits: %d requests with a %d ms wait on busy keys, the loop's "
           "workers 16: the last gave up after %lld ms\n",
           N, WAIT_MS, (long long)last_ms);
    /* Counted from the call, each ends after its wait and a last try. */
    CHECK_MSG(last_ms < 2 * WAIT_MS - 100, "the last wait ended after %lld ms",
              (long long)last_ms);
    CHECK_MSG(first_ms >= WAIT_MS - 20, "a wait ended after %lld ms",
              (long long)first_ms);
    holder_done();
}

/* turns, turns_lost, turn_waits ------------------------------------------ */

#define TURN_N 20 /* more than a run of LOCKWEAVE_LOCAL_HANDOFFS (15) + 1 */

static void store_status(int status, void *ud)
{
    *(int *)ud = status;
}

static int statuses_in(void *arg)
{
    const int *st = arg;

    for (int i = 0; i < TURN_N; i++)
        if (st[i] == 1)
            return 0;
    return 1;
}

static int status_in(void *arg)
{
    return *(int *)arg != 1;
}

/* The value of lock:key (the holder's token), in buf. */
static void lock_value(const char *key, char *buf, size_t size)
{
    redisReply *r = rh_cmd(&srv, "GET lock:%s", key);

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING && r->len < size);
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    freeReplyObject(r);
}

/* Sections one take from Redis serves in a turn at least, while requests
 * wait for it: LOCKWEAVE_LOCAL_HANDOFFS + 1 (more when a check finds
 * nobody else waiting in Redis). */
static int run_length(void)
{
    const char *env = getenv("LOCKWEAVE_LOCAL_HANDOFFS");

    return (env != NULL ? atoi(env) : 15) + 1;
}

/* n sections of one key, served in turn since before: every one but each
 * run's first was handed the lock in memory, in no more runs than runs of
 * run_length() need.  Returns the takes. */
static int check_runs(const lw_stats *before, int n)
{
    lw_stats after;
    int takes;

    lw_stats_get(&after);
    takes = n - (int)(after.handed_locally - before->handed_locally);
    CHECK_MSG(takes >= 1 && takes <= (n + run_length() - 1) / run_length(),
              "%d sections from %d takes (runs of %d at least)", n, takes,
              run_length());
    return takes;
}

static void turns(struct event_base *base, lw_loop *loop)
{
    int run = run_length(), len = 0, runs = 0;
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r[TURN_N] = {{0}};
    int st[TURN_N];
    char last[128] = "", now[128];
    lw_stats before;
    int takes;

    lw_stats_get(&before);
    served = 0;
    for (int i = 0; i < TURN_N; i++) {
        st[i] = 1;
        CHECK_RC(lw_acquire_async(loop, "turn", 4, &o, on_acquired, &r[i]),
                 LW_OK);
    }
    for (int i = 0; i < TURN_N; i++) {
        CHECK_EQ(run_until(base, req_done, &r[i], 30000), 0);
        CHECK_RC(r[i].status, LW_OK);
        CHECK_EQ(r[i].order, i + 1);
        /* A run's sections share its take's token; the next run, taken
         * from Redis again by the request waiting first (its take minting
         * the run's fences with it), has another, and comes only after
         * run sections. */
        lock_value("turn", now, sizeof now);
        if (i > 0)
            CHECK_MSG(r[i].fence > r[i - 1].fence, "fence %llu after %llu",
                      (unsigned long long)r[i].fence,
                      (unsigned long long)r[i - 1].fence);
        if (strcmp(now, last) != 0) {
            CHECK_MSG(i == 0 || len >= run,
                      "section %d: a new run after %d sections", i, len);
            strcpy(last, now);
            runs++;
            len = 0;
        }
        len++;
        CHECK_RC(lw_release_async(r[i].lease, store_status, &st[i]), LW_OK);
    }
    CHECK_EQ(run_until(base, statuses_in, st, 30000), 0);
    for (int i = 0; i < TURN_N; i++)
        CHECK_RC(st[i], LW_OK);
    CHECK_EQ(lock_exists(&srv, "turn"), 0);
    takes = check_runs(&before, TURN_N);
    CHECK_EQ(takes, runs);
    printf("turns: %d requests for one key served from %d takes, handed on "
           "in memory\n",
           TURN_N, takes);
}

#define BURST_N 160 /* at most ten runs of LOCKWEAVE_LOCAL_HANDOFFS + 1 */

struct burst {
    struct req r;
    int st; /* its release's status, 1 until then */
};

/* The section ends in the callback that began it: a run's sections follow
 * each other within one wake of the loop, faster than a check waits for
 * company at the pump. */
static void release_at_once(lw_lease *l, int status, void *ud)
{
    struct burst *b = ud;

    on_acquired(l, status, &b->r);
    if (l != NULL)
        CHECK_RC(lw_release_async(l, store_status, &b->st), LW_OK);
    else
        b->st = status;
}

static int burst_released(void *arg)
{
    const struct burst *b = arg;

    for (int i = 0; i < BURST_N; i++)
        if (b[i].st == 1)
            return 0;
    return 1;
}

/* Sections that follow each other at once: each run's end finds the checks
 * of its last sections still waiting at the pump, which sends them with
 * the run's release, in one pipeline.  They must still read the key before
 * the release removes it (or the next run's take replaces it): every
 * section LW_OK. */
static void turns_burst(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    static struct burst b[BURST_N];
    lw_stats before;
    int takes;

    lw_stats_get(&before);
    served = 0;
    memset(b, 0, sizeof b);
    for (int i = 0; i < BURST_N; i++) {
        b[i].st = 1;
        CHECK_RC(
            lw_acquire_async(loop, "tburst", 6, &o, release_at_once, &b[i]),
            LW_OK);
    }
    CHECK_EQ(run_until(base, burst_released, b, 30000), 0);
    for (int i = 0; i < BURST_N; i++) {
        CHECK_RC(b[i].r.status, LW_OK);
        CHECK_EQ(b[i].r.order, i + 1);
        CHECK_MSG(b[i].st == LW_OK, "section %d released %s", i,
                  lw_strerror(b[i].st));
        if (i > 0)
            CHECK(b[i].r.fence > b[i - 1].r.fence);
    }
    CHECK_EQ(lock_exists(&srv, "tburst"), 0);
    takes = check_runs(&before, BURST_N);
    printf("turns_burst: %d sections back to back, from %d takes: every one "
           "confirmed held to its end\n",
           BURST_N, takes);
}

/* Sections of paced(): over three runs of LOCKWEAVE_LOCAL_HANDOFFS + 1
 * (50 with the default 15, 194 at most). */
#define PACED_MAX (3 * 64 + 2)

static int paced_n(void)
{
    return 3 * run_length() + 2;
}

/* The section running when the first check that may let a paced() run go
 * on is answered: the check of the section before it.  The run's first
 * fences come with its first hand-off (its take, made before anyone
 * waited, minted none), that hand-off is the pump's, with no check of its
 * own, and a check may let the run go on once a quarter of the fences are
 * used. */
static int paced_first_more(void)
{
    int quarter = (run_length() - 1) / 4;

    return quarter > 2 ? quarter : 2;
}

static int pace_released(void *arg)
{
    return *(int *)arg != 1;
}

static int queue_exists(void *arg)
{
    redisReply *r = rh_cmd(&srv, "EXISTS {lock:%s}:q", (const char *)arg);
    int yes;

    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    yes = r->integer == 1;
    freeReplyObject(r);
    return yes;
}

/* The holder, asked for a key while this process held it, has held it and
 * given it back: its 'x' is there at once. */
static void holder_served(void)
{
    struct pollfd p = {.fd = from_holder[0], .events = POLLIN};
    char b;

    CHECK_MSG(poll(&p, 1, 1000) == 1, "the holder was not served");
    CHECK_EQ(read(from_holder[0], &b, 1), 1);
    CHECK_EQ(b, 'x');
    holder_done();
}

/* paced_n() requests of one key in turn, each section released only once
 * the check of the section before is answered (its release's callback),
 * so that each hand-off finds the checks of the run done.  With yield_at
 * >= 0, the holder process asks for the key while section yield_at holds
 * it (the section waits until the holder is queued in Redis), and must
 * have been served when the loop's second run begins.  Returns the section
 * that began the second run (paced_n(): none).  The lease is long: a run
 * hands on only with three quarters of it left, which a slow machine must
 * not run out of before the last section. */
static int paced(struct event_base *base, lw_loop *loop, const char *key,
                 int yield_at)
{
    lw_lock_opts o = lock_opts(60000, 30000, -1);
    static struct req r[PACED_MAX];
    int st[PACED_MAX], n = paced_n(), second = n;
    char first[128], now[128];

    memset(r, 0, sizeof r);
    for (int i = 0; i < n; i++) {
        st[i] = 1;
        CHECK_RC(
            lw_acquire_async(loop, key, strlen(key), &o, on_acquired, &r[i]),
            LW_OK);
    }
    for (int i = 0; i < n; i++) {
        CHECK_EQ(run_until(base, req_done, &r[i], 30000), 0);
        CHECK_RC(r[i].status, LW_OK);
        CHECK_EQ(r[i].order, i + 1);
        if (i > 0) {
            CHECK_MSG(r[i].fence > r[i - 1].fence, "fence %llu after %llu",
                      (unsigned long long)r[i].fence,
                      (unsigned long long)r[i - 1].fence);
            CHECK_EQ(run_until(base, pace_released, &st[i - 1], 30000), 0);
            CHECK_MSG(st[i - 1] == LW_OK, "section %d released %s", i - 1,
                      lw_strerror(st[i - 1]));
        }
        lock_value(key, i == 0 ? first : now, sizeof first);
        if (i > 0 && second == n && strcmp(now, first) != 0) {
            second = i;
            if (yield_at >= 0)
                holder_served();
        }
        if (i == yield_at) {
            struct order w = {.keys = 1, .hold_ms = 50};
            snprintf(w.key, sizeof w.key, "%s", key);
            CHECK_EQ(write(to_holder[1], &w, sizeof w), (ssize_t)sizeof w);
            CHECK_EQ(run_until(base, queue_exists, (void *)key, 30000), 0);
        }
        CHECK_RC(lw_release_async(r[i].lease, store_status, &st[i]), LW_OK);
    }
    CHECK_EQ(run_until(base, pace_released, &st[n - 1], 30000), 0);
    CHECK_RC(st[n - 1], LW_OK);
    return second;
}

/* Requests of the loop for one key, and nobody else waiting for it in
 * Redis: the run goes on in memory past local_handoffs, a check that finds
 * the key's queue empty minting its next fences once a quarter are used.
 * One take serves every section.  Not with LOCKWEAVE_LOCAL_HANDOFFS=1: the
 * first take, made before anyone waited, mints no fences, so the run's
 * one hand-off is the pump's, whose fences are the handing section's
 * check, and no check of its own comes before the run's last section. */
static void turns_on(struct event_base *base, lw_loop *loop)
{
    lw_stats before, after;
    int second;

    if (run_length() < 3) {
        printf("turns_on: not with LOCKWEAVE_LOCAL_HANDOFFS=1\n");
        return;
    }
    lw_stats_get(&before);
    served = 0;
    second = paced(base, loop, "ton", -1);
    lw_stats_get(&after);
    CHECK_MSG(second == paced_n(),
              "section %d: the key holds another token (a new take)", second);
    CHECK_EQ(after.handed_locally - before.handed_locally, paced_n() - 1);
    CHECK_EQ(lock_exists(&srv, "ton"), 0);
    printf("turns_on: %d sections handed on in memory from one take, nobody "
           "else waiting (runs of %d otherwise)\n",
           paced_n(), run_length());
}

/* The same while the holder process waits for the key in Redis, queued
 * while section AT holds it: the run ends within local_handoffs sections
 * after that one, the holder is handed the lock, and the loop's next run
 * comes after it.  Section AT is the first whose check before it let the
 * run go on: the last section the run may serve is then AT +
 * local_handoffs, exactly. */
static void turns_yield(struct event_base *base, lw_loop *loop)
{
    const int AT = paced_first_more();
    int second;

    if (run_length() < 3) {
        printf("turns_yield: not with LOCKWEAVE_LOCAL_HANDOFFS=1\n");
        return;
    }
    served = 0;
    second = paced(base, loop, "tyield", AT);
    CHECK_MSG(second <= AT + run_length(),
              "the holder queued at section %d; the run went on to %d", AT,
              second);
    CHECK_EQ(lock_exists(&srv, "tyield"), 0);
    printf("turns_yield: a process queued at section %d; the loop's next run "
           "began at section %d\n",
           AT, second);
}

/* A run the checks let go on, its key taken over behind it in section
 * LOST, whose check is the first that may let the run go on (the script
 * that also reads the key's queue): that section and the one handed the
 * lease after it release LW_ELOST, never LW_OK; the run hands on no more,
 * and the next request takes the key once its new owner is gone. */
static void turns_on_lost(struct event_base *base, lw_loop *loop)
{
    const int LOST = paced_first_more() - 1, n = LOST + 3;
    lw_lock_opts o = lock_opts(60000, 30000, -1);
    struct req r[24] = {{0}};
    int st[24];
    char v[128];

    if (run_length() < 3) {
        printf("turns_on_lost: not with LOCKWEAVE_LOCAL_HANDOFFS=1\n");
        return;
    }
    for (int i = 0; i < n; i++) {
        st[i] = 1;
        CHECK_RC(lw_acquire_async(loop, "tonl", 4, &o, on_acquired, &r[i]),
                 LW_OK);
    }
    for (int i = 0; i <= LOST + 1; i++) {
        CHECK_EQ(run_until(base, req_done, &r[i], 30000), 0);
        CHECK_RC(r[i].status, LW_OK);
        if (i > 0) {
            CHECK(r[i].fence > r[i - 1].fence);
            CHECK_EQ(run_until(base, pace_released, &st[i - 1], 30000), 0);
            CHECK_MSG(st[i - 1] == (i - 1 == LOST ? LW_ELOST : LW_OK),
                      "section %d released %s", i - 1, lw_strerror(st[i - 1]));
        }
        if (i == LOST) /* a forced unlock and a new owner */
            freeReplyObject(rh_cmd(&srv, "SET lock:tonl intruder"));
        CHECK_RC(lw_release_async(r[i].lease, store_status, &st[i]), LW_OK);
    }
    CHECK_EQ(run_until(base, pace_released, &st[LOST + 1], 30000), 0);
    CHECK_RC(st[LOST + 1], LW_ELOST);
    /* Nothing of ours removed the new owner's key; the next waits for it. */
    sleep_ms(200);
    lock_value("tonl", v, sizeof v);
    CHECK_MSG(strcmp(v, "intruder") == 0, "the key holds %s", v);
    CHECK_EQ(r[LOST + 2].done, 0);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:tonl"), 1);
    CHECK_EQ(run_until(base, req_done, &r[LOST + 2], 30000), 0);
    CHECK_RC(r[LOST + 2].status, LW_OK);
    CHECK(r[LOST + 2].fence > r[LOST + 1].fence);
    CHECK_RC(lw_release_async(r[LOST + 2].lease, store_status, &st[LOST + 2]),
             LW_OK);
    CHECK_EQ(run_until(base, pace_released, &st[LOST + 2], 30000), 0);
    CHECK_RC(st[LOST + 2], LW_OK);
    printf("turns_on_lost: the key taken over in section %d, whose check may "
           "let the run go on: LW_ELOST for it and the next, no LW_OK\n",
           LOST);
}

static atomic_int turn_lost_calls;

static void count_lost(const char *key, size_t keylen, int reason, void *ud)
{
    (void)key;
    (void)keylen;
    (void)reason;
    (void)ud;
    turn_lost_calls++;
}

static void turns_lost(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r[4] = {{0}};
    int st[4] = {1, 1, 1, 1};
    char v[128];

    lw_set_lost_handler(count_lost, NULL);
    for (int i = 0; i < 4; i++)
        CHECK_RC(lw_acquire_async(loop, "tlost", 5, &o, on_acquired, &r[i]),
                 LW_OK);
    CHECK_EQ(run_until(base, req_done, &r[0], 30000), 0);
    CHECK_RC(r[0].status, LW_OK);
    CHECK_RC(lw_release_async(r[0].lease, store_status, &st[0]), LW_OK);
    CHECK_EQ(run_until(base, req_done, &r[1], 30000), 0);
    CHECK_RC(r[1].status, LW_OK);
    /* Inside r[1]'s section, someone else gets the key (a forced unlock
     * and a new owner, or an eviction and a new owner). */
    freeReplyObject(rh_cmd(&srv, "SET lock:tlost intruder"));
    CHECK_RC(lw_release_async(r[1].lease, store_status, &st[1]), LW_OK);
    /* The run had fences left: r[2] is handed the lock in memory before
     * any check can tell, its fence above r[1]'s ... */
    CHECK_EQ(run_until(base, req_done, &r[2], 30000), 0);
    CHECK_RC(r[2].status, LW_OK);
    CHECK(r[2].fence > r[1].fence);
    /* ... and neither section may say it held the lock to its end. */
    CHECK_EQ(run_until(base, status_in, &st[1], 30000), 0);
    CHECK_RC(st[0], LW_OK);
    CHECK_RC(st[1], LW_ELOST);
    CHECK_RC(lw_release_async(r[2].lease, store_status, &st[2]), LW_OK);
    CHECK_EQ(run_until(base, status_in, &st[2], 30000), 0);
    CHECK_RC(st[2], LW_ELOST);
    CHECK_MSG(turn_lost_calls >= 2, "lost handler called %d times",
              (int)turn_lost_calls);
    /* Nothing of ours removed the new owner's key; r[3] waits for it. */
    sleep_ms(200);
    lock_value("tlost", v, sizeof v);
    CHECK_MSG(strcmp(v, "intruder") == 0, "the key holds %s", v);
    CHECK_EQ(r[3].done, 0);
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:tlost"), 1);
    CHECK_EQ(run_until(base, req_done, &r[3], 30000), 0);
    CHECK_RC(r[3].status, LW_OK);
    CHECK(r[3].fence > r[2].fence);
    CHECK_RC(lw_release_async(r[3].lease, store_status, &st[3]), LW_OK);
    CHECK_EQ(run_until(base, status_in, &st[3], 30000), 0);
    CHECK_RC(st[3], LW_OK);
    lw_set_lost_handler(NULL, NULL);
    printf("turns_lost: a run taken over behind its back: LW_ELOST for the "
           "sections it spanned, the new owner's key left alone\n");
}

static void turn_waits(struct event_base *base, lw_loop *loop)
{
    enum { WAIT_MS = 300 };
    lw_lock_opts o = lock_opts(10000, 30000, -1),
                 brief = lock_opts(10000, WAIT_MS, -1),
                 once = lock_opts(10000, 0, -1);
    struct req held = {0}, timed = {0}, tried = {0}, dropped = {0}, next = {0};
    int64_t asked_ms;
    lw_stats before, after;

    CHECK_RC(lw_acquire_async(loop, "twait", 5, &o, on_acquired, &held), LW_OK);
    CHECK_EQ(run_until(base, req_done, &held, 30000), 0);
    CHECK_RC(held.status, LW_OK);
    lw_stats_get(&before);
    asked_ms = now_ms();
    CHECK_RC(lw_acquire_async(loop, "twait", 5, &brief, on_acquired, &timed),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "twait", 5, &once, on_acquired, &tried),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "twait", 5, &o, on_acquired, &dropped),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "twait", 5, &o, on_acquired, &next), LW_OK);
    /* Each wait runs out while the loop's own lease still holds the key. */
    CHECK_EQ(run_until(base, req_done, &tried, 10000), 0);
    CHECK_RC(tried.status, LW_ETIMEOUT);
    CHECK_EQ(run_until(base, req_done, &timed, 10000), 0);
    CHECK_RC(timed.status, LW_ETIMEOUT);
    CHECK_MSG(timed.done_ms - asked_ms >= WAIT_MS - 20,
              "a %d ms wait ended after %lld ms", WAIT_MS,
              (long long)(timed.done_ms - asked_ms));
    CHECK_EQ(lw_lease_held(held.lease), 1);
    CHECK_EQ(lw_cancel_async(loop, &dropped), 1);
    CHECK_RC(dropped.status, LW_ECANCELED);
    /* The release hands the lock to the one left waiting, not to those
     * that gave up. */
    released_status = 1;
    CHECK_RC(lw_release_async(held.lease, on_released, NULL), LW_OK);
    CHECK_EQ(run_until(base, req_done, &next, 30000), 0);
    CHECK_RC(next.status, LW_OK);
    CHECK(dropped.lease == NULL && timed.lease == NULL);
    CHECK_EQ(run_until(base, released, NULL, 30000), 0);
    CHECK_RC(released_status, LW_OK);
    released_status = 1;
    CHECK_RC(lw_release_async(next.lease, on_released, NULL), LW_OK);
    CHECK_EQ(run_until(base, released, NULL, 30000), 0);
    CHECK_RC(released_status, LW_OK);
    CHECK_EQ(lock_exists(&srv, "twait"), 0);
    /* Counted as blocking waits are: two timed out, three found it busy
     * (the canceled one never ended its wait). */
    lw_stats_get(&after);
    CHECK_EQ(after.timed_out - before.timed_out, 2);
    CHECK_EQ(after.contended - before.contended, 3);
    CHECK_EQ(after.acquired - before.acquired, 1);
    printf("turn_waits: waits behind the loop's own lease ran out in time; "
           "a canceled one was passed over\n");
}

/* cancel, freed, other_thread ------------------------------------------- */

/* first, served, releases: its turn's next request, second, is handed
 * the lease and served (st gets first's release's status later). */
static void hand_first_on(struct event_base *base, struct req *first,
                          struct req *second, int *st)
{
    CHECK_EQ(run_until(base, req_done, first, 30000), 0);
    CHECK_RC(first->status, LW_OK);
    CHECK_RC(lw_release_async(first->lease, store_status, st), LW_OK);
    CHECK_EQ(run_until(base, req_done, second, 30000), 0);
    CHECK_RC(second->status, LW_OK);
}

/* A wait that ran out is over, also while the first pump, whose clock
 * times waiters out, waits for a server that does not answer: a release
 * on the loop's thread hands the lease on to the next request still
 * waiting, never to one past its wait. */
static void turn_late(struct event_base *base, lw_loop *loop)
{
    enum { WAIT_MS = 200, KEYS = 16 };
    lw_lock_opts o = lock_opts(10000, 30000, -1),
                 brief = lock_opts(10000, WAIT_MS, -1);
    struct req first = {0}, second = {0}, late = {0}, next = {0};
    struct req other[KEYS] = {{0}};
    int st[2] = {1, 1};
    char key[32];

    /* second waits when first asks: the run's fences come with first's
     * take, so the hand-offs below need no round trip. */
    CHECK_RC(lw_acquire_async(loop, "tlate", 5, &o, on_acquired, &first),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "tlate", 5, &o, on_acquired, &second),
             LW_OK);
    hand_first_on(base, &first, &second, &st[0]);
    CHECK_EQ(run_until(base, status_in, &st[0], 30000), 0);
    CHECK_RC(st[0], LW_OK);
    CHECK_RC(lw_acquire_async(loop, "tlate", 5, &brief, on_acquired, &late),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "tlate", 5, &o, on_acquired, &next), LW_OK);
    /* With the server stopped, free keys' takes hold both pumps in their
     * round trip (sixteen keys: each pump has some), the first pump's
     * clock with them, while late's wait runs out. */
    CHECK_EQ(rh_pause(&srv), 0);
    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof key, "tlate-%d", i);
        CHECK_RC(lw_acquire_async(loop, key, strlen(key), &o, on_acquired,
                                  &other[i]),
                 LW_OK);
    }
    sleep_ms(WAIT_MS + 300);
    CHECK_EQ(late.done, 0); /* its callback comes from the loop */
    CHECK_RC(lw_release_async(second.lease, store_status, &st[1]), LW_OK);
    CHECK_EQ(rh_resume(&srv), 0);
    CHECK_EQ(run_until(base, req_done, &late, 30000), 0);
    CHECK_MSG(late.status == LW_ETIMEOUT, "a request past its wait got %s",
              lw_strerror(late.status));
    CHECK(late.lease == NULL);
    CHECK_EQ(run_until(base, req_done, &next, 30000), 0);
    CHECK_RC(next.status, LW_OK);
    CHECK(next.fence > second.fence);
    CHECK_EQ(run_until(base, status_in, &st[1], 30000), 0);
    CHECK_RC(st[1], LW_OK);
    released_status = 1;
    CHECK_RC(lw_release_async(next.lease, on_released, NULL), LW_OK);
    CHECK_EQ(run_until(base, released, NULL, 30000), 0);
    CHECK_RC(released_status, LW_OK);
    for (int i = 0; i < KEYS; i++) {
        CHECK_EQ(run_until(base, req_done, &other[i], 30000), 0);
        CHECK_RC(other[i].status, LW_OK);
        released_status = 1;
        CHECK_RC(lw_release_async(other[i].lease, on_released, NULL), LW_OK);
        CHECK_EQ(run_until(base, released, NULL, 30000), 0);
        CHECK_RC(released_status, LW_OK);
    }
    CHECK_EQ(lock_exists(&srv, "tlate"), 0);
    printf("turn_late: a wait that ran out while the server held the pumps "
           "up was not handed the lease\n");
}

static void cancel(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r = {0}, other = {0}, mine = {0};
    hold_elsewhere("cancel", 500);

    CHECK_RC(lw_acquire_async(loop, "cancel", 6, &o, on_acquired, &r), LW_OK);
    CHECK_RC(lw_acquire_async(loop, "cancel", 6, &o, on_acquired, &other),
             LW_OK);
    sleep_ms(100);
    CHECK_EQ(lw_cancel_async(loop, &r), 1);
    CHECK_EQ(r.done, 1); /* before lw_cancel_async() returned */
    CHECK_RC(r.status, LW_ECANCELED);
    CHECK(r.lease == NULL);
    /* The other request is served, and the canceled one's win (if any)
     * is given back, not kept: a third request gets the key too. */
    CHECK_EQ(run_until(base, req_done, &other, 30000), 0);
    CHECK_RC(other.status, LW_OK);
    CHECK_RC(lw_release_async(other.lease, NULL, NULL), LW_OK);
    CHECK_RC(lw_acquire_async(loop, "cancel", 6, &o, on_acquired, &mine),
             LW_OK);
    CHECK_EQ(run_until(base, req_done, &mine, 30000), 0);
    CHECK_RC(mine.status, LW_OK);
    CHECK_RC(lw_release_async(mine.lease, NULL, NULL), LW_OK);
    CHECK_EQ(lw_cancel_async(loop, &r), 0); /* nothing left with that ud */
    holder_done();
    printf("cancel: ok\n");
}

static void freed(void)
{
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req held = {0}, waiting = {0};

    CHECK(loop != NULL);
    CHECK_RC(lw_acquire_async(loop, "freed", 5, &o, on_acquired, &held), LW_OK);
    CHECK_EQ(run_until(base, req_done, &held, 10000), 0);
    CHECK_RC(held.status, LW_OK);
    CHECK_RC(lw_acquire_async(loop, "freed", 5, &o, on_acquired, &waiting),
             LW_OK);
    sleep_ms(100);
    lw_loop_free(loop);
    CHECK_EQ(waiting.done, 1);
    CHECK_RC(waiting.status, LW_ECANCELED);
    /* The held lease was given back by lw_loop_free(); the waiting one's
     * worker gives back what it may still win. */
    for (int i = 0; i < 100 && lock_exists(&srv, "freed"); i++)
        sleep_ms(50);
    CHECK_EQ(lock_exists(&srv, "freed"), 0);
    event_base_free(base);
    printf("freed: ok\n");
}

#define FREED_N 8

static struct {
    lw_loop *loop; /* freed by the first callback */
    int in_free;   /* lw_loop_free() runs */
    int freed;     /* it returned */
    int late;      /* callbacks after it returned */
    int canceled;  /* callbacks with LW_ECANCELED while it ran */
    int refused;   /* requests made from them that were refused */
    lw_lock_opts opts;
} fcb;

static void free_from_callback(lw_lease *l, int status, void *ud)
{
    struct req *r = ud;
    lw_loop *loop = fcb.loop;

    on_acquired(l, status, r);
    if (fcb.freed) {
        fcb.late++;
        return;
    }
    if (!fcb.in_free) { /* the first: its lease the loop's to give back */
        fcb.in_free = 1;
        lw_loop_free(loop);
        fcb.in_free = 0;
        fcb.freed = 1;
        return;
    }
    if (status == LW_ECANCELED)
        fcb.canceled++;
    if (lw_acquire_async(loop, "ffree", 5, &fcb.opts, on_acquired, r) ==
        LW_EINVAL)
        fcb.refused++;
}

static int freed_flag(void *arg)
{
    (void)arg;
    return fcb.freed;
}

/* How many lock keys match pattern (after the "lock:" prefix). */
static size_t lock_count(const char *pattern)
{
    redisReply *r = rh_cmd(&srv, "KEYS lock:%s", pattern);
    size_t n;

    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY);
    n = r->elements;
    freeReplyObject(r);
    return n;
}

/* lw_loop_free() from a callback, other requests done with it: those are
 * ended there (LW_ECANCELED, each lock won given back), none has a
 * callback after it returns, and a request made from those callbacks is
 * refused (its callback would never run). */
static void freed_in_callback(void)
{
    struct event_base *base = event_base_new();
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r[FREED_N] = {{0}};
    char key[32];

    memset(&fcb, 0, sizeof fcb);
    fcb.opts = o;
    fcb.loop = lw_loop_event(base);
    CHECK(fcb.loop != NULL);
    for (int i = 0; i < FREED_N; i++) {
        snprintf(key, sizeof key, "ffree-%d", i);
        CHECK_RC(lw_acquire_async(fcb.loop, key, strlen(key), &o,
                                  free_from_callback, &r[i]),
                 LW_OK);
    }
    /* Every one done before the loop runs: one call of the dispatcher
     * finds them all. */
    for (int i = 0; i < 3000 && lock_count("ffree-*") < FREED_N; i++)
        sleep_ms(10);
    CHECK_EQ(lock_count("ffree-*"), FREED_N);
    sleep_ms(100);
    CHECK_EQ(run_until(base, freed_flag, NULL, 10000), 0);
    for (int i = 0; i < 20; i++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    CHECK_EQ(fcb.late, 0);
    CHECK_EQ(fcb.canceled, FREED_N - 1);
    CHECK_EQ(fcb.refused, FREED_N - 1);
    for (int i = 0; i < 100 && lock_count("ffree-*") > 0; i++)
        sleep_ms(50);
    CHECK_EQ(lock_count("ffree-*"), 0);
    event_base_free(base);
    printf("freed_in_callback: the loop freed by a callback: the others "
           "done with it canceled there, their locks given back\n");
}

static void free_from_cancel(lw_lease *l, int status, void *ud)
{
    (void)l;
    (void)ud;
    if (fcb.freed) {
        fcb.late++;
        return;
    }
    if (status == LW_ECANCELED)
        fcb.canceled++;
    if (!fcb.in_free) {
        fcb.in_free = 1;
        lw_loop_free(fcb.loop);
        fcb.in_free = 0;
        fcb.freed = 1;
    }
}

/* The same from a callback lw_cancel_async() runs: the requests it had
 * not ended yet are ended inside lw_loop_free(), none after it. */
static void freed_in_cancel(void)
{
    struct event_base *base = event_base_new();
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    lw_guard g;
    int tag;

    memset(&fcb, 0, sizeof fcb);
    CHECK_RC(lock_str(&g, "fcancel", 10000, 0), LW_OK);
    fcb.loop = lw_loop_event(base);
    CHECK(fcb.loop != NULL);
    for (int i = 0; i < 4; i++)
        CHECK_RC(lw_acquire_async(fcb.loop, "fcancel", 7, &o, free_from_cancel,
                                  &tag),
                 LW_OK);
    sleep_ms(100); /* each with a worker, waiting */
    CHECK(lw_cancel_async(fcb.loop, &tag) >= 1); /* frees the loop */
    CHECK_EQ(fcb.freed, 1);
    CHECK_EQ(fcb.canceled, 4);
    CHECK_EQ(fcb.late, 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    for (int i = 0; i < 100 && lock_exists(&srv, "fcancel"); i++)
        sleep_ms(50);
    CHECK_EQ(lock_exists(&srv, "fcancel"), 0);
    event_base_free(base);
    printf("freed_in_cancel: the loop freed by a canceled request's "
           "callback: the others canceled inside it\n");
}

static void *release_it(void *arg)
{
    return (void *)(intptr_t)lw_release(arg);
}

static void other_thread(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 0, -1);
    struct req r = {0};
    pthread_t t;
    void *rc;

    CHECK_RC(lw_acquire_async(loop, "ot", 2, &o, on_acquired, &r), LW_OK);
    CHECK_EQ(run_until(base, req_done, &r, 10000), 0);
    CHECK_RC(r.status, LW_OK);
    CHECK(pthread_create(&t, NULL, release_it, r.lease) == 0);
    CHECK(pthread_join(t, &rc) == 0);
    CHECK_RC((int)(intptr_t)rc, LW_OK);
    CHECK_EQ(lock_exists(&srv, "ot"), 0);
    printf("other_thread: ok\n");
}

static int elsewhere_rc = 1;

/* r's section is one that was handed the lease in memory; it ends at
 * once, given back by another thread (the loop's thread waits for it). */
static void release_in_thread(lw_lease *l, int status, void *ud)
{
    pthread_t t;
    void *rc;

    on_acquired(l, status, ud);
    if (l == NULL)
        return;
    CHECK(pthread_create(&t, NULL, release_it, l) == 0);
    CHECK(pthread_join(t, &rc) == 0);
    elsewhere_rc = (int)(intptr_t)rc;
}

/* A lease handed on in memory, given back at once by another thread
 * (lw_release(), not through the loop's pump): the section that handed it
 * on is still checked in Redis after it ended, and that check must read
 * the key before the other thread's release removes it.  Every section
 * LW_OK, and no lost lock reported. */
static void other_thread_turn(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req first = {0}, second = {0}, third = {0};
    int st[2] = {1, 1};

    turn_lost_calls = 0;
    lw_set_lost_handler(count_lost, NULL);
    CHECK_RC(lw_acquire_async(loop, "oturn", 5, &o, on_acquired, &first),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "oturn", 5, &o, on_acquired, &second),
             LW_OK);
    CHECK_RC(lw_acquire_async(loop, "oturn", 5, &o, release_in_thread, &third),
             LW_OK);
    /* The run's fences are minted at first's release, at the pump, with
     * first's check. */
    hand_first_on(base, &first, &second, &st[0]);
    /* Handed on to third here, in memory; second's check waits at the
     * pump for company while third's section runs and ends. */
    CHECK_RC(lw_release_async(second.lease, store_status, &st[1]), LW_OK);
    CHECK_EQ(run_until(base, req_done, &third, 30000), 0);
    CHECK_RC(third.status, LW_OK);
    CHECK(third.fence > second.fence && second.fence > first.fence);
    CHECK_RC(elsewhere_rc, LW_OK);
    CHECK_EQ(run_until(base, status_in, &st[1], 30000), 0);
    CHECK_MSG(st[1] == LW_OK, "the section that handed the lease on: %s",
              lw_strerror(st[1]));
    CHECK_EQ(run_until(base, status_in, &st[0], 30000), 0);
    CHECK_RC(st[0], LW_OK);
    CHECK_EQ(turn_lost_calls, 0);
    CHECK_EQ(lock_exists(&srv, "oturn"), 0);
    lw_set_lost_handler(NULL, NULL);
    printf("other_thread_turn: a lease handed on in memory and given back by "
           "another thread at once: every section LW_OK\n");
}

/* errors, kinds ---------------------------------------------------------- */

static void errors(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 200, -1), bad = o;
    struct req r = {0};
    lw_guard g;
    int dead = rh_free_port();
    char url[64];

    bad.expire_ms = 0;
    CHECK_RC(lw_acquire_async(loop, "e", 1, &bad, on_acquired, &r), LW_EINVAL);
    CHECK_RC(lw_acquire_async(loop, "e", 0, &o, on_acquired, &r), LW_EINVAL);
    CHECK_RC(lw_acquire_async(loop, "e", 1, &o, NULL, &r), LW_EINVAL);
    CHECK_RC(lw_acquire_async(NULL, "e", 1, &o, on_acquired, &r), LW_EINVAL);
    CHECK_RC(lw_release_async(NULL, NULL, NULL), LW_EINVAL);
    CHECK_EQ(r.done, 0);

    /* The wait runs out: through the callback. */
    CHECK_RC(lock_str(&g, "busy", 10000, 0), LW_OK);
    CHECK_RC(lw_acquire_async(loop, "busy", 4, &o, on_acquired, &r), LW_OK);
    CHECK_EQ(run_until(base, req_done, &r, 10000), 0);
    CHECK_RC(r.status, LW_ETIMEOUT);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* Nobody listening: LW_EREDIS through the callback. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", dead);
    use_url(url, 300, 300);
    memset(&r, 0, sizeof r);
    CHECK_RC(lw_acquire_async(loop, "down", 4, &o, on_acquired, &r), LW_OK);
    CHECK_EQ(run_until(base, req_done, &r, 10000), 0);
    CHECK_RC(r.status, LW_EREDIS);
    use_server(&srv);
    printf("errors: ok\n");
}

static void kinds(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts rd = lock_opts(10000, 0, -1), sem = rd, o = rd;
    struct req r1 = {0}, r2 = {0}, w = {0}, s[3] = {{0}}, pair = {0};
    const void *keys[2] = {"pk:2", "pk:1"};
    size_t lens[2] = {4, 4};

    rd.flags = LW_LOCK_READ;
    CHECK_RC(lw_acquire_async(loop, "doc", 3, &rd, on_acquired, &r1), LW_OK);
    CHECK_RC(lw_acquire_async(loop, "doc", 3, &rd, on_acquired, &r2), LW_OK);
    CHECK_EQ(run_until(base, req_done, &r1, 10000), 0);
    CHECK_EQ(run_until(base, req_done, &r2, 10000), 0);
    CHECK_RC(r1.status, LW_OK); /* readers share */
    CHECK_RC(r2.status, LW_OK);
    CHECK_RC(lw_acquire_async(loop, "doc", 3, &o, on_acquired, &w), LW_OK);
    CHECK_EQ(run_until(base, req_done, &w, 10000), 0);
    CHECK_RC(w.status, LW_ETIMEOUT); /* a writer excluded */
    CHECK_RC(lw_release_async(r1.lease, NULL, NULL), LW_OK);
    CHECK_RC(lw_release_async(r2.lease, NULL, NULL), LW_OK);

    sem.permits = 2;
    for (int i = 0; i < 3; i++)
        CHECK_RC(lw_acquire_async(loop, "sem", 3, &sem, on_acquired, &s[i]),
                 LW_OK);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(run_until(base, req_done, &s[i], 10000), 0);
    CHECK_EQ((s[0].status == LW_OK) + (s[1].status == LW_OK) +
                 (s[2].status == LW_OK),
             2);
    for (int i = 0; i < 3; i++)
        if (s[i].status == LW_OK)
            CHECK_RC(lw_release_async(s[i].lease, NULL, NULL), LW_OK);

    CHECK_RC(lw_acquire_keys_async(loop, keys, lens, 2, &o, on_acquired, &pair),
             LW_OK);
    CHECK_EQ(run_until(base, req_done, &pair, 10000), 0);
    CHECK_RC(pair.status, LW_OK);
    CHECK(lw_lease_fence_of(pair.lease, "pk:1", 4) <
          lw_lease_fence_of(pair.lease, "pk:2", 4)); /* taken in order */
    CHECK_RC(lw_release_async(pair.lease, NULL, NULL), LW_OK);
    printf("kinds: ok\n");
}

/* faults: the server restarted, paused, connections cut, while requests
 * wait ------------------------------------------------------------------- */

static int n_done(void *arg)
{
    struct req *r = arg;

    for (int i = 0; i < 8; i++)
        if (!r[i].done)
            return 0;
    return 1;
}

/* on_acquired(), giving a lock it got back at once. */
static void on_acquired_back(lw_lease *l, int status, void *ud)
{
    on_acquired(l, status, ud);
    if (l != NULL)
        lw_release_async(l, NULL, NULL);
}

/* 8 requests for a key held elsewhere, then fault() (on this thread, so
 * the loop waits for it: liveness is liveness()'s); every request ends,
 * served or told why, and a new request after it is served. */
static void while_waiting(struct event_base *base, lw_loop *loop,
                          const char *what, void (*fault)(void))
{
    lw_lock_opts o = lock_opts(3000, 20000, -1);
    struct req r[8] = {{0}}, after = {0};
    hold_elsewhere("fault", 800);
    int ok = 0;

    for (int i = 0; i < 8; i++)
        CHECK_RC(
            lw_acquire_async(loop, "fault", 5, &o, on_acquired_back, &r[i]),
            LW_OK);
    sleep_ms(200);
    fault();
    CHECK_EQ(run_until(base, n_done, r, 60000), 0);
    for (int i = 0; i < 8; i++) {
        ok += r[i].status == LW_OK;
        CHECK_MSG(r[i].status == LW_OK || r[i].status == LW_EREDIS ||
                      r[i].status == LW_ETIMEOUT,
                  "%s: request %d: %s", what, i, lw_strerror(r[i].status));
    }
    CHECK_RC(lw_acquire_async(loop, "fault", 5, &o, on_acquired, &after),
             LW_OK);
    CHECK_EQ(run_until(base, req_done, &after, 30000), 0);
    CHECK_RC(after.status, LW_OK);
    CHECK_RC(lw_release_async(after.lease, NULL, NULL), LW_OK);
    holder_done();
    printf("faults: %s while 8 requests waited: %d served\n", what, ok);
}

static void restart_server(void)
{
    CHECK_EQ(rh_restart(&srv), 0);
}

static void pause_server(void)
{
    CHECK_EQ(rh_pause(&srv), 0);
    sleep_ms(1000);
    CHECK_EQ(rh_resume(&srv), 0);
}

static void cut_connections(void)
{
    CHECK(rh_cmd_int(&srv, "CLIENT KILL TYPE normal SKIPME yes") >= 1);
}

static void faults(struct event_base *base, lw_loop *loop)
{
    holder_may_lose = 1;
    while_waiting(base, loop, "connections cut", cut_connections);
    while_waiting(base, loop, "the server paused 1 s", pause_server);
    while_waiting(base, loop, "the server restarted", restart_server);
    holder_may_lose = 0;
}

/* body: what a woven `loop =` wrapper does ------------------------------ */

static struct {
    int ran, reentered, taken_twice;
    uint64_t fence, fence_in_body, fence_of;
    int held;
    lw_lease *taken;
} bd;

/* The body of a woven function, run under its lease. */
static void body(void)
{
    lw_guard g;

    bd.ran = 1;
    bd.fence_in_body = lw_fence();
    bd.fence_of = lw_fence_of("body:b", 6);
    bd.held = lw_still_held();
    /* A blocking guard of the same key inside: re-entry, no wait. */
    bd.reentered = lock_str(&g, "body:a", 10000, 0) == LW_OK &&
                   lw_fence() == bd.fence_in_body &&
                   lw_guard_leave(&g) == LW_OK;
    bd.taken = lw_take_lease();
    bd.taken_twice = lw_take_lease() != NULL;
}

static void body_run(lw_lease *l, int status, void *ud)
{
    struct req *r = ud;

    r->done = 1;
    r->status = status;
    if (status != LW_OK)
        return;
    bd.fence = lw_lease_fence(l);
    lw_loop_body_begin(l);
    body();
    r->lease = lw_loop_body_end(); /* NULL: the body took it */
}

static void woven_body(struct event_base *base, lw_loop *loop)
{
    lw_lock_opts o = lock_opts(10000, 1000, -1);
    lw_guard ga, gb, *g[2] = {&gb, &ga};
    struct req r = {0};

    lw_guard_init(&ga, &o);
    lw_guard_key_str(&ga, "body:a");
    lw_guard_init(&gb, &o);
    lw_guard_key_str(&gb, "body:b");
    CHECK_RC(lw_acquire_guards_async(loop, g, 2, body_run, &r), LW_OK);
    CHECK_EQ(run_until(base, req_done, &r, 10000), 0);
    CHECK_RC(r.status, LW_OK);
    CHECK_EQ(bd.ran, 1);
    CHECK_EQ(bd.fence_in_body, bd.fence);
    CHECK(bd.fence_of > 0 && bd.fence_of != bd.fence);
    CHECK_EQ(bd.held, 1);
    CHECK_EQ(bd.reentered, 1);
    CHECK(bd.taken != NULL && r.lease == NULL && !bd.taken_twice);
    /* Outside a body: nothing to take, no fence. */
    CHECK(lw_take_lease() == NULL);
    CHECK_EQ(lw_fence(), 0);
    CHECK_EQ(lw_still_held(), 0);
    /* The body took it: its keys stay held until it is released. */
    CHECK_EQ(lock_exists(&srv, "body:a"), 1);
    CHECK_RC(lw_release_async(bd.taken, NULL, NULL), LW_OK);
    for (int i = 0; i < 100 && lock_exists(&srv, "body:a"); i++) {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        sleep_ms(10);
    }
    CHECK_EQ(lock_exists(&srv, "body:a"), 0);
    CHECK_EQ(lock_exists(&srv, "body:b"), 0);
    printf("woven_body: ok\n");
}

/* shutdown: lw_shutdown() ends a request's wait ------------------------- */

static void shutdown_waiting(void)
{
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req r = {0}, mine = {0}, turn = {0};
    int64_t t0;
    hold_elsewhere("sd", 3000);

    CHECK(loop != NULL);
    CHECK_RC(lw_acquire_async(loop, "sd", 2, &o, on_acquired, &r), LW_OK);
    /* And one waiting its turn behind a lease of the loop itself. */
    CHECK_RC(lw_acquire_async(loop, "sd2", 3, &o, on_acquired, &mine), LW_OK);
    CHECK_EQ(run_until(base, req_done, &mine, 10000), 0);
    CHECK_RC(mine.status, LW_OK);
    CHECK_RC(lw_acquire_async(loop, "sd2", 3, &o, on_acquired, &turn), LW_OK);
    sleep_ms(200);
    t0 = now_ms();
    lw_shutdown();
    CHECK_EQ(run_until(base, req_done, &r, 10000), 0);
    printf("shutdown: the waiting request ended %lld ms after lw_shutdown(): "
           "%s\n",
           (long long)(now_ms() - t0), lw_strerror(r.status));
    CHECK_RC(r.status, LW_ESHUTDOWN);
    CHECK_EQ(run_until(base, req_done, &turn, 10000), 0);
    CHECK_RC(turn.status, LW_ESHUTDOWN);
    lw_loop_free(loop);
    event_base_free(base);
    use_server(&srv);
    holder_done();
}

/* pipelined: a loop's simple requests, many at once on one connection --- */

/* Connections the server has accepted so far, less the probe's own. */
static long long connections_received(void)
{
    redisReply *r = rh_cmd(&srv, "INFO stats");
    const char *p;
    long long n;

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    p = strstr(r->str, "total_connections_received:");
    CHECK(p != NULL);
    n = atoll(p + strlen("total_connections_received:"));
    freeReplyObject(r);
    return n;
}

/* Connections opened between two probes, net of what a probe opens. */
static long long connections_since(long long before)
{
    long long a = connections_received(), b = connections_received();

    return a - before - (b - a);
}

static int reqs_done(struct req *r, int n)
{
    for (int i = 0; i < n; i++)
        if (!r[i].done)
            return 0;
    return 1;
}

#define PIPE_N 256

static struct req pipe_req[PIPE_N];
static int pipe_released[PIPE_N], pipe_released_n;

static int pipe_all_done(void *arg)
{
    return reqs_done(pipe_req, *(int *)arg);
}

static void pipe_on_released(int status, void *ud)
{
    pipe_released[(struct req *)ud - pipe_req] = status;
    pipe_released_n++;
}

static int pipe_all_released(void *arg)
{
    return pipe_released_n == *(int *)arg;
}

/* Ask for n keys "<prefix>:<i>" at once on loop, with o; run the loop
 * until every callback ran (timeout_ms at most).  Answers in pipe_req. */
static void pipe_ask(struct event_base *base, lw_loop *loop, const char *prefix,
                     int n, const lw_lock_opts *o, int timeout_ms)
{
    char key[32];

    memset(pipe_req, 0, sizeof pipe_req);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s:%d", prefix, i);
        CHECK_RC(lw_acquire_async(loop, key, strlen(key), o, on_acquired,
                                  &pipe_req[i]),
                 LW_OK);
    }
    CHECK_EQ(run_until(base, pipe_all_done, &n, timeout_ms), 0);
}

/* Take n keys "<prefix>:<i>" at once on loop; each callback LW_OK. */
static void pipe_acquire(struct event_base *base, lw_loop *loop,
                         const char *prefix, int n)
{
    lw_lock_opts o = lock_opts(10000, 5000, -1);

    pipe_ask(base, loop, prefix, n, &o, 30000);
    for (int i = 0; i < n; i++) {
        CHECK_RC(pipe_req[i].status, LW_OK);
        CHECK(pipe_req[i].fence > 0);
    }
}

/* Release the n leases of pipe_req at once; their statuses in
 * pipe_released. */
static void pipe_release(struct event_base *base, int n)
{
    pipe_released_n = 0;
    for (int i = 0; i < n; i++)
        CHECK_RC(
            lw_release_async(pipe_req[i].lease, pipe_on_released, &pipe_req[i]),
            LW_OK);
    CHECK_EQ(run_until(base, pipe_all_released, &n, 30000), 0);
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void pipelined(void)
{
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    static uint64_t first[PIPE_N], sorted[PIPE_N];
    long long before = connections_received(), conns;
    char key[32];
    int n = PIPE_N;

    CHECK(loop != NULL);
    for (int round = 0; round < 2; round++) {
        pipe_acquire(base, loop, "pipe", n);
        for (int i = 0; i < n; i++) {
            if (round == 1) /* the same key again: a higher fence */
                CHECK_MSG(pipe_req[i].fence > first[i],
                          "pipe:%d: fence %llu after %llu", i,
                          (unsigned long long)pipe_req[i].fence,
                          (unsigned long long)first[i]);
            first[i] = sorted[i] = pipe_req[i].fence;
        }
        qsort(sorted, (size_t)n, sizeof sorted[0], by_u64);
        for (int i = 1; i < n; i++)
            CHECK_MSG(sorted[i] != sorted[i - 1], "fence %llu twice",
                      (unsigned long long)sorted[i]);
        pipe_release(base, n);
        for (int i = 0; i < n; i++)
            CHECK_RC(pipe_released[i], LW_OK);
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof key, "pipe:%d", i);
            CHECK_EQ(lock_exists(&srv, key), 0);
        }
    }
    conns = connections_since(before);
    printf("pipelined: %d acquisitions and releases of free keys at once, "
           "twice, on %lld new connection(s)\n",
           n, conns);
    /* The two pumps' own (and the watchdog's, had it not run yet): the 16
     * acquiring workers and 2 releasing ones would each open one. */
    CHECK_MSG(conns <= 3, "%lld connections", conns);
    lw_loop_free(loop);
    event_base_free(base);
}

static void pipelined_lost(void)
{
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    long long before = connections_received(), conns;
    char key[32];
    int n = 64;

    CHECK(loop != NULL);
    pipe_acquire(base, loop, "plost", n);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "lock:plost:%d", i);
        CHECK_EQ(rh_cmd_int(&srv, "DEL %s", key), 1);
    }
    pipe_release(base, n);
    for (int i = 0; i < n; i++)
        CHECK_MSG(pipe_released[i] == LW_ELOST, "plost:%d released: %s", i,
                  lw_strerror(pipe_released[i]));
    conns = connections_since(before);
    printf("pipelined_lost: %d keys deleted behind their holders' backs: "
           "every release LW_ELOST, on %lld new connection(s)\n",
           n, conns);
    CHECK_MSG(conns <= 3, "%lld connections", conns);
    lw_loop_free(loop);
    event_base_free(base);
}

/* Keys "papart:<i>" with i % 8 == 3 hold a hash when acquired, and
 * i % 8 == 5 one once held: Redis refuses the scripts' commands on those
 * (WRONGTYPE).  The pump asks for all of them at once. */
static void pipelined_apart(void)
{
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    lw_lock_opts o = lock_opts(10000, 5000, -1);
    int n = 64, held = 0, ok = 0;
    char key[32];

    CHECK(loop != NULL);
    for (int i = 3; i < n; i += 8)
        CHECK_EQ(rh_cmd_int(&srv, "HSET lock:papart:%d f v", i), 1);
    pipe_ask(base, loop, "papart", n, &o, 30000);
    for (int i = 0; i < n; i++) {
        if (i % 8 == 3) {
            CHECK_MSG(pipe_req[i].status == LW_EREDIS, "papart:%d: %s", i,
                      lw_strerror(pipe_req[i].status));
            CHECK_EQ(rh_cmd_int(&srv, "HLEN lock:papart:%d", i), 1);
            continue;
        }
        CHECK_MSG(pipe_req[i].status == LW_OK, "papart:%d: %s", i,
                  lw_strerror(pipe_req[i].status));
        held++;
    }
    for (int i = 5; i < n; i += 8) {
        CHECK_EQ(rh_cmd_int(&srv, "DEL lock:papart:%d", i), 1);
        CHECK_EQ(rh_cmd_int(&srv, "HSET lock:papart:%d f v", i), 1);
    }
    pipe_released_n = 0;
    for (int i = 0; i < n; i++)
        if (i % 8 != 3)
            CHECK_RC(lw_release_async(pipe_req[i].lease, pipe_on_released,
                                      &pipe_req[i]),
                     LW_OK);
    CHECK_EQ(run_until(base, pipe_all_released, &held, 30000), 0);
    for (int i = 0; i < n; i++) {
        if (i % 8 == 3)
            continue;
        CHECK_MSG(pipe_released[i] == (i % 8 == 5 ? LW_ELOST : LW_OK),
                  "papart:%d released: %s", i, lw_strerror(pipe_released[i]));
        ok += pipe_released[i] == LW_OK;
        snprintf(key, sizeof key, "papart:%d", i);
        if (i % 8 != 5)
            CHECK_EQ(lock_exists(&srv, key), 0);
    }
    printf("pipelined_apart: %d of %d keys held as hashes: those failed, "
           "%d others acquired and released\n",
           2 * n / 8, n, ok);
    lw_loop_free(loop);
    event_base_free(base);
}

static void pipelined_mixed(void)
{
    enum { BUSY = 8, FREE = 128 };
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    lw_lock_opts o = lock_opts(10000, 30000, -1);
    struct req busy[BUSY][2];
    char key[32];
    int n = FREE, waiting = 0;
    int64_t t0;

    CHECK(loop != NULL);
    memset(busy, 0, sizeof busy);
    /* Another process holds bnd:0 .. bnd:7; two requests for each, the
     * second asked once the first waits. */
    hold_keys_elsewhere("", BUSY, 2500);
    t0 = now_ms();
    served = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < BUSY; i++) {
            snprintf(key, sizeof key, "bnd:%d", i);
            CHECK_RC(lw_acquire_async(loop, key, strlen(key), &o, on_acquired,
                                      &busy[i][j]),
                     LW_OK);
            usleep(20000);
            event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        }
    /* 16 requests wait: as many as a loop has workers to wait with.  The
     * free keys are served all the same, while they wait. */
    pipe_acquire(base, loop, "pmix", n);
    for (int i = 0; i < BUSY; i++)
        waiting += !busy[i][0].done + !busy[i][1].done;
    printf("pipelined_mixed: %d free keys served %lld ms after %d requests "
           "began to wait on keys held elsewhere, %d of them still "
           "waiting\n",
           n, (long long)(now_ms() - t0), 2 * BUSY, waiting);
    CHECK_EQ(waiting, 2 * BUSY);
    pipe_release(base, n);
    for (int i = 0; i < n; i++)
        CHECK_RC(pipe_released[i], LW_OK);
    /* The held keys: each served once given back, in the order asked. */
    for (int i = 0; i < BUSY; i++)
        for (int j = 0; j < 2; j++) {
            CHECK_EQ(run_until(base, req_done, &busy[i][j], 30000), 0);
            CHECK_RC(busy[i][j].status, LW_OK);
            if (j == 0)
                CHECK_RC(lw_release_async(busy[i][j].lease, NULL, NULL), LW_OK);
        }
    holder_done();
    for (int i = 0; i < BUSY; i++) {
        CHECK_MSG(busy[i][0].order < busy[i][1].order,
                  "bnd:%d: the second request served first", i);
        CHECK(busy[i][1].fence > busy[i][0].fence);
        CHECK_RC(lw_release_async(busy[i][1].lease, NULL, NULL), LW_OK);
    }
    for (int i = 0; i < 100; i++) {
        int left = 0;
        for (int k = 0; k < BUSY; k++) {
            snprintf(key, sizeof key, "bnd:%d", k);
            left += lock_exists(&srv, key);
        }
        if (left == 0)
            break;
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        sleep_ms(20);
    }
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "pmix:%d", i);
        CHECK_EQ(lock_exists(&srv, key), 0);
    }
    lw_loop_free(loop);
    event_base_free(base);
    printf("pipelined_mixed: ok\n");
}

static atomic_int killing;

/* Kill the connections lockweave has open in this process (by their
 * names; not the harness's) on c; how many. */
static int kill_mine(redisContext *c)
{
    redisReply *r = redisCommand(c, "CLIENT LIST TYPE normal");
    char mark[64];
    int n = 0;

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    snprintf(mark, sizeof mark, ":%d:", (int)getpid());
    for (char *line = r->str; line != NULL && *line != '\0';) {
        char *end = strchr(line, '\n'), *name;
        if (end != NULL)
            *end = '\0';
        name = strstr(line, "name=lockweave:");
        if (name != NULL && strstr(name, mark) != NULL &&
            strncmp(line, "id=", 3) == 0) {
            redisReply *k =
                redisCommand(c, "CLIENT KILL ID %lld", atoll(line + 3));
            CHECK(k != NULL);
            n += k->type == REDIS_REPLY_INTEGER && k->integer > 0;
            freeReplyObject(k);
        }
        line = end != NULL ? end + 1 : NULL;
    }
    freeReplyObject(r);
    return n;
}

/* Kills this process's lockweave connections every 3 ms until killing is
 * 0; counts them. */
static void *killer(void *arg)
{
    redisContext *c = rh_connect(&srv);
    long long *kills = arg;

    CHECK(c != NULL);
    while (atomic_load(&killing)) {
        *kills += kill_mine(c);
        usleep(3000);
    }
    redisFree(c);
    return NULL;
}

static void pipelined_faults(void)
{
    enum { F_ROUNDS = 8, F_KEYS = 128 };
    struct event_base *base = event_base_new();
    lw_loop *loop = lw_loop_event(base);
    lw_lock_opts o = lock_opts(10000, 2000, -1);
    static uint64_t fences[F_ROUNDS * F_KEYS];
    long long kills = 0;
    int n = F_KEYS, nf = 0, ok = 0, failed = 0, released_ok = 0, lost = 0;
    pthread_t t;
    char key[32], prefix[16];

    CHECK(loop != NULL);
    atomic_store(&killing, 1);
    CHECK(pthread_create(&t, NULL, killer, &kills) == 0);
    for (int round = 0; round < F_ROUNDS; round++) {
        snprintf(prefix, sizeof prefix, "pf%d", round);
        pipe_ask(base, loop, prefix, n, &o, 60000);
        pipe_released_n = 0;
        int held = 0;
        for (int i = 0; i < n; i++) {
            struct req *r = &pipe_req[i];
            CHECK_MSG(r->status == LW_OK || r->status == LW_EREDIS, "%s:%d: %s",
                      prefix, i, lw_strerror(r->status));
            if (r->status != LW_OK) {
                failed++;
                continue;
            }
            /* Held: the key is there (a try sent again after a lost reply
             * finds it its own, never someone else's). */
            snprintf(key, sizeof key, "%s:%d", prefix, i);
            CHECK_MSG(lock_exists(&srv, key), "%s held but not in Redis", key);
            fences[nf++] = r->fence;
            ok++;
            held++;
            CHECK_RC(lw_release_async(r->lease, pipe_on_released, r), LW_OK);
        }
        CHECK_EQ(run_until(base, pipe_all_released, &held, 60000), 0);
        for (int i = 0; i < n; i++) {
            if (pipe_req[i].status != LW_OK)
                continue;
            CHECK_MSG(pipe_released[i] == LW_OK || pipe_released[i] == LW_ELOST,
                      "%s:%d released: %s", prefix, i,
                      lw_strerror(pipe_released[i]));
            released_ok += pipe_released[i] == LW_OK;
            lost += pipe_released[i] == LW_ELOST;
        }
    }
    atomic_store(&killing, 0);
    CHECK(pthread_join(t, NULL) == 0);
    qsort(fences, (size_t)nf, sizeof fences[0], by_u64);
    for (int i = 1; i < nf; i++)
        CHECK_MSG(fences[i] != fences[i - 1], "fence %llu twice",
                  (unsigned long long)fences[i]);
    printf("pipelined_faults: %d kills of this process's connections: %d "
           "acquisitions held, %d LW_EREDIS; %d released, %d LW_ELOST\n",
           (int)kills, ok, failed, released_ok, lost);
    CHECK(ok > 0);
    lw_loop_free(loop);
    event_base_free(base);
}

/* uv --------------------------------------------------------------------- */

static struct req uv_req;

static void uv_acquired(lw_lease *l, int status, void *ud)
{
    on_acquired(l, status, ud);
    lw_release_async(l, on_released, NULL);
}

static void uv(void)
{
    uv_loop_t uvl;
    lw_loop *loop;
    lw_lock_opts o = lock_opts(10000, 10000, -1);
    int64_t end = now_ms() + 10000;

    CHECK_EQ(uv_loop_init(&uvl), 0);
    loop = lw_loop_uv(&uvl);
    CHECK(loop != NULL);
    released_status = 1;
    CHECK_RC(lw_acquire_async(loop, "uv", 2, &o, uv_acquired, &uv_req), LW_OK);
    while ((!uv_req.done || released_status == 1) && now_ms() < end)
        uv_run(&uvl, UV_RUN_NOWAIT), usleep(1000);
    CHECK_RC(uv_req.status, LW_OK);
    CHECK_RC(released_status, LW_OK);
    CHECK(uv_req.fence > 0);
    lw_loop_free(loop);
    uv_run(&uvl, UV_RUN_DEFAULT); /* the poll handle's close */
    CHECK_EQ(uv_loop_close(&uvl), 0);
    CHECK_EQ(lock_exists(&srv, "uv"), 0);
    printf("uv: ok\n");
}

int main(void)
{
    struct event_base *base;
    lw_loop *loop;

    CHECK_EQ(rh_start(&srv, NULL), 0);
    holder_start();
    use_server(&srv);
    in_flight();
    base = event_base_new();
    loop = lw_loop_event(base);
    CHECK(loop != NULL);
    liveness(base, loop);
    fifo(base, loop);
    bounded(base, loop);
    waits(base, loop);
    turns(base, loop);
    turns_burst(base, loop);
    turns_on(base, loop);
    turns_yield(base, loop);
    turns_on_lost(base, loop);
    turns_lost(base, loop);
    turn_waits(base, loop);
    turn_late(base, loop);
    cancel(base, loop);
    other_thread(base, loop);
    other_thread_turn(base, loop);
    errors(base, loop);
    kinds(base, loop);
    woven_body(base, loop);
    faults(base, loop);
    lw_loop_free(loop);
    event_base_free(base);
    pipelined();
    pipelined_lost();
    pipelined_apart();
    pipelined_mixed();
    pipelined_faults();
    freed();
    freed_in_callback();
    freed_in_cancel();
    shutdown_waiting();
    uv();
    lw_shutdown();
    holder_stop();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("loop: ok\n");
    return 0;
}

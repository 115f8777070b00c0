/*
 * A master killed mid-run (SIGKILL; its replica is promoted):
 * - threads locking keys on the other masters keep going during the
 *   failover, with no error and no overlap;
 * - a thread queued behind a lock of the dead master's slots (held across
 *   the failover) gets it after the failover: its wait, queue entry and
 *   mailbox (the BLPOP follows the slot) survive the master; the other
 *   threads on those slots carry on once the replica serves them;
 * - a lock held across the failover on a dead master's key is either kept
 *   (the replica had the key: the renewal followed the new map) or reported
 *   LW_ELOST — never silently lost; one held on another master is kept;
 * - what the failover loses (replication is asynchronous) is counted and
 *   printed: any overlap of two holders comes with an LW_ELOST report.
 */
#include <lockweave.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>

#include "check.h"
#include "rh_cluster.h"
#include "topology/slot.h"

#define NKEYS    60
#define PER_SIDE 3 /* worker threads on the victim's keys, and on others */
#define HOLD_MS  6000

static rh_cluster cl;
static rh_server *victim;
static int victim_key[NKEYS];
static atomic_int stop, failover_on;
static atomic_llong kill_us = LLONG_MAX; /* just before the master is killed */

struct side {
    atomic_int inside[NKEYS];
    atomic_llong fence[NKEYS];
    atomic_int ok, lost, other, overlaps, fence_regressions;
    atomic_int during_failover; /* sections done while the master was dead */
    atomic_int recovered; /* calls begun before the kill, done well after */
};
static struct side victim_side, other_side;

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long now_ms(void)
{
    return now_us() / 1000;
}

static lw_lock_opts opts(uint32_t expire_ms, uint32_t wait_ms)
{
    lw_lock_opts o;
    memset(&o, 0, sizeof o);
    o.expire_ms = expire_ms;
    o.wait_ms = wait_ms;
    o.max_renew = -1;
    return o;
}

static int key_name(int k, char *buf, size_t cap)
{
    return snprintf(buf, cap, "acct:%d", k);
}

/* A key no worker uses, on the victim (want 1) or another master. */
static void held_key(int want, char *buf, size_t cap)
{
    for (int i = 0;; i++) {
        char full[48];
        int len = snprintf(full, sizeof full, "lock:held:%d", i);
        if ((rh_cluster_master_of(&cl, lw__key_slot(full, (size_t)len)) ==
             victim) == want) {
            snprintf(buf, cap, "held:%d", i);
            return;
        }
    }
}

static void section(struct side *sd, int k)
{
    lw_lock_opts o = opts(3000, 20000);
    long long began_us = now_us(), killed;
    char key[32];
    int len = key_name(k, key, sizeof key), rc;
    long long f;
    lw_guard g;

    rc = lw_lock(&g, key, (size_t)len, &o);
    if (rc != LW_OK) {
        fprintf(stderr, "lock %s: %s\n", key, lw_strerror(rc));
        atomic_fetch_add(&sd->other, 1);
        return;
    }
    /* A failover takes at least the node timeout (1 s): a call (lock or
     * leave) begun before the kill and done 0.5 s after it rode it out. */
    killed = atomic_load(&kill_us);
    if (killed != LLONG_MAX && began_us < killed && now_us() > killed + 500000)
        atomic_fetch_add(&sd->recovered, 1);
    if (atomic_fetch_add(&sd->inside[k], 1) != 0)
        atomic_fetch_add(&sd->overlaps, 1);
    f = (long long)lw_fence();
    if (f <= atomic_exchange(&sd->fence[k], f))
        atomic_fetch_add(&sd->fence_regressions, 1);
    sched_yield();
    atomic_fetch_sub(&sd->inside[k], 1);
    began_us = now_us();
    rc = lw_guard_leave(&g);
    killed = atomic_load(&kill_us);
    if (killed != LLONG_MAX && began_us < killed && now_us() > killed + 500000)
        atomic_fetch_add(&sd->recovered, 1);
    if (rc == LW_OK)
        atomic_fetch_add(&sd->ok, 1);
    else if (rc == LW_ELOST)
        atomic_fetch_add(&sd->lost, 1);
    else
        atomic_fetch_add(&sd->other, 1);
    if (atomic_load(&failover_on))
        atomic_fetch_add(&sd->during_failover, 1);
}

static void *worker(void *arg)
{
    int on_victim = (int)(intptr_t)arg;
    struct side *sd = on_victim ? &victim_side : &other_side;
    unsigned seed = (unsigned)(uintptr_t)&arg;

    while (!atomic_load(&stop)) {
        int k = rand_r(&seed) % NKEYS;
        if (victim_key[k] == on_victim)
            section(sd, k);
    }
    return NULL;
}

struct holder {
    const char *key;
    int rc, still_held;
};

/* Hold a lock across the failover; the watchdog must renew it on the new
 * master or report it lost. */
static void *hold(void *arg)
{
    struct holder *h = arg;
    lw_lock_opts o = opts(8000, 5000);
    lw_guard g;

    h->rc = lw_lock(&g, h->key, strlen(h->key), &o);
    if (h->rc != LW_OK)
        return NULL;
    for (long long end = now_ms() + HOLD_MS; now_ms() < end;)
        usleep(20000);
    h->still_held = lw_still_held();
    h->rc = lw_guard_leave(&g);
    return NULL;
}

struct waiter {
    const char *key;
    int rc;
    long long got_ms;
};

/* Queue behind the lock held across the failover: the wait, its queue entry
 * and its mailbox (BLPOP through the router) must survive the master's
 * death. */
static void *wait_behind(void *arg)
{
    struct waiter *w = arg;
    lw_lock_opts o = opts(3000, 20000);
    lw_guard g;

    w->rc = lw_lock(&g, w->key, strlen(w->key), &o);
    w->got_ms = now_ms();
    if (w->rc == LW_OK)
        w->rc = lw_guard_leave(&g);
    return NULL;
}

static void report(const char *name, struct side *sd)
{
    printf("%-14s ok %5d  lost(reported) %3d  other errors %d  overlaps %d  "
           "fence regressions %d  done during failover %d  calls across it "
           "%d\n",
           name, atomic_load(&sd->ok), atomic_load(&sd->lost),
           atomic_load(&sd->other), atomic_load(&sd->overlaps),
           atomic_load(&sd->fence_regressions),
           atomic_load(&sd->during_failover), atomic_load(&sd->recovered));
}

int main(void)
{
    char vkey[32] = "", okey[32] = "";
    struct holder hv, ho;
    struct waiter wv;
    pthread_t t[2 * PER_SIDE], th[2], tw;
    lw_config cfg;
    long long killed_at, back_at;

    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    victim = rh_cluster_master_of(&cl, lw__key_slot("lock:acct:0", 11));
    CHECK(victim != NULL);
    for (int k = 0; k < NKEYS; k++) {
        char key[40];
        int len = snprintf(key, sizeof key, "lock:acct:%d", k);
        victim_key[k] =
            rh_cluster_master_of(&cl, lw__key_slot(key, (size_t)len)) == victim;
    }
    held_key(1, vkey, sizeof vkey);
    held_key(0, okey, sizeof okey);
    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    cfg.connect_timeout_ms = 300;
    cfg.command_timeout_ms = 1000;
    CHECK_EQ(lw_configure(&cfg), LW_OK);

    hv = (struct holder){.key = vkey};
    ho = (struct holder){.key = okey};
    CHECK_EQ(pthread_create(&th[0], NULL, hold, &hv), 0);
    CHECK_EQ(pthread_create(&th[1], NULL, hold, &ho), 0);
    for (int i = 0; i < 2 * PER_SIDE; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker,
                                (void *)(intptr_t)(i < PER_SIDE)),
                 0);
    usleep(300000);
    wv = (struct waiter){.key = vkey};
    CHECK_EQ(pthread_create(&tw, NULL, wait_behind, &wv), 0);
    usleep(700000);
    atomic_store(&failover_on, 1);
    atomic_store(&kill_us, now_us());
    killed_at = now_ms();
    CHECK_EQ(rh_kill(victim), 0);
    CHECK_EQ(rh_cluster_wait_ok(&cl, 20000), 0);
    back_at = now_ms();
    atomic_store(&failover_on, 0);
    usleep(1500000);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2 * PER_SIDE; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(pthread_join(th[0], NULL), 0);
    CHECK_EQ(pthread_join(th[1], NULL), 0);
    CHECK_EQ(pthread_join(tw, NULL), 0);

    printf("master :%d killed; its replica served its slots %lld ms later\n",
           victim->port, back_at - killed_at);
    report("dead master", &victim_side);
    report("other masters", &other_side);
    printf("held across the failover: on the dead master %s (still held %d), "
           "on another %s; queued behind the first: %s, %lld ms after the "
           "failover\n",
           lw_strerror(hv.rc), hv.still_held, lw_strerror(ho.rc),
           lw_strerror(wv.rc), wv.got_ms - back_at);

    /* Other slots: unaffected. */
    CHECK_EQ(atomic_load(&other_side.other), 0);
    CHECK_EQ(atomic_load(&other_side.lost), 0);
    CHECK_EQ(atomic_load(&other_side.overlaps), 0);
    CHECK_EQ(atomic_load(&other_side.fence_regressions), 0);
    CHECK_MSG(atomic_load(&other_side.during_failover) > 0,
              "no lock on another master was taken during the failover");
    CHECK_EQ(ho.rc, LW_OK);
    /* The dead master's slots: waiters recovered, losses reported. */
    CHECK_EQ(atomic_load(&victim_side.other), 0);
    CHECK_MSG(wv.rc == LW_OK && wv.got_ms > back_at - 1000,
              "the waiter queued behind the held lock: %s", lw_strerror(wv.rc));
    CHECK_MSG(atomic_load(&victim_side.overlaps) == 0 ||
                  atomic_load(&victim_side.lost) > 0,
              "overlapping holders without an LW_ELOST report");
    CHECK_MSG(hv.rc == LW_OK || hv.rc == LW_ELOST, "held lock: %s",
              lw_strerror(hv.rc));
    CHECK_MSG(hv.rc == LW_ELOST || hv.still_held,
              "lease reported kept but lw_still_held() was 0");
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}

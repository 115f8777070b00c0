/*
 * An event loop on a Redis Cluster, a master killed (SIGKILL; its replica
 * promoted) while requests are in flight on keys spread over every master:
 *   - every request ends, served or told why, and none of two requests on
 *     one key overlap unreported (an overlap comes with LW_ELOST);
 *   - requests made after the failover are served, on every key.
 */
#include <event2/event.h>
#include <lockweave.h>
#include <lockweave/event.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rh_cluster.h"
#include "topology/slot.h"

#define NKEYS  12
#define ROUNDS 40 /* sections per key, one after the other */

static rh_cluster cl;
static struct event_base *base;
static lw_loop *loop;

struct slotreq {
    int key;
    int left;
    int inside;
    lw_lease *lease;
    struct event *hold; /* ends the section, 20 ms in */
};

static struct slotreq req[NKEYS];
static int ok, failed, lost, overlaps;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void key_name(int k, char *buf, size_t cap)
{
    snprintf(buf, cap, "loopacct:%d", k);
}

static void next(struct slotreq *r);

static void released(int status, void *ud)
{
    struct slotreq *r = ud;

    r->inside = 0;
    if (status == LW_ELOST)
        lost++;
    if (--r->left > 0)
        next(r);
}

static void acquired(lw_lease *l, int status, void *ud)
{
    struct slotreq *r = ud;

    if (status != LW_OK) {
        failed++;
        if (--r->left > 0)
            next(r);
        return;
    }
    ok++;
    if (r->inside)
        overlaps++; /* only one request per key: cannot happen */
    r->inside = 1;
    r->lease = l;
    {
        struct timeval tv = {0, 20000};
        evtimer_add(r->hold, &tv); /* the section spans loop turns */
    }
}

static void end_section(evutil_socket_t fd, short what, void *ud)
{
    struct slotreq *r = ud;

    (void)fd;
    (void)what;
    CHECK_EQ(lw_release_async(r->lease, released, r), LW_OK);
}

static void next(struct slotreq *r)
{
    lw_lock_opts o;
    char key[32];

    memset(&o, 0, sizeof o);
    o.expire_ms = 3000;
    o.wait_ms = 10000;
    o.max_renew = -1;
    key_name(r->key, key, sizeof key);
    CHECK_EQ(lw_acquire_async(loop, key, strlen(key), &o, acquired, r), LW_OK);
}

static int all_done(void)
{
    for (int k = 0; k < NKEYS; k++)
        if (req[k].left > 0)
            return 0;
    return 1;
}

static void run_until_done(int timeout_ms)
{
    long long end = now_ms() + timeout_ms;

    while (!all_done() && now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    CHECK_MSG(all_done(), "requests still pending after %d ms", timeout_ms);
}

int main(void)
{
    lw_config cfg;
    char key[32], full[48];
    int victim_slot;

    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    base = event_base_new();
    loop = lw_loop_event(base);
    CHECK(loop != NULL);

    for (int k = 0; k < NKEYS; k++) {
        req[k] = (struct slotreq){.key = k, .left = ROUNDS};
        req[k].hold = evtimer_new(base, end_section, &req[k]);
        next(&req[k]);
    }
    /* Let sections run (each about 20 ms, 40 per key), then kill the
     * master of key 0's slot while they do. */
    for (long long end = now_ms() + 300; now_ms() < end;)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    key_name(0, key, sizeof key);
    victim_slot =
        lw__key_slot(full, (size_t)snprintf(full, sizeof full, "lock:%s", key));
    CHECK(rh_cluster_kill_master_of(&cl, victim_slot, 30000) != NULL);
    CHECK_MSG(!all_done(), "every section ran before the kill");
    run_until_done(60000);
    printf("failover: %d sections served, %d not (told why), %d reported "
           "lost, %d overlapping\n",
           ok, failed, lost, overlaps);
    CHECK_EQ(overlaps, 0);
    CHECK(ok > 0);

    /* After the failover, every key is served again. */
    ok = failed = 0;
    for (int k = 0; k < NKEYS; k++) {
        req[k].left = 1;
        next(&req[k]);
    }
    run_until_done(30000);
    printf("after: %d of %d served\n", ok, NKEYS);
    CHECK_EQ(ok, NKEYS);

    lw_loop_free(loop);
    for (int k = 0; k < NKEYS; k++)
        event_free(req[k].hold);
    event_base_free(base);
    lw_shutdown();
    rh_cluster_stop(&cl);
    printf("cluster loop: ok\n");
    return 0;
}

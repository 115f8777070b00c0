/* Redis restarted while threads keep locking: calls during the outage fail
 * closed (their bodies do not run), calls after it succeed again, and at no
 * time are two bodies inside together.  The server keeps its data across the
 * restart (AOF, fsync always), as a production Redis with persistence would;
 * a lock held across the restart therefore still excludes others. */
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define THREADS   4
#define BEFORE_MS 1000
#define AFTER_MS  3000

static rh_server srv;
static atomic_int inside, overlaps, stop;
static atomic_llong restarted_at; /* ms; 0 while before the restart */
static long long counter;         /* guarded by the lock only */

struct result {
    int ok, ok_after, failed, lost;
    int codes[16];
};

static void *worker(void *arg)
{
    struct result *r = arg;
    lw_lock_opts o = lock_opts(1000, 500, -1);
    while (!atomic_load(&stop)) {
        lw_guard g;
        int rc = lw_lock(&g, "restart", 7, &o);
        if (rc != LW_OK) {
            r->failed++;
            r->codes[-rc & 15]++;
            sleep_ms(10);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        long long v = counter;
        sleep_ms(2);
        counter = v + 1;
        atomic_fetch_sub(&inside, 1);
        rc = lw_guard_leave(&g);
        if (rc == LW_OK) {
            r->ok++;
            long long at = atomic_load(&restarted_at);
            if (at && now_ms() > at)
                r->ok_after++;
        } else {
            r->lost++;
            r->codes[-rc & 15]++;
        }
    }
    return NULL;
}

int main(void)
{
    rh_opts o;
    rh_opts_init(&o);
    o.aof = 1;
    CHECK_EQ(rh_start(&srv, &o), 0);
    use_url(srv.url, 500, 1000);

    pthread_t t[THREADS];
    struct result res[THREADS];
    memset(res, 0, sizeof res);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, &res[i]), 0);
    sleep_ms(BEFORE_MS);
    int port = srv.port;
    CHECK_EQ(rh_restart(&srv), 0);
    CHECK_EQ(srv.port, port);
    atomic_store(&restarted_at, now_ms());
    sleep_ms(AFTER_MS);
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);

    int ok = 0, ok_after = 0, failed = 0, lost = 0;
    int codes[16] = {0};
    for (int i = 0; i < THREADS; i++) {
        ok += res[i].ok;
        ok_after += res[i].ok_after;
        failed += res[i].failed;
        lost += res[i].lost;
        for (int c = 0; c < 16; c++)
            codes[c] += res[i].codes[c];
    }
    printf("restart: %d ok (%d after the restart), %d failed enters, %d "
           "lost leaves, counter %lld, overlaps %d\n",
           ok, ok_after, failed, lost, counter, atomic_load(&overlaps));
    for (int c = 1; c < 16; c++)
        if (codes[c])
            printf("  %s: %d\n", lw_strerror(-c), codes[c]);
    CHECK_EQ(atomic_load(&overlaps), 0);
    CHECK_EQ(counter, ok + lost); /* every body that ran counted once */
    CHECK(ok_after > 10);
    /* Only failures the outage explains. */
    for (int c = 1; c < 16; c++)
        if (-c != LW_EREDIS && -c != LW_ETIMEOUT && -c != LW_ELOST)
            CHECK_MSG(codes[c] == 0, "unexpected %s", lw_strerror(-c));
    CHECK_EQ(lock_exists(&srv, "restart"), 0);

    lw_shutdown();
    rh_stop(&srv);
    printf("redis_restart: ok\n");
    return 0;
}

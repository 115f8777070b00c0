/*
 * The master SIGKILLed while processes x threads run sections on a few
 * keys (tests/harness/rh_sentinel.h promotes a replica within seconds):
 * - every section ends LW_OK or LW_ELOST: those waiting resume on the
 *   promoted replica within their wait, none fails otherwise;
 * - no two LW_OK sections of a key overlap: an overlap comes with an
 *   LW_ELOST report (replication is asynchronous: the promoted replica may
 *   miss the last writes, which only a report may excuse);
 * - fences rise from one LW_OK section of a key to the next, across the
 *   failover too (minted from the server's clock as well as the counter,
 *   which the promoted replica may have behind);
 * - a lock held across the failover by the watchdog is renewed on the new
 *   master (kept), and one the new master does not have is reported lost
 *   (LW_ELOST, lw_still_held() 0, the lost handler told).  Both are on
 *   every replica before the kill (the harness WAITs for it: replication
 *   is asynchronous, and on a loaded machine a write can still be on its
 *   way when the master dies); the test then deletes the second on the
 *   new master, as a failover that lost it would have;
 * - the log says the failover was noticed, naming the new master;
 * - the old master, back (as a replica, as the sentinels make it), is not
 *   used as master: a new configuration's locks land on the new one, and
 *   the old one has no lockweave connection.
 */
#include <lockweave.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "history.h"
#include "rh_sentinel.h"
#include "util.h"

#define NPROC   3
#define NTHREAD 3
#define NKEYS   3
#define MAXREC  200000
#define WAIT_MS 30000
#define HOLD_MS 15000

/* Shared by every process (MAP_SHARED). */
struct shared {
    atomic_int stop;
    atomic_int failed; /* a call ended with neither LW_OK nor LW_ELOST */
    atomic_int failover_logged;
    atomic_int lost_told; /* lost handler calls for held:gone */
    int held_rc[2], held_still[2];
    atomic_int held_ready;
    char url[256];
    char failover_line[512];
};

static struct shared *sh;
static struct history *hist;
static rh_sentinel sn;

static void on_log(int level, const char *msg, void *ud)
{
    /* 1: a thread is writing the line; 2: written (what readers wait for:
     * the line is shared with the other processes and threads). */
    int none = 0;

    (void)level;
    (void)ud;
    if (strstr(msg, "failover noticed") != NULL &&
        atomic_compare_exchange_strong(&sh->failover_logged, &none, 1)) {
        snprintf(sh->failover_line, sizeof sh->failover_line, "%s", msg);
        atomic_store(&sh->failover_logged, 2);
    }
}

static void on_lost(const char *key, size_t keylen, int reason, void *ud)
{
    (void)reason;
    (void)ud;
    if (keylen == 14 && memcmp(key, "lock:held:gone", 14) == 0)
        atomic_fetch_add(&sh->lost_told, 1);
}

static void *worker(void *arg)
{
    lw_lock_opts o = lock_opts(2000, WAIT_MS, -1);
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + (unsigned)getpid();

    while (!atomic_load(&sh->stop)) {
        struct section r = {.key = (int)(rand_r(&seed) % NKEYS)};
        char key[16];
        int len = snprintf(key, sizeof key, "k:%d", r.key);
        lw_guard g;
        int rc = lw_lock(&g, key, (size_t)len, &o);
        if (rc != LW_OK) {
            fprintf(stderr, "pid %d: lock %s: %s\n", (int)getpid(), key,
                    lw_strerror(rc));
            atomic_fetch_add(&sh->failed, 1);
            continue;
        }
        r.in_us = now_us();
        r.fence = lw_fence();
        usleep(1000);
        r.out_us = now_us();
        r.rc = lw_guard_leave(&g);
        if (r.rc != LW_OK && r.rc != LW_ELOST) {
            fprintf(stderr, "pid %d: leave %s: %s\n", (int)getpid(), key,
                    lw_strerror(r.rc));
            atomic_fetch_add(&sh->failed, 1);
        }
        history_add(hist, &r);
    }
    return NULL;
}

static void configure(void)
{
    lw_config cfg;

    lw_config_init(&cfg);
    cfg.redis_url = sh->url;
    cfg.connect_timeout_ms = 300;
    cfg.command_timeout_ms = 1000;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    lw_set_logger(on_log, NULL, LW_LOG_INFO);
    lw_set_lost_handler(on_lost, NULL);
}

static void run_workers(void)
{
    pthread_t t[NTHREAD];

    configure();
    for (int i = 0; i < NTHREAD; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NTHREAD; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}

/* Hold held:kept and held:gone across the failover, the watchdog renewing
 * them (15 s leases, renewed every 5 s): the first must survive (the
 * renewals go to the new master), the second is deleted there by the
 * test, and must be reported lost. */
static void run_holder(void)
{
    lw_lock_opts o = lock_opts(HOLD_MS, 2000, -1);
    static const char *const keys[] = {"held:kept", "held:gone"};
    lw_guard g[2];

    configure();
    for (int i = 0; i < 2; i++)
        CHECK_RC(lw_lock(&g[i], keys[i], strlen(keys[i]), &o), LW_OK);
    atomic_store(&sh->held_ready, 1);
    while (!atomic_load(&sh->stop))
        usleep(20000);
    for (int i = 1; i >= 0; i--) {
        sh->held_still[i] = lw_still_held();
        sh->held_rc[i] = lw_guard_leave(&g[i]);
    }
}

static pid_t spawn(void (*fn)(void))
{
    pid_t pid = fork();

    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fn();
        lw_shutdown();
        _exit(0);
    }
    return pid;
}

static int holder_ready(void *unused)
{
    (void)unused;
    return atomic_load(&sh->held_ready);
}

/* Connections named by lockweave (CLIENT SETNAME "lockweave:...") on s. */
static int lockweave_clients(rh_server *s)
{
    redisReply *r = rh_cmd(s, "CLIENT LIST");
    int n = 0;

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    for (const char *p = r->str; (p = strstr(p, "name=lockweave:")); p++)
        n++;
    freeReplyObject(r);
    return n;
}

int main(void)
{
    pid_t kids[NPROC + 1];
    rh_server *old, *fresh;
    int64_t kill_us, back_us;
    struct verdict v;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    hist = history_new(MAXREC);
    CHECK_EQ(rh_sentinel_start(&sn, NULL), 0);
    old = rh_sentinel_master_by(&sn, -1);
    CHECK(old != NULL);
    snprintf(sh->url, sizeof sh->url, "%s", sn.url);

    for (int p = 0; p < NPROC; p++)
        kids[p] = spawn(run_workers);
    kids[NPROC] = spawn(run_holder);
    CHECK(wait_until(holder_ready, NULL, 20000) >= 0);
    /* Sections under way on every process before the kill. */
    CHECK_MSG(history_wait(hist, 0, 30, 20000), "no sections before the kill");
    /* Whichever replica is promoted has held:kept and held:gone. */
    CHECK_EQ(rh_sentinel_wait_replicated(old, 20000), 0);

    kill_us = now_us();
    CHECK_EQ(rh_kill(old), 0);
    fresh = rh_sentinel_wait_failover(&sn, old, 30000);
    CHECK(fresh != NULL);
    back_us = now_us();
    printf("master :%d killed; :%d promoted %lld ms later\n", old->port,
           fresh->port, (long long)(back_us - kill_us) / 1000);
    /* The new master has both (replicated before the kill); this one it
     * loses, as a failover that missed the last writes would: its holder
     * must learn it. */
    CHECK_EQ(rh_cmd_int(fresh, "DEL lock:held:gone"), 1);
    /* The watchdog renews the other there: its TTL goes up, at the latest
     * before the lease it had at the kill ends (renewals come every third
     * of it; the rest is room for a slow machine). */
    {
        long long was = lock_pttl(fresh, "held:kept"), now;
        int64_t end = now_ms() + HOLD_MS;
        CHECK_RANGE(was, 1, HOLD_MS);
        while ((now = lock_pttl(fresh, "held:kept")) <= was && now_ms() < end) {
            was = now;
            sleep_ms(50);
        }
        CHECK_MSG(now > was, "held:kept not renewed on the new master");
    }

    /* The old master back: the sentinels make it a replica; sections go
     * on (on the new master) once it is one. */
    CHECK_EQ(rh_start_again(old), 0);
    CHECK_EQ(rh_sentinel_wait_replica(old, 20000), 0);
    CHECK_MSG(history_wait(hist, now_us(), 10, 20000),
              "no sections once the old master was a replica");
    atomic_store(&sh->stop, 1);
    for (int p = 0; p <= NPROC; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: 0x%x", p,
                  st);
    }

    CHECK_EQ(atomic_load(&sh->failed), 0);
    history_judge(hist, kill_us, back_us, &v);
    CHECK_EQ(v.overlaps, 0);
    CHECK_EQ(v.regressions, 0);
    CHECK_MSG(v.after > 0, "no section after the failover");
    CHECK_MSG(atomic_load(&sh->failover_logged) == 2 &&
                  strstr(sh->failover_line, RH_SENTINEL_NAME) != NULL,
              "failover not logged: \"%s\"", sh->failover_line);
    {
        char port[16];
        snprintf(port, sizeof port, ":%d", fresh->port);
        CHECK_MSG(strstr(sh->failover_line, port) != NULL,
                  "the log does not name the new master: \"%s\"",
                  sh->failover_line);
    }
    printf("held across it: kept %s (still held %d), gone %s (still held "
           "%d, lost handler %d)\n",
           lw_strerror(sh->held_rc[0]), sh->held_still[0],
           lw_strerror(sh->held_rc[1]), sh->held_still[1],
           atomic_load(&sh->lost_told));
    CHECK_RC(sh->held_rc[0], LW_OK);
    CHECK_EQ(sh->held_still[0], 1);
    CHECK_RC(sh->held_rc[1], LW_ELOST);
    CHECK_EQ(sh->held_still[1], 0);
    CHECK_EQ(atomic_load(&sh->lost_told), 1);

    /* The old master is a replica now, and not used as master: a fresh
     * configuration (asking the sentinels anew) locks on the new one. */
    {
        lw_guard g;
        configure();
        lw_set_logger(NULL, NULL, LW_LOG_WARN);
        for (int i = 0; i < 20; i++) {
            CHECK_RC(lock_str(&g, "after", 10000, 2000), LW_OK);
            CHECK(lock_exists(fresh, "after"));
            CHECK_RC(lw_guard_leave(&g), LW_OK);
        }
        CHECK(!rh_sentinel_is_master(old));
        CHECK_EQ(lockweave_clients(old), 0);
        CHECK(lockweave_clients(fresh) > 0);
        lw_shutdown();
    }
    rh_sentinel_stop(&sn);
    printf("sentinel_failover: ok\n");
    return 0;
}

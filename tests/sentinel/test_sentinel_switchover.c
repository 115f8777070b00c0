/*
 * A switchover (SENTINEL FAILOVER): the master stays up and is made a
 * replica, so what lockweave meets there is a server that answers, but as
 * a replica (READONLY to a write, ROLE slave to a new connection), not one
 * that is gone.  Sentinel does not stop writes to the old master: from the
 * replica's promotion until the sentinels demote it, a process that has
 * not learnt the switch yet still locks there while others lock on the new
 * master.  Here each of NPROC processes listens to another sentinel (its
 * URL lists them rotated), and the first one's sentinel is stopped
 * (SIGSTOP) through the switch: that process, as one whose announcement
 * is lost, goes on locking on the old master until it is demoted, while
 * the others lock on the new one.  All take their locks with
 * wait_replicas = every replica: a lock the promoted replica has not
 * acknowledged (any taken on the old master after the promotion) is given
 * back, LW_EREPLICAS (docs/operations.md, "Redis Sentinel"); without it,
 * both sides' sections return LW_OK at once:
 * - workers locking throughout carry on with the new master: every call
 *   ends LW_OK or LW_ELOST, or LW_EREPLICAS (body not run) while a master
 *   lacks a replica;
 * - no two LW_OK sections of a key overlap, from any processes, and
 *   fences rise from one to the next across the switch;
 * - the new master is learnt from the sentinels' +switch-master
 *   announcement, not when the old one (still up, and a master until the
 *   sentinels demote it) first refuses a request: the log says so, naming
 *   the new master;
 * - a guard of this thread's, its connection left open on the old master
 *   across the switchover, takes its next lock on the new one.
 */
#include <lockweave.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "history.h"
#include "rh_sentinel.h"
#include "util.h"

#define NPROC   RH_SENTINELS /* one per sentinel listened to */
#define NTHREAD 2
#define NKEYS   2
/* Generous: replicas acknowledge in milliseconds, but not always on a
 * loaded machine. */
#define WAIT_REPLICAS_MS 1000
#define COMMAND_MS       3000

/* Shared by every process (MAP_SHARED). */
struct shared {
    atomic_int stop;
    atomic_int failed;       /* a call ended otherwise than promised */
    atomic_int unreplicated; /* lw_lock() said LW_EREPLICAS */
    char url[NPROC][256];    /* child p's: the sentinels from p on */
};

static struct shared *sh;
static struct history *hist;
static rh_sentinel sn;
/* The first "failover noticed" line, written by whichever thread of the
 * library logs it, read by the main thread. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char failover_line[512];

static void on_log(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    if (strstr(msg, "failover noticed") == NULL)
        return;
    pthread_mutex_lock(&log_mu);
    if (failover_line[0] == '\0')
        snprintf(failover_line, sizeof failover_line, "%s", msg);
    pthread_mutex_unlock(&log_mu);
}

static void configure(const char *url)
{
    lw_config cfg;

    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 300;
    cfg.command_timeout_ms = COMMAND_MS;
    cfg.wait_replicas = RH_SENTINEL_NODES - 1;
    cfg.wait_timeout_ms = WAIT_REPLICAS_MS;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    lw_set_logger(on_log, NULL, LW_LOG_INFO);
}

static void *worker(void *arg)
{
    lw_lock_opts o = lock_opts(3000, 10000, -1);
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + (unsigned)getpid();

    while (!atomic_load(&sh->stop)) {
        struct section r = {.key = (int)(rand_r(&seed) % NKEYS)};
        char key[16];
        int len = snprintf(key, sizeof key, "sw:%d", r.key);
        lw_guard g;
        int rc = lw_lock(&g, key, (size_t)len, &o);
        if (rc == LW_EREPLICAS) {
            atomic_fetch_add(&sh->unreplicated, 1);
            continue;
        }
        if (rc != LW_OK) {
            fprintf(stderr, "pid %d: lock %s: %s\n", (int)getpid(), key,
                    lw_strerror(rc));
            atomic_fetch_add(&sh->failed, 1);
            continue;
        }
        r.in_us = now_us();
        r.fence = lw_fence();
        usleep(500);
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

static void run_workers(int p)
{
    pthread_t t[NTHREAD];

    configure(sh->url[p]);
    for (int i = 0; i < NTHREAD; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NTHREAD; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}

int main(void)
{
    pid_t kids[NPROC];
    rh_server *old, *fresh;
    lw_guard g;
    char port[16];
    int64_t t0_us, after_us;
    struct verdict v;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    hist = history_new(200000);
    CHECK_EQ(rh_sentinel_start(&sn, NULL), 0);
    old = rh_sentinel_master_by(&sn, -1);
    CHECK(old != NULL);
    /* Child p asks, and listens to, sentinel p first. */
    for (int p = 0; p < NPROC; p++) {
        int len = snprintf(sh->url[p], sizeof sh->url[p], "redis+sentinel://");
        for (int i = 0; i < RH_SENTINELS; i++)
            len += snprintf(sh->url[p] + len, sizeof sh->url[p] - (size_t)len,
                            "%s127.0.0.1:%d", i ? "," : "",
                            sn.sentinel[(p + i) % RH_SENTINELS].port);
        snprintf(sh->url[p] + len, sizeof sh->url[p] - (size_t)len,
                 "/" RH_SENTINEL_NAME);
    }

    for (int p = 0; p < NPROC; p++) {
        kids[p] = fork();
        CHECK(kids[p] >= 0);
        if (kids[p] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            run_workers(p);
            lw_shutdown();
            _exit(0);
        }
    }

    /* This thread's connection, opened on the old master and left idle;
     * listening to sentinel 1, which announces the switch. */
    configure(sh->url[1]);
    CHECK_RC(lock_str(&g, "mine", 10000, 1000), LW_OK);
    CHECK(lock_exists(old, "mine"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    CHECK_MSG(history_wait(hist, 0, 30, 20000),
              "no sections before the switchover");
    /* Child 0 hears no +switch-master: its sentinel is stopped. */
    CHECK_EQ(rh_pause(&sn.sentinel[0]), 0);
    t0_us = now_us();
    /* The others switch; child 0 stays on the old master until the
     * sentinels demote it (and it answers READONLY). */
    CHECK_EQ(rh_sentinel_switchover(&sn, 1, old, 20000), 0);
    CHECK_EQ(rh_resume(&sn.sentinel[0]), 0);
    fresh = rh_sentinel_wait_failover(&sn, old, 20000);
    CHECK(fresh != NULL);
    after_us = now_us();
    CHECK_MSG(history_wait(hist, after_us, 20, 20000),
              "no sections once the old master was a replica");
    atomic_store(&sh->stop, 1);
    for (int p = 0; p < NPROC; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: 0x%x", p,
                  st);
    }
    printf("switchover :%d -> :%d; %d locks not acknowledged by every "
           "replica (LW_EREPLICAS)\n",
           old->port, fresh->port, atomic_load(&sh->unreplicated));
    CHECK_EQ(atomic_load(&sh->failed), 0);
    history_judge(hist, t0_us, after_us, &v);
    CHECK_EQ(v.overlaps, 0);
    CHECK_EQ(v.regressions, 0);
    CHECK_MSG(v.after > 0, "no section once the old master was a replica");
    snprintf(port, sizeof port, ":%d", fresh->port);
    pthread_mutex_lock(&log_mu);
    CHECK_MSG(strstr(failover_line, port) != NULL &&
                  strstr(failover_line, "+switch-master") != NULL,
              "the failover not learnt from +switch-master: \"%s\"",
              failover_line);
    pthread_mutex_unlock(&log_mu);

    CHECK_RC(lock_str(&g, "mine", 10000, 1000), LW_OK);
    CHECK(lock_exists(fresh, "mine"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    lw_shutdown();
    rh_sentinel_stop(&sn);
    printf("sentinel_switchover: ok\n");
    return 0;
}

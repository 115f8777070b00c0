/*
 * 2. Wake-up latency: from the holder's call of lw_guard_leave() to the
 * return of the waiting lw_guard_enter() (lw_lock) in another thread, then in
 * another process.  CLOCK_MONOTONIC is one clock for the whole machine, so
 * both ends can stamp their side and the holder subtracts.
 *
 * Each sample: the holder takes the lock, lets the waiter start waiting,
 * holds long enough that the waiter is asleep on its wake-up (not in its
 * first round trip), stamps and leaves; the waiter stamps when its enter
 * returns.  The waiter's "contended" counter proves every sample really
 * waited.
 */
#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mb.h"

#define HOLD_US 3000 /* ~100 round trips: the waiter is surely asleep */
#define WARMUP  20

static const char key[] = "mb:wake:stock:42";

/* In MAP_SHARED memory, so the same code serves a thread and a process. */
struct shared {
    pthread_barrier_t go, done;
    uint64_t t_leave, t_return; /* holder's stamp, waiter's stamp */
    uint64_t contended;         /* waiter's lw_stats.contended at the end */
    int failures;
};

static struct shared *sh;
static int rounds;

static void *waiter(void *arg)
{
    const lw_lock_opts o = {
        .expire_ms = 10000u, .wait_ms = 5000u, .max_renew = -1};
    lw_stats st;

    (void)arg;
    for (int i = 0; i < rounds; i++) {
        lw_guard g;
        pthread_barrier_wait(&sh->go);
        int rc = lw_lock(&g, key, sizeof key - 1, &o);
        sh->t_return = mb_now_ns();
        if (rc == LW_OK)
            lw_guard_leave(&g);
        else
            sh->failures++;
        pthread_barrier_wait(&sh->done);
    }
    lw_stats_get(&st);
    sh->contended = st.contended;
    return NULL;
}

/* The holder side; fills lat[] (ns) and leave[] (how long the holder's own
 * lw_guard_leave took: the release round trip is part of the latency). */
static void holder(uint64_t *lat, uint64_t *leave)
{
    const lw_lock_opts o = {
        .expire_ms = 10000u, .wait_ms = 0u, .max_renew = -1};
    const struct timespec hold = {0, HOLD_US * 1000L};

    for (int i = 0; i < rounds; i++) {
        lw_guard g;
        if (lw_lock(&g, key, sizeof key - 1, &o) != LW_OK)
            mb_die("holder could not take the free lock");
        pthread_barrier_wait(&sh->go);
        nanosleep(&hold, NULL);
        sh->t_leave = mb_now_ns();
        lw_guard_leave(&g);
        uint64_t t_left = mb_now_ns();
        pthread_barrier_wait(&sh->done);
        if (i >= WARMUP) {
            lat[i - WARMUP] = sh->t_return - sh->t_leave;
            leave[i - WARMUP] = t_left - sh->t_leave;
        }
    }
}

static void report(const char *where, uint64_t *lat, uint64_t *leave, int n,
                   uint64_t contended_before)
{
    char metric[64], note[256];
    uint64_t p50 = mb_percentile(lat, (size_t)n, 50);
    uint64_t p99 = mb_percentile(lat, (size_t)n, 99);
    uint64_t max = mb_percentile(lat, (size_t)n, 100);
    uint64_t l50 = mb_percentile(leave, (size_t)n, 50);

    snprintf(note, sizeof note,
             "%d samples; max %.1f us; holder's own leave (release round "
             "trip) p50 %.1f us; waits that found the lock busy: %llu of %d; "
             "failures %d",
             n, max / 1e3, l50 / 1e3,
             (unsigned long long)(sh->contended - contended_before), rounds,
             sh->failures);
    snprintf(metric, sizeof metric, "%s_p50", where);
    mb_emit("wake", metric, p50 / 1e3, "us", NULL, -1, note);
    snprintf(metric, sizeof metric, "%s_p99", where);
    mb_emit("wake", metric, p99 / 1e3, "us", NULL, -1, "");
}

static void setup_shared(void)
{
    pthread_barrierattr_t a;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        mb_die("mmap");
    memset(sh, 0, sizeof *sh);
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->go, &a, 2);
    pthread_barrier_init(&sh->done, &a, 2);
    pthread_barrierattr_destroy(&a);
}

int main(int argc, char **argv)
{
    int samples = mb_quick(argc, argv) ? 300 : 1500;
    uint64_t *lat = malloc(sizeof *lat * (size_t)samples);
    uint64_t *leave = malloc(sizeof *leave * (size_t)samples);
    pthread_t th;
    pid_t pid;
    int status;

    if (lat == NULL || leave == NULL)
        mb_die("out of memory");
    rounds = samples + WARMUP;
    setup_shared();

    /* Another process first, while this one has touched no lockweave state:
     * the child starts from a clean runtime, as a separate service would. */
    pid = fork();
    if (pid < 0)
        mb_die("fork");
    if (pid == 0) {
        waiter(NULL);
        lw_shutdown();
        _exit(sh->failures != 0);
    }
    holder(lat, leave);
    waitpid(pid, &status, 0);
    report("process", lat, leave, samples, 0);

    lw_stats st;
    lw_stats_get(&st); /* the thread's waits count in this process's stats */
    uint64_t contended_before = st.contended;
    sh->failures = 0;
    if (pthread_create(&th, NULL, waiter, NULL) != 0)
        mb_die("pthread_create");
    holder(lat, leave);
    pthread_join(th, NULL);
    report("thread", lat, leave, samples, contended_before);
    lw_shutdown();
    return sh->failures != 0 || !WIFEXITED(status) || WEXITSTATUS(status);
}

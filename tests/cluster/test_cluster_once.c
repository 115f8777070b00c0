/* Run once on a 3-master cluster, keys spread over every master: processes
 * x threads all call the same keys at once, each key's body counting its
 * runs in shared memory.  Each key's body must run exactly once, its run's
 * caller alone get LW_OK, and every other caller LW_EDONE with the run's
 * result; the done marks stay on their masters for the window. */
#include <lockweave.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rh_cluster.h"
#include "topology/slot.h"

#define PROCS   3
#define THREADS 4
#define NKEYS   12

struct shared {
    atomic_int go;          /* every caller starts together */
    atomic_int ready;       /* threads waiting for go */
    atomic_int runs[NKEYS]; /* body runs per key */
    atomic_int ok[NKEYS];   /* LW_OK callers per key */
    atomic_int done[NKEYS]; /* LW_EDONE callers with the right result */
    atomic_int failures;    /* anything else */
};

static struct shared *sh;
static rh_cluster cl;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
    int id = (int)(uintptr_t)arg;
    /* Generous: a slow, loaded machine must not fail the test. */
    lw_lock_opts o = {.expire_ms = 20000,
                      .wait_ms = 60000,
                      .max_renew = -1,
                      .once_window_ms = 120000};

    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go))
        sched_yield();
    for (int n = 0; n < NKEYS; n++) {
        int k = (n + id) % NKEYS; /* each thread starts at another key */
        char key[32];
        lw_guard g;
        int64_t v = -1;
        int rc;

        snprintf(key, sizeof key, "order:%d", k);
        lw_guard_init(&g, &o);
        lw_guard_key_str(&g, key);
        rc = lw_guard_enter(&g);
        if (rc == LW_OK) {
            atomic_fetch_add(&sh->runs[k], 1);
            sleep_ms(20); /* the others come while it runs */
            lw_once_done_i64(&g, 1000 + k);
            rc = lw_guard_leave(&g);
            if (rc == LW_OK)
                atomic_fetch_add(&sh->ok[k], 1);
        } else if (rc == LW_EDONE && lw_once_outcome_i64(&g, &v) == LW_OK &&
                   v == 1000 + k) {
            atomic_fetch_add(&sh->done[k], 1);
            rc = LW_OK;
        }
        lw_guard_cleanup(&g);
        if (rc != LW_OK) {
            fprintf(stderr, "once %s: %s (result %lld)\n", key, lw_strerror(rc),
                    (long long)v);
            atomic_fetch_add(&sh->failures, 1);
        }
    }
    return NULL;
}

static void run_process(int p)
{
    pthread_t t[THREADS];

    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker,
                                (void *)(uintptr_t)(p * THREADS + i)),
                 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}

int main(void)
{
    pid_t kids[PROCS - 1];
    rh_server *owners[3] = {0};
    int nowners = 0;

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    /* The keys really are spread: every master serves some. */
    for (int k = 0; k < NKEYS; k++) {
        char key[40];
        int len = snprintf(key, sizeof key, "lock:order:%d", k), j;
        rh_server *m =
            rh_cluster_master_of(&cl, lw__key_slot(key, (size_t)len));
        CHECK(m != NULL);
        for (j = 0; j < nowners && owners[j] != m; j++)
            ;
        if (j == nowners)
            owners[nowners++] = m;
    }
    CHECK_EQ(nowners, 3);
    setenv("LOCKWEAVE_REDIS_URL", cl.url, 1);

    for (int p = 0; p < PROCS - 1; p++) {
        kids[p] = fork();
        CHECK(kids[p] >= 0);
        if (kids[p] == 0) {
            run_process(p + 1);
            lw_shutdown();
            _exit(0);
        }
    }
    /* The children's threads are up (or soon): go together. */
    for (int i = 0; i < 6000 && atomic_load(&sh->ready) < THREADS * (PROCS - 1);
         i++)
        sleep_ms(10);
    atomic_store(&sh->go, 1);
    run_process(0);
    for (int p = 0; p < PROCS - 1; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (0x%x)",
                  st);
    }
    for (int k = 0; k < NKEYS; k++) {
        char key[40];
        int len = snprintf(key, sizeof key, "lock:order:%d", k);
        const char *argv[] = {"GET", key};
        size_t lens[] = {3, (size_t)len};
        char want[32];
        redisReply *r;

        printf("order:%d: body ran %d times, %d LW_OK, %d LW_EDONE\n", k,
               atomic_load(&sh->runs[k]), atomic_load(&sh->ok[k]),
               atomic_load(&sh->done[k]));
        CHECK_EQ(atomic_load(&sh->runs[k]), 1);
        CHECK_EQ(atomic_load(&sh->ok[k]), 1);
        CHECK_EQ(atomic_load(&sh->done[k]), PROCS * THREADS - 1);
        /* The done mark, on the key's own master. */
        r = rh_cluster_cmd_argv(&cl, lw__key_slot(key, (size_t)len), 2, argv,
                                lens);
        snprintf(want, sizeof want, "done:i:%d ", 1000 + k);
        CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
        CHECK_MSG(strncmp(r->str, want, strlen(want)) == 0, "%s holds %s", key,
                  r->str);
        freeReplyObject(r);
    }
    CHECK_EQ(atomic_load(&sh->failures), 0);
    printf("cluster once: %d processes x %d threads over %d keys on 3 "
           "masters: each body ran once, every other caller got its result\n",
           PROCS, THREADS, NKEYS);
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}

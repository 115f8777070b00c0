/* A process that ends with exit() while other threads of it still talk to
 * Redis through lockweave must end cleanly, not crash: exit handlers run
 * while those threads go on, and over TLS OpenSSL's own cleanup handler
 * would free what their SSL_read() is using (runtime_tls_exit; runtime_exit
 * over TCP).  Each of RUNS children starts THREADS threads that each take a
 * lock on a connection of their own (a handshake, then the first read),
 * and calls exit(0) a different while after they start: every child must
 * exit with status 0. */
#include "util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNS    200
#define THREADS 8

static rh_server srv;
static pthread_barrier_t started;

static void *take(void *arg)
{
    lw_lock_opts o = lock_opts(10000, 0, -1);
    char key[32];
    lw_lease *l;

    snprintf(key, sizeof key, "exit:%ld", (long)(intptr_t)arg);
    pthread_barrier_wait(&started);
    if (lw_acquire(key, strlen(key), &o, &l) != LW_OK)
        _exit(3);
    return NULL; /* the lease stays: the process ends holding it */
}

static void child(int run)
{
    pthread_attr_t a;
    pthread_t t;

    use_server(&srv);
    pthread_barrier_init(&started, NULL, THREADS + 1);
    /* Detached: nobody joins them, the process ends under them. */
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t, &a, take,
                           (void *)(intptr_t)(run * THREADS + i)) != 0)
            _exit(4);
    pthread_barrier_wait(&started);
    /* Spread the exits over a connection's set-up and first reply. */
    usleep((useconds_t)((run * 331) % 4000));
    exit(0);
}

int main(void)
{
    int crashed = 0, failed = 0;

    CHECK_EQ(rh_start(&srv, NULL), 0);
    for (int run = 0; run < RUNS; run++) {
        pid_t pid;
        int st;
        fflush(stdout);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            child(run);
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        if (WIFSIGNALED(st)) {
            crashed++;
            printf("run %d: killed by signal %d\n", run, WTERMSIG(st));
        } else if (WEXITSTATUS(st) != 0) {
            failed++;
            printf("run %d: exit status %d\n", run, WEXITSTATUS(st));
        }
    }
    printf("%d exits while %d threads take locks: %d crashed, %d failed\n",
           RUNS, THREADS, crashed, failed);
    CHECK_EQ(crashed, 0);
    CHECK_EQ(failed, 0);
    CHECK_EQ(rh_stop(&srv), 0);
    printf("exit: ok\n");
    return 0;
}

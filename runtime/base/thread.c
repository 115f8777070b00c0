/* Per-thread state.  The TLS block is plain data; one pthread key, set once
 * a thread keeps a resource, runs their free functions at thread exit. */
#include "base/thread.h"

#include <lockweave.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/fork.h"

static _Thread_local struct lw_thread tls;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* What each thread keeps, also listed from a global on the heap: a forked
 * child has only the forking thread, and what the parent's other threads
 * kept stays reachable there, not lost with their thread-local storage.
 * The child frees none of it: another thread may have been changing it at
 * the fork. */
struct kept {
    struct kept *next, **pprev;
    void *res[LW_RES_COUNT];
};
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kept *kept_all;
static _Thread_local struct kept *kept_mine;

static void kept_set(int which, void *p)
{
    pthread_mutex_lock(&kept_mu);
    if (kept_mine == NULL && (kept_mine = calloc(1, sizeof *kept_mine))) {
        kept_mine->next = kept_all;
        kept_mine->pprev = &kept_all;
        if (kept_all != NULL)
            kept_all->pprev = &kept_mine->next;
        kept_all = kept_mine;
    }
    if (kept_mine != NULL) /* out of memory: only the listing is missing */
        kept_mine->res[which] = p;
    pthread_mutex_unlock(&kept_mu);
}

static void kept_drop(void)
{
    pthread_mutex_lock(&kept_mu);
    if (kept_mine != NULL) {
        *kept_mine->pprev = kept_mine->next;
        if (kept_mine->next != NULL)
            kept_mine->next->pprev = kept_mine->pprev;
        free(kept_mine);
        kept_mine = NULL;
    }
    pthread_mutex_unlock(&kept_mu);
}

/* Thread exit: p is the thread's own struct lw_thread (TLS lives until the
 * key destructors have run). */
static void thread_exit(void *p)
{
    struct lw_thread *t = p;

    kept_drop();
    for (int i = 0; i < LW_RES_COUNT; i++) {
        void *r = t->res[i];
        t->res[i] = NULL;
        if (r != NULL && t->res_free[i] != NULL)
            t->res_free[i](r);
    }
}

static void exit_key_init(void)
{
    pthread_key_create(&exit_key, thread_exit);
    lw__fork_register_mutex(&kept_mu);
}

struct lw_thread *lw__thread(void)
{
    return &tls;
}

int lw__thread_token_base(struct lw_thread *t)
{
    size_t got = 0;

    if (t->token_gen == lw__fork_gen)
        return LW_OK;
    while (got < sizeof t->token_base) {
        ssize_t n =
            getrandom(t->token_base + got, sizeof t->token_base - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return LW_ESYSTEM;
        got += (size_t)n;
    }
    t->token_gen = lw__fork_gen;
    return LW_OK;
}

void lw__thread_keep(int which, void *p, void (*free_fn)(void *))
{
    pthread_once(&exit_key_once, exit_key_init);
    tls.res[which] = p;
    tls.res_free[which] = free_fn;
    kept_set(which, p);
    pthread_setspecific(exit_key, &tls);
}

uint32_t lw__jitter(uint32_t n)
{
    uint64_t x = tls.rng;

    if (n == 0)
        return 0;
    if (x == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^
            (uint64_t)(uintptr_t)&tls;
        x |= 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    tls.rng = x;
    return (uint32_t)(x % n);
}

int lw_last_error(void)
{
    return tls.last_error;
}

void lw_set_last_error(int code)
{
    tls.last_error = code;
}

int lw__thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

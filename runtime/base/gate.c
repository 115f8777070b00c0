/*
 * The runtime's gate (gate.h).  Entering and leaving cost two atomic
 * operations, no mutex: a call counts itself in, then looks at `closing`;
 * the closer sets `closing`, then looks at the count.  With both sequentially
 * consistent, at least one of the two sees the other, so no call slips in
 * unseen.  The mutex orders closing against every check a call makes before
 * it blocks (watching a socket, sleeping), so a wait that starts while
 * lw_shutdown() runs is cut short as surely as one that started before it.
 */
#include "base/gate.h"

#include <errno.h>
#include <lockweave.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "base/fork.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed; /* CLOCK_MONOTONIC: see init() */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int closing, inside; /* atomics */
static struct lw_gate_watch *watched;
static void (*hooks_on_close[LW_GATE_HOOKS_MAX])(void);
static int nhooks; /* written under mu, read by the closer */

/* The child has only the forking thread: calls the parent's other threads
 * were making are not inside the child's runtime. */
static void child(void)
{
    __atomic_store_n(&inside, 0, __ATOMIC_SEQ_CST);
    watched = NULL;
}

static const struct lw_fork_hooks fork_hooks = {NULL, NULL, child};

static void init(void)
{
    pthread_condattr_t a;

    pthread_condattr_init(&a);
    /* Sleeps count on the monotonic clock: a wall-clock step must not
     * stretch a waiter's pause. */
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&changed, &a);
    pthread_condattr_destroy(&a);
    lw__fork_register(&fork_hooks);
    lw__fork_register_mutex(&mu);
}

static void lock(void)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&mu);
}

int lw__gate_closing(void)
{
    return __atomic_load_n(&closing, __ATOMIC_SEQ_CST);
}

void lw__gate_pass(void)
{
    __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
}

void lw__gate_exit(void)
{
    /* The last one out while closing wakes the closer, under the mutex:
     * the closer checks the count under it too, so it is either waiting
     * already or sees the count at zero. */
    if (__atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST) == 0 &&
        lw__gate_closing()) {
        lock();
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&mu);
    }
}

int lw__gate_enter(void)
{
    lw__gate_pass();
    if (!lw__gate_closing())
        return LW_OK;
    lw__gate_exit();
    return LW_ESHUTDOWN;
}

void lw__gate_on_close(void (*fn)(void))
{
    int i;

    lock();
    for (i = 0; i < nhooks && hooks_on_close[i] != fn; i++)
        ;
    if (i == nhooks && nhooks < LW_GATE_HOOKS_MAX)
        hooks_on_close[nhooks++] = fn;
    pthread_mutex_unlock(&mu);
}

void lw__gate_close(void)
{
    int n;

    lock();
    __atomic_store_n(&closing, 1, __ATOMIC_SEQ_CST);
    for (struct lw_gate_watch *w = watched; w != NULL; w = w->next)
        if (!w->shut && shutdown(w->fd, SHUT_RDWR) == 0)
            w->shut = 1;
    pthread_cond_broadcast(&changed);
    n = nhooks;
    pthread_mutex_unlock(&mu);
    /* Outside mu: a hook takes its own module's mutex, under which its
     * waiters look at `closing` (already set) before they block. */
    for (int i = 0; i < n; i++)
        hooks_on_close[i]();
    lock();
    while (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) > 0)
        pthread_cond_wait(&changed, &mu);
    pthread_mutex_unlock(&mu);
}

void lw__gate_open(void)
{
    __atomic_store_n(&closing, 0, __ATOMIC_SEQ_CST);
}

int lw__gate_sleep_us(int64_t us)
{
    struct timespec until;
    int cut;

    if (us <= 0)
        return lw__gate_closing();
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(us / 1000000);
    until.tv_nsec += (long)(us % 1000000) * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    lock();
    while (!lw__gate_closing() &&
           pthread_cond_timedwait(&changed, &mu, &until) != ETIMEDOUT)
        ;
    cut = lw__gate_closing();
    pthread_mutex_unlock(&mu);
    return cut;
}

void lw__gate_watch(struct lw_gate_watch *w, int fd)
{
    lock();
    w->fd = fd;
    /* Closed already: the read must not block either. */
    w->shut = lw__gate_closing() && shutdown(fd, SHUT_RDWR) == 0;
    w->next = watched;
    w->pprev = &watched;
    if (watched != NULL)
        watched->pprev = &w->next;
    watched = w;
    pthread_mutex_unlock(&mu);
}

int lw__gate_unwatch(struct lw_gate_watch *w)
{
    int shut;

    lock();
    *w->pprev = w->next;
    if (w->next != NULL)
        w->next->pprev = w->pprev;
    shut = w->shut;
    pthread_mutex_unlock(&mu);
    return shut;
}

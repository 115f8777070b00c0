/*
 * fork() safety.  The child gets a copy of the parent's memory but only the
 * forking thread: the watchdog thread is gone, and every lock the parent
 * holds is the parent's.  Bumping lw__fork_gen makes the child drop
 * inherited connections unused (their sockets are the parent's streams) and
 * treat inherited guards as not held (lw_still_held() == 0, leaving them
 * releases nothing).  Modules that keep mutexes or threads register hooks
 * here, so the library has one pthread_atfork() and one order to run them
 * in.
 */
#include "base/fork.h"

#include <pthread.h>

#define HOOKS_MAX 8

unsigned lw__fork_gen = 1;

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t register_mu = PTHREAD_MUTEX_INITIALIZER;
static const struct lw_fork_hooks *hooks[HOOKS_MAX];
static int nhooks; /* published with release: hooks[0..n) are complete */

static int count(void)
{
    return __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);
}

static void prepare(void)
{
    for (int i = count() - 1; i >= 0; i--)
        if (hooks[i]->prepare)
            hooks[i]->prepare();
}

static void parent(void)
{
    for (int i = 0, n = count(); i < n; i++)
        if (hooks[i]->parent)
            hooks[i]->parent();
}

static void child(void)
{
    lw__fork_gen++;
    for (int i = 0, n = count(); i < n; i++)
        if (hooks[i]->child)
            hooks[i]->child();
}

static void install(void)
{
    pthread_atfork(prepare, parent, child);
}

void lw__fork_init(void)
{
    pthread_once(&fork_once, install);
}

void lw__fork_register(const struct lw_fork_hooks *h)
{
    lw__fork_init();
    pthread_mutex_lock(&register_mu);
    int n = nhooks, seen = 0;
    for (int i = 0; i < n; i++)
        seen |= hooks[i] == h;
    /* A fixed number of modules register: more is a bug, found in tests. */
    if (!seen && n < HOOKS_MAX) {
        hooks[n] = h;
        __atomic_store_n(&nhooks, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&register_mu);
}

/*
 * fork() safety.  The child gets a copy of the parent's memory but only the
 * forking thread: the watchdog thread is gone, and every lock the parent
 * holds is the parent's.  Bumping lw__fork_gen makes the child drop
 * inherited connections unused (their sockets are the parent's streams) and
 * treat inherited guards as not held (lw_still_held() == 0, leaving them
 * releases nothing).  Modules that keep mutexes or threads register hooks
 * here (a module with one leaf mutex registers just the mutex), so the
 * library has one pthread_atfork() and one order to run them in.
 */
#include "base/fork.h"

#include <pthread.h>

#define HOOKS_MAX   8
#define MUTEXES_MAX 4

unsigned lw__fork_gen = 1;

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t register_mu = PTHREAD_MUTEX_INITIALIZER;
/* Registered hooks (struct lw_fork_hooks) and mutexes; each count is
 * published with release: entries [0..n) are complete. */
static const void *hooks[HOOKS_MAX], *mutexes[MUTEXES_MAX];
static int nhooks, nmutexes;
/* How many hooks prepare() ran and mutexes it took: the parent undoes
 * exactly those, and the child runs exactly those hooks.  A module may
 * register while another thread forks (its first lock lost, say): read
 * again after the fork, the counts would run a hook's parent or child
 * without its prepare, or unlock in the parent a mutex that nobody took
 * or that another thread holds.  Per thread: pthread_atfork() runs all
 * three in the forking thread (the child in its copy of it), and two
 * threads may fork at once. */
static _Thread_local int fork_hooks, fork_mutexes;

static int count(const int *n)
{
    return __atomic_load_n(n, __ATOMIC_ACQUIRE);
}

static const struct lw_fork_hooks *hook(int i)
{
    return hooks[i];
}

/* Registered as a non-const pointer: casting back is sound. */
static pthread_mutex_t *mutex(int i)
{
    return (pthread_mutex_t *)mutexes[i];
}

static void unlock_mutexes(int n)
{
    for (int i = 0; i < n; i++)
        pthread_mutex_unlock(mutex(i));
}

/* Leaf mutexes last: a hook's lock may be held by a thread that is about
 * to take one of them, never the reverse. */
static void prepare(void)
{
    fork_hooks = count(&nhooks);
    for (int i = fork_hooks - 1; i >= 0; i--)
        if (hook(i)->prepare)
            hook(i)->prepare();
    fork_mutexes = count(&nmutexes);
    for (int i = fork_mutexes - 1; i >= 0; i--)
        pthread_mutex_lock(mutex(i));
}

static void parent(void)
{
    unlock_mutexes(fork_mutexes);
    for (int i = 0; i < fork_hooks; i++)
        if (hook(i)->parent)
            hook(i)->parent();
}

/* Every mutex registered by now is unlocked, also one a thread registered
 * (and may have taken) during the fork: that thread is not in the child,
 * and nothing it held may stay held there. */
static void child(void)
{
    lw__fork_gen++;
    unlock_mutexes(count(&nmutexes));
    for (int i = 0; i < fork_hooks; i++)
        if (hook(i)->child)
            hook(i)->child();
}

static void install(void)
{
    pthread_atfork(prepare, parent, child);
}

void lw__fork_init(void)
{
    pthread_once(&fork_once, install);
}

/* Append p to list (*n entries, max at most) unless it is there.  A fixed
 * number of modules register: more is a bug, found in tests. */
static void add_once(const void **list, int *n, int max, const void *p)
{
    lw__fork_init();
    pthread_mutex_lock(&register_mu);
    int k = *n, seen = 0;
    for (int i = 0; i < k; i++)
        seen |= list[i] == p;
    if (!seen && k < max) {
        list[k] = p;
        __atomic_store_n(n, k + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&register_mu);
}

void lw__fork_register(const struct lw_fork_hooks *h)
{
    add_once(hooks, &nhooks, HOOKS_MAX, h);
}

void lw__fork_register_mutex(pthread_mutex_t *mu)
{
    add_once(mutexes, &nmutexes, MUTEXES_MAX, mu);
}

/*
 * fork() safety.  The child gets a copy of the parent's memory but only the
 * forking thread: the watchdog thread is gone, and every lock the parent
 * holds is the parent's.  Bumping lw__fork_gen makes the
 * child drop inherited connections unused (their sockets are the parent's
 * streams) and treat inherited guards as not held (lw_still_held() == 0,
 * leaving them releases nothing).
 */
#include "base/fork.h"

#include <pthread.h>

#include "core/watchdog.h"

unsigned lw__fork_gen = 1;

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Hold our mutexes across fork() so the child's copies are consistent. */
static void prepare(void)
{
    lw__watchdog_atfork_prepare();
}

static void parent(void)
{
    lw__watchdog_atfork_parent();
}

static void child(void)
{
    lw__fork_gen++;
    lw__watchdog_atfork_child();
}

static void install(void)
{
    pthread_atfork(prepare, parent, child);
}

void lw__fork_init(void)
{
    pthread_once(&fork_once, install);
}

#ifndef LW_FORK_H
#define LW_FORK_H

#include <pthread.h>

/* Bumped in every child after fork(): per-thread state stamped with an older
 * value (connection, token base) belongs to the parent and is dropped.
 * Comparing a counter avoids a getpid() system call on every lock. */
extern unsigned lw__fork_gen;

/* What a module does around fork(): prepare runs in the parent before it
 * (take the module's mutexes, so the child's copies are consistent), then
 * parent or child after it.  Any of the three may be NULL. */
struct lw_fork_hooks {
    void (*prepare)(void);
    void (*parent)(void);
    void (*child)(void);
};

/* Install the one pthread_atfork() of the library (idempotent). */
void lw__fork_init(void);

/* Run h around every later fork(): prepare hooks in the reverse order of
 * registration, parent and child hooks in that order, as pthread_atfork()
 * does.  h must live as long as the process; registering it again does
 * nothing.  Thread-safe. */
void lw__fork_register(const struct lw_fork_hooks *h);

/* Hold mu across every later fork() (taken after every prepare hook,
 * released before the parent and child hooks), so that neither process
 * inherits it held by a thread the child does not have.  mu must be a
 * leaf (no other lock taken while it is held) and live as long as the
 * process; registering it again does nothing.  Thread-safe. */
void lw__fork_register_mutex(pthread_mutex_t *mu);

#endif

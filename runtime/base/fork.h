#ifndef LW_FORK_H
#define LW_FORK_H

/* Bumped in every child after fork(): per-thread state stamped with an older
 * value (connection, token base) belongs to the parent and is dropped.
 * Comparing a counter avoids a getpid() system call on every lock. */
extern unsigned lw__fork_gen;

/* Install the pthread_atfork handlers (idempotent). */
void lw__fork_init(void);

#endif

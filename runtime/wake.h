#ifndef LW_WAKE_H
#define LW_WAKE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Wake-on-release.  A thread waiting for a busy lock joins the waiters of its
 * channel; the process's subscriber thread listens on that channel and, for
 * each release published there, wakes the longest-waiting thread of this
 * process.  Waiters live on their own stacks.
 */
struct lw_waiter {
    const char *chan;
    size_t chanlen;
    pthread_cond_t cond;
    int woken; /* a release (or a fresh subscription) was seen */
    struct lw_waiter *next;
    struct lw_wchan *entry;
};

/* Join chan's waiters; the subscription is set up in the background.
 * Returns 1 when notifications can be expected (subscriber healthy). */
int lw__wake_join(struct lw_waiter *w, const char *chan, size_t chanlen);

/* Sleep until woken or timeout_us passes; returns 1 if woken. */
int lw__wake_wait(struct lw_waiter *w, int64_t timeout_us);

void lw__wake_leave(struct lw_waiter *w);

void lw__wake_stop(void);
void lw__wake_atfork_prepare(void);
void lw__wake_atfork_parent(void);
void lw__wake_atfork_child(void);

#endif

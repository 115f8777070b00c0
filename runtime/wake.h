#ifndef LW_WAKE_H
#define LW_WAKE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Wake-on-release.  A thread waiting for a busy lock joins the waiters of its
 * channel; the process's subscriber thread listens on that channel.  A
 * release names the one waiter (by token) it wakes or hands the lock to, so
 * only that thread, in one process, wakes.  Waiters live on their own stacks.
 */
#define LW_WAKE_ENTRY_MAX 32

struct lw_waiter {
    const char *token; /* the waiter's lock token, as queued in Redis */
    size_t toklen;
    pthread_cond_t cond;
    int woken;        /* told to retry, or a fresh subscription was seen */
    uint64_t granted; /* fence of a lock handed to us, 0 if none */
    char grant_entry[LW_WAKE_ENTRY_MAX]; /* queue entry (score) handed it */
    struct lw_waiter *next;
    struct lw_wchan *entry;
};

#define LW_WAKE_TAG_LEN 16

/* This process's wake-up tag (LW_WAKE_TAG_LEN hex characters and a NUL into
 * out), drawn once per process: waiters queue under it and subscribe to
 * "<channel>:<tag>", and a release publishes to its head's tag only, so one
 * process wakes per hand-off, not every process waiting on the key. */
void lw__wake_tag(char *out);

/* Join chan's waiters as the holder of w->token (set by the caller); the
 * subscription is set up in the background.  Returns 1 when notifications
 * can be expected (subscriber healthy). */
int lw__wake_join(struct lw_waiter *w, const char *chan, size_t chanlen);

/* Sleep until woken or timeout_us passes.  Returns the fence of a lock handed
 * to this waiter, with the queue entry it was handed to copied to entry
 * (LW_WAKE_ENTRY_MAX bytes, NUL-terminated), or 0 (woken to retry, or timed
 * out). */
uint64_t lw__wake_wait(struct lw_waiter *w, int64_t timeout_us, char *entry);

void lw__wake_leave(struct lw_waiter *w);

void lw__wake_stop(void);
void lw__wake_atfork_prepare(void);
void lw__wake_atfork_parent(void);
void lw__wake_atfork_child(void);

#endif

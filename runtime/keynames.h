#ifndef LW_KEYNAMES_H
#define LW_KEYNAMES_H

#include <stddef.h>

#define LW_NAMES_INLINE 640

/*
 * The Redis names that go with one lock key K: its fence counter, wake-up
 * channel, waiter queue, and the prefix of its waiters' alive keys.  All sit
 * in K's Redis Cluster slot (layout in keynames.c), so one script may touch
 * them all, and none can be the lock key of another user key.
 * Not NUL-terminated: use the lengths.
 */
struct lw_names {
    const char *fence, *chan, *queue, *alive;
    size_t fencelen, chanlen, queuelen, alivelen;
    char *heap; /* set when the inline buffer was too small */
    char buf[LW_NAMES_INLINE];
};

/* Fill n for key; LW_OK or LW_ENOMEM.  Free with lw__names_free(). */
int lw__names_init(struct lw_names *n, const char *key, size_t len);
void lw__names_free(struct lw_names *n);

#endif

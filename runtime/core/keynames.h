#ifndef LW_KEYNAMES_H
#define LW_KEYNAMES_H

#include <lockweave.h> /* LW__XSTR */
#include <stddef.h>
#include <string.h>

#define LW_NAMES_INLINE 640

/* How long a queued waiter's alive key and its mailbox live unless renewed:
 * well beyond the longest a waiter blocks between polls (200 ms), so a live
 * waiter keeps its place and its messages. */
#define LW_WAITER_KEYS_MS "1000"

/* A fence below this came from a counter Redis had lost (evicted, flushed,
 * restarted empty): INCR re-created it at 1.  Counters start at the server's
 * clock in microseconds (about 1.8e15), never near it. */
#define LW_FENCE_FLOOR     1000000000000
#define LW_FENCE_FLOOR_LUA LW__XSTR(LW_FENCE_FLOOR) /* lockweave.h */

/* What a read lock's key holds while readers hold it (kind_read.c, lua.h).  Not
 * hex, so never a token.  Earlier builds' scripts wrote "R" (LW_READ_MARK_OLD)
 * and kept readers' entries across a key set anew: these scripts take "R"
 * for a lock another owner holds, and those take this mark for one, so
 * readers of the two never share a key (docs/operations.md, upgrades). */
#define LW_READ_MARK     "readers"
#define LW_READ_MARK_OLD "R"

/* Whether a lock key's value v (len bytes) says readers hold it, under
 * either mark: for tools that show what they find. */
static inline int lw__read_marked(const char *v, size_t len)
{
    return (len == sizeof LW_READ_MARK - 1 &&
            memcmp(v, LW_READ_MARK, len) == 0) ||
           (len == sizeof LW_READ_MARK_OLD - 1 &&
            memcmp(v, LW_READ_MARK_OLD, len) == 0);
}

/*
 * The Redis names that go with one lock key K: the fence counter it draws
 * from, its waiter queue, the set of its readers (mode = read), and the
 * prefix of its waiters' alive keys (and,
 * after a waiter's alive key, ":g" names its mailbox, ":rel" a release's
 * receipt).  All sit in K's Redis Cluster slot (layout in keynames.c), so
 * one script may touch them all, and none can be the lock key of another
 * user key.  Not NUL-terminated: use the lengths.
 */
struct lw_names {
    const char *fence, *queue, *alive, *readers;
    size_t fencelen, queuelen, alivelen, readerslen;
    char *heap; /* set when the inline buffer was too small */
    char buf[LW_NAMES_INLINE];
};

/* Fill n for key, whose first prefix_len bytes are the key prefix; the
 * fence counter is its Cluster slot's with per_slot, else the server's.
 * LW_OK or LW_ENOMEM.  Free with lw__names_free(). */
int lw__names_init(struct lw_names *n, const char *key, size_t len,
                   size_t prefix_len, int per_slot);
void lw__names_free(struct lw_names *n);

/* Whether name is one of the names above for some lock key under prefix (a
 * fence counter, a queue, a waiter's alive key, mailbox or receipt), as
 * lw__names_init() would make it: for tools that walk the keyspace and
 * want the locks alone.  1 or 0; LW_ENOMEM. */
int lw__names_companion(const char *name, size_t len, const char *prefix,
                        size_t prefix_len);

#endif

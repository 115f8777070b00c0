#ifndef LW_GUARD_H
#define LW_GUARD_H

#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>

#include "core/lease.h"

/* Longest key accepted (prefix included): a lock key past this is a bug in
 * the template, not a name anyone meant. */
#define LW_KEY_MAX (64 * 1024)

enum lw_gstate {
    LW_G_INIT,      /* building the key */
    LW_G_OWNER,     /* holds the Redis lock */
    LW_G_REENTERED, /* satisfied by an outer guard of this thread */
    LW_G_DONE       /* finished (failed enter, or left) */
};

/* The real layout of lw_guard. */
struct lw_gimpl {
    lw_lock_opts opts;
    char *key; /* inline_key or heap */
    size_t keylen, keycap;
    size_t key_start; /* where the user's key begins, after the prefix */
    int status;       /* first error met while building the key */
    int state;
    unsigned fork_gen;      /* process the lock was taken in */
    uint32_t depth;         /* owner: guards re-entered inside it */
    struct lw_gimpl *outer; /* next guard out on this thread */
    struct lw_gimpl *owner; /* the guard that holds the Redis lock */
    uint64_t fence;
    struct lw_lease lease;
    char inline_key[LW_GUARD_INLINE_KEY];
};

_Static_assert(sizeof(struct lw_gimpl) <= sizeof(lw_guard),
               "lw_guard too small for its implementation");
_Static_assert(_Alignof(struct lw_gimpl) <= _Alignof(lw_guard),
               "lw_guard under-aligned");

static inline struct lw_gimpl *lw__gimpl(lw_guard *g)
{
    return (struct lw_gimpl *)(void *)g;
}

/* Take the lock in Redis for g (state INIT, key complete); on LW_OK
 * g->fence and g->lease are filled. */
int lw__acquire(struct lw_gimpl *g);

/* Forget that Redis refused BLPOP (lw_shutdown: the next configuration may
 * be another server or user). */
void lw__mailbox_reset(void);

/* Compare-and-delete g's lock; LW_OK or LW_ELOST. */
int lw__release(struct lw_gimpl *g);

struct lw_names;
struct redisReply;

/* The release script for g's token (names: g's companion keys), on this
 * thread's connection or, in a cluster, its slot's master, following
 * redirections until deadline_us.  LW_OK with *r the reply (caller frees). */
int lw__release_script(struct lw_gimpl *g, const struct lw_names *names,
                       int64_t deadline_us, struct redisReply **r,
                       int *replayed);

/* Free a heap key, if any. */
void lw__key_free(struct lw_gimpl *g);

#endif

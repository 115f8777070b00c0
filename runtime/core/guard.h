#ifndef LW_GUARD_H
#define LW_GUARD_H

#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hold.h"
#include "core/take.h"

enum lw_gstate {
    LW_G_INIT,      /* building the key */
    LW_G_OWNER,     /* holds the Redis lock */
    LW_G_REENTERED, /* satisfied by an outer guard of this thread */
    LW_G_LEASED,    /* satisfied by the woven loop body's lease */
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
    unsigned fork_gen;            /* process the lock was taken in */
    uint32_t depth;               /* owner: guards re-entered inside it */
    struct lw_gimpl *outer;       /* next guard out on this thread */
    struct lw_gimpl *owner;       /* the guard that holds the Redis lock */
    const struct lw_hold *leased; /* LW_G_LEASED: the lease's key's hold */
    uint64_t fence;
    struct lw_hold lease;
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

#endif

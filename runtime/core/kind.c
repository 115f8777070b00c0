/* The lock kinds, and which one a lock or a key is (kind.h). */
#include "core/kind.h"

#include <stddef.h>

/* Run once first: its marks, done or running, are strings the mutex
 * would take for a token. */
const struct lw_kind *const lw__kinds[] = {&lw__kind_once, &lw__kind_mutex,
                                           &lw__kind_read, &lw__kind_sem, NULL};

const struct lw_kind *lw__kind_for(const lw_lock_opts *opts)
{
    if (opts->once_window_ms > 0)
        return &lw__kind_once;
    if (opts->permits > 0)
        return &lw__kind_sem;
    return (opts->flags & LW_LOCK_READ) ? &lw__kind_read : &lw__kind_mutex;
}

const struct lw_kind *lw__kind_of(const redisReply *get)
{
    for (const struct lw_kind *const *k = lw__kinds; *k != NULL; k++)
        if ((*k)->owns(get))
            return *k;
    return NULL;
}

/* The lock kinds, and which one a lock or a key is (kind.h). */
#include "core/kind.h"

#include <stddef.h>

#include "core/scripts.h"

/* Run once first: its marks, done or running, are strings the mutex
 * would take for a token. */
const struct lw_kind *const lw__kinds[] = {&lw__kind_once, &lw__kind_mutex,
                                           &lw__kind_read, &lw__kind_sem, NULL};

struct lw_script *const lw__scripts[] = {
    &lw__script_renew,       &lw__script_release,
    &lw__script_enqueue,     &lw__script_try,
    &lw__script_onekey,      &lw__script_handfences,
    &lw__script_owned,       &lw__script_sem_enqueue,
    &lw__script_sem_release, &lw__script_sem_renew,
    &lw__script_rw_enqueue,  &lw__script_rw_release,
    &lw__script_rw_renew,    &lw__script_sem_leave,
    &lw__script_rw_leave,    &lw__script_rw_mark,
    &lw__script_once_try,    &lw__script_once_enqueue,
    &lw__script_once_done,   &lw__script_batch,
    &lw__script_handmore,    NULL};

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

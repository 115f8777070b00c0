/* Woven by lockweave_generate(): functions whose bodies run on an event
 * loop (loop =), called from loop.c, which checks what they see. */
#include "loop.h"

/* The calls in flight on one key. */
REDIS_LOCK("loop:{key}", 10s, 10s, loop = the_loop,
           on_fail = section_failed(seq, lw_last_error()))
void section(const char *key, int seq, struct payload p)
{
    section_body(key, seq, &p);
}

/* Blocking, never waiting: only re-entry lets it in while the key is
 * held. */
REDIS_LOCK("loop:{key}", 10s, 0)
uint64_t fence_again(const char *key)
{
    (void)key;
    return lw_fence();
}

/* A short wait, for a key held elsewhere. */
REDIS_LOCK("busy:{id}", 10s, 200ms, loop = the_loop,
           on_fail = busy_failed(id, lw_last_error()))
void busy(int id)
{
    busy_ran(id);
}

/* The loop from a parameter, which may be NULL. */
REDIS_LOCK("on:{id}", 10s, 1s, loop = lp,
           on_fail = on_loop_failed(id, lw_last_error()))
void on_loop(lw_loop *lp, int id)
{
    (void)lp;
    on_loop_ran(id);
}

/* Checked at the call, and again on the loop with the lock held. */
REDIS_LOCK("once:{id}", 10s, 5s, loop = the_loop, skip_if = done_already(id))
void once(int id)
{
    once_ran(id);
}

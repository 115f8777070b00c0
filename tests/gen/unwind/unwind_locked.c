/* Woven by lockweave_generate(); the callbacks are C++ that may throw. */
#include "unwind.h"

#include <lockweave.h>

/* Leases long enough that a lock left behind would hold up the next
 * caller for all of its wait. */
REDIS_LOCK("unwind:{id}", 30s, 10s)
int with_lock(int64_t id, step_fn step, void *arg)
{
    (void)id;
    return step(arg);
}

/* Entered in the order of their keys, left by cleanups that run in the
 * reverse order of the guards' declarations: with_two(2, 1) takes them in
 * the order opposite to with_two(1, 2). */
REDIS_LOCK("pair:{a}", 30s, 10s)
REDIS_LOCK("pair:{b}", 30s, 10s)
int with_two(int64_t a, int64_t b, step_fn step, void *arg)
{
    (void)a;
    (void)b;
    return step(arg);
}

REDIS_LOCK("unwind:{id}", 30s, 10s)
int nested(int64_t id, step_fn step, void *arg)
{
    return with_lock(id, step, arg);
}

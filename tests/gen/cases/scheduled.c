/* A scheduled job every host calls on the same timer: the first to lock it
 * runs it, and the key stays locked five minutes from then, so the others
 * skip it (wait 0) for the rest of the interval. */
#include <lockweave.h>

static int runs;

REDIS_LOCK("job:nightly", 10m, 0, hold_at_least = 5m, max_renew = 3)
void nightly(void)
{
    runs++;
}

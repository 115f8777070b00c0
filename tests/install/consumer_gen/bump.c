/* An annotated function, woven by lockweave_generate() from an installed
 * lockweave. */
#include <lockweave.h>

#include <stdint.h>

long total;

REDIS_LOCK("consumer:{id}", 5s, 2s)
int bump(int64_t id, int by)
{
    total += by;
    return lw_fence() > 0 && lw_still_held() == 1 && id >= 0;
}

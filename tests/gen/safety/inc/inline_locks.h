#include <lockweave.h>
#include <stdint.h>

REDIS_LOCK("inline:{id}", 5s, 1s)
static inline uint64_t inline_locked(int id)
{
    (void)id;
    return lw_fence();
}

/* Added to its target after lockweave_generate(). */
#include "safety.h"

REDIS_LOCK("late:{id}", 5s, 1s)
uint64_t safety_case(int id)
{
    (void)id;
    return lw_fence();
}

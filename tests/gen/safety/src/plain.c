#include "safety.h"

REDIS_LOCK("plain:{id}", 5s, 1s)
uint64_t safety_case(int id)
{
    (void)id;
    return lw_fence();
}

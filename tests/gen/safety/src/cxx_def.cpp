// An annotated definition in a C++ file of a woven target: woven in place.
#include "safety.h"

REDIS_LOCK("cxx:{id}", 5s, 1s)
extern "C" uint64_t safety_case(int id)
{
    (void)id;
    return lw_fence();
}

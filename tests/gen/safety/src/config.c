/* Built Release: CMAKE_C_FLAGS_RELEASE's -DNDEBUG and a definition from a
 * generator expression decide which definitions exist. */
#include "safety.h"

#ifdef NDEBUG
REDIS_LOCK("release:{id}", 5s, 1s)
static uint64_t release_only(int id)
{
    (void)id;
    return lw_fence();
}
#else
static uint64_t release_only(int id)
{
    (void)id;
    return 1;
}
#endif

#ifdef SAFETY_GENEX_LOCKED
REDIS_LOCK("genex:{id}", 5s, 1s)
static uint64_t genex_only(int id)
{
    (void)id;
    return lw_fence();
}
#else
static uint64_t genex_only(int id)
{
    (void)id;
    return 1;
}
#endif

uint64_t safety_case(int id)
{
    uint64_t a = release_only(id), b = genex_only(id);
    return a && b ? a : 0;
}

/* One macro expands to the annotation and the definition. */
#include "safety.h"

#define LOCKED_GETTER(fn)                                                      \
    REDIS_LOCK("g:{id}", 5s, 1s)                                               \
    uint64_t fn(int id)                                                        \
    {                                                                          \
        (void)id;                                                              \
        return lw_fence();                                                     \
    }

LOCKED_GETTER(safety_case)

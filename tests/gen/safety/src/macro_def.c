/* The annotated definition comes from a macro. */
#include "safety.h"

#define DEFINE_GETTER(fn, ns)                                                  \
    uint64_t fn(int id)                                                        \
    {                                                                          \
        (void)id;                                                              \
        return lw_fence() + sizeof ns;                                         \
    }

REDIS_LOCK("m:{id}", 5s, 1s)
DEFINE_GETTER(safety_case, "m")

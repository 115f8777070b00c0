#include "base/stats.h"

lw_stats lw__stats;

void lw__stat_wait(uint64_t us)
{
    uint64_t max = __atomic_load_n(&lw__stats.wait_max_us, __ATOMIC_RELAXED);

    LW_STAT_ADD(wait_total_us, us);
    while (us > max &&
           !__atomic_compare_exchange_n(&lw__stats.wait_max_us, &max, us, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void lw_stats_get(lw_stats *out)
{
    const uint64_t *src = (const uint64_t *)&lw__stats;
    uint64_t *dst = (uint64_t *)out;

    for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

#include "base/stats.h"

#include <string.h>

/* lw_stats as 0.1.0 has it ends at handed_locally: lw_stats_get() of that
 * version writes that much, whatever the struct becomes. */
#define STATS_SIZE_0_1_0 (offsetof(lw_stats, handed_locally) + sizeof(uint64_t))

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

void lw_stats_get_sized(lw_stats *out, size_t size)
{
    const uint64_t *src = (const uint64_t *)&lw__stats;
    lw_stats now;
    uint64_t *dst = (uint64_t *)&now;
    size_t n = size < sizeof now ? size : sizeof now;

    for (size_t i = 0; i < sizeof now / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    memcpy(out, &now, n);
    /* A newer version's counters: none counted here. */
    memset((unsigned char *)out + n, 0, size - n);
}

void(lw_stats_get)(lw_stats *out)
{
    lw_stats_get_sized(out, STATS_SIZE_0_1_0);
}

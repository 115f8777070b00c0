#ifndef LW_STATS_H
#define LW_STATS_H

#include <lockweave.h>

/* Counters are lw_stats fields updated with relaxed atomics: they are for
 * operators, and nothing synchronises on them. */
extern lw_stats lw__stats;

#define LW_STAT_ADD(field, n)                                                  \
    __atomic_fetch_add(&lw__stats.field, (uint64_t)(n), __ATOMIC_RELAXED)
#define LW_STAT_SUB(field, n)                                                  \
    __atomic_fetch_sub(&lw__stats.field, (uint64_t)(n), __ATOMIC_RELAXED)

void lw__stat_wait(uint64_t us);

#endif

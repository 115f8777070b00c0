/* Monotonic time: every deadline and lease in lockweave is measured on
 * CLOCK_MONOTONIC so a wall-clock step can never stretch or shrink a wait. */
#ifndef LW_CLOCK_H
#define LW_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t lw__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t lw__now_ms(void)
{
    return lw__now_us() / 1000;
}

/* Absolute CLOCK_MONOTONIC time for pthread_cond_timedwait. */
static inline struct timespec lw__abstime_us(int64_t at_us)
{
    struct timespec ts;
    ts.tv_sec = at_us / 1000000;
    ts.tv_nsec = (long)(at_us % 1000000) * 1000;
    return ts;
}

#endif

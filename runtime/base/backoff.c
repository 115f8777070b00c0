/* Backing off (see backoff.h). */
#include "base/backoff.h"

#include <lockweave.h>

#include "base/clock.h"
#include "base/gate.h"
#include "base/thread.h"

int64_t lw__backoff_step(struct lw_backoff *b)
{
    int64_t half = b->next / 2;
    int64_t d = half + lw__jitter((uint32_t)(b->next - half) + 1);

    b->next = b->next * 2 > b->max ? b->max : b->next * 2;
    return d;
}

int lw__backoff_pause(struct lw_backoff *b, int64_t deadline_us)
{
    int64_t left_us = deadline_us - lw__now_us(), pause_us;

    if (left_us <= 0)
        return LW_ETIMEOUT;
    pause_us = lw__backoff_step(b);
    if (lw__gate_sleep_us(pause_us < left_us ? pause_us : left_us))
        return LW_ESHUTDOWN;
    return 0;
}

/* Backing off (see backoff.h). */
#include "base/backoff.h"

#include "base/thread.h"

int64_t lw__backoff_step(struct lw_backoff *b)
{
    int64_t half = b->next / 2;
    int64_t d = half + lw__jitter((uint32_t)(b->next - half) + 1);

    b->next = b->next * 2 > b->max ? b->max : b->next * 2;
    return d;
}

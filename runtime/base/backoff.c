/* Sleeping and backing off (see backoff.h). */
#include "base/backoff.h"

#include <errno.h>
#include <time.h>

#include "base/thread.h"

void lw__sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

    if (us <= 0)
        return;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int64_t lw__backoff_step(struct lw_backoff *b)
{
    int64_t half = b->next / 2;
    int64_t d = half + lw__jitter((uint32_t)(b->next - half) + 1);

    b->next = b->next * 2 > b->max ? b->max : b->next * 2;
    return d;
}

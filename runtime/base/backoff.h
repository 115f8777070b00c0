#ifndef LW_BACKOFF_H
#define LW_BACKOFF_H

#include <stdint.h>

/*
 * Exponential backoff with jitter, for every retry loop of the library:
 * each step is uniformly spread over [next/2, next], so clients that failed
 * together do not retry together, then next doubles up to max.
 */
struct lw_backoff {
    int64_t next, max; /* any unit: microseconds or milliseconds */
};

/* The delay before the next retry. */
int64_t lw__backoff_step(struct lw_backoff *b);

/* Sleep b's next step (microseconds), cut short at deadline_us (lw__now_us()
 * time), before a retry: 0 to retry; LW_ETIMEOUT when the deadline had
 * passed already, LW_ESHUTDOWN when lw_shutdown() ended the sleep. */
int lw__backoff_pause(struct lw_backoff *b, int64_t deadline_us);

#endif

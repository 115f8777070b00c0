#ifndef LW_LEASE_H
#define LW_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include "core/token.h"

/*
 * What the watchdog needs to keep one lock alive.  It lives inside the guard,
 * on the locking thread's stack: lw__watchdog_remove() waits out an in-flight
 * renewal before the guard (and so the lease) can go away.
 */
struct lw_settings;

struct lw_lease {
    const struct lw_settings *cfg; /* configuration it was taken under:
                                      renewal and release go to the same
                                      servers even after lw_configure() */
    const char *key;
    size_t keylen;
    char token[LW_TOKEN_MAX];
    int toklen;
    uint32_t expire_ms;
    uint32_t drift_ms;   /* clock-drift allowance taken off every validity
                            (Redlock); 0 with one server */
    char expire_str[12]; /* expire_ms in decimal, as the renew script wants */
    int expire_len;
    int32_t renews_left;    /* < 0: unlimited */
    int64_t valid_until_ms; /* the lease surely ends by then (our clock) */
    int64_t due_ms;         /* next watchdog action */
    int heap_idx;           /* position in the watchdog heap, -1 if not there */
    int fifo;               /* watchdog FIFO it is queued in, -1 if none */
    struct lw_lease *prev, *next; /* links in that FIFO */
    int inflight;                 /* the watchdog is renewing it right now */
    int lost;                     /* atomic: set once, by watchdog or release */
};

#endif

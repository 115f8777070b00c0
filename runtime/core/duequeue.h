#ifndef LW_DUEQUEUE_H
#define LW_DUEQUEUE_H

#include <stdint.h>

#include "core/hold.h"

/*
 * The watchdog's schedule: held leases ordered by their next event
 * (lease.due_ms).  A renewal is due a third of its lease after the last
 * one, so leases of one length come due in the order they were queued:
 * each length gets a FIFO (O(1) to queue, pop and cancel).  Events out of
 * that order — a lease's end once max_renew ran out, a retry after a failed
 * round trip, a length past LW_DQ_FIFOS — go to a binary min-heap.  The
 * caller serializes all calls (the watchdog's mutex).
 */
#define LW_DQ_FIFOS 16

/* A heap entry carries its due time, so sifting compares inside one array
 * and never follows a pointer into a lease on some thread's stack. */
struct lw_dq_entry {
    int64_t due_ms;
    struct lw_hold *lease;
};

struct lw_dq_fifo {
    uint32_t expire_ms;
    struct lw_hold *head, *tail;
};

struct lw_duequeue {
    struct lw_dq_fifo fifos[LW_DQ_FIFOS];
    int nfifos;
    struct lw_dq_entry *heap; /* owned: lw__dq_free() */
    int n, cap;
};

/* Queue l for l->due_ms.  LW_OK or LW_ENOMEM (l is then not queued). */
int lw__dq_add(struct lw_duequeue *q, struct lw_hold *l);

/* Take l out, wherever it is; nothing if it is not queued. */
void lw__dq_remove(struct lw_duequeue *q, struct lw_hold *l);

/* The lease due first, or NULL when none is queued. */
struct lw_hold *lw__dq_earliest(const struct lw_duequeue *q);

/* Take every lease out, calling fn(l, arg) on each when fn is not NULL. */
void lw__dq_clear(struct lw_duequeue *q, void (*fn)(struct lw_hold *, void *),
                  void *arg);

/* Free the heap's array; q is empty and usable again. */
void lw__dq_free(struct lw_duequeue *q);

#endif

/* The service's own counters, and /metrics in Prometheus text format. */
#ifndef INV_METRICS_H
#define INV_METRICS_H

#include "buf.h"

#include <stdint.h>

/* Outcomes of POST /stock/{sku}/deduct and POST /orders that reached
 * deduct(). */
enum inv_outcome {
    INV_OUT_OK,
    INV_OUT_INSUFFICIENT,
    INV_OUT_NOT_FOUND,
    INV_OUT_LOCK_FAILED,
    INV_OUT_LOCK_LOST,
    INV_OUT_STORE_ERROR,
    INV_OUT_COUNT
};

/* Thread-safe (atomic counters). */
void inv_metrics_status(int http_status);
void inv_metrics_deduct(enum inv_outcome o, uint64_t duration_us);
/* A POST /orders answered with an earlier run's outcome (deducting
 * nothing, so not a deduction above). */
void inv_metrics_order_replayed(void);

/* Render every counter, lockweave's included.  guarded: 1 unless --no-lock. */
void inv_metrics_render(struct inv_buf *b, int guarded);

#endif /* INV_METRICS_H */

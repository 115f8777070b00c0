/* Latency percentiles over one run. */
#ifndef INV_LATENCY_H
#define INV_LATENCY_H

#include <stddef.h>
#include <stdint.h>

/* The p-th percentile (0 < p <= 100, nearest rank) of n samples in
 * microseconds; sorts v in place.  0 when n is 0. */
uint32_t inv_percentile(uint32_t *v, size_t n, double p);

#endif /* INV_LATENCY_H */

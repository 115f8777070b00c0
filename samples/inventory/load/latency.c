#include "latency.h"

#include <stdlib.h>

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

uint32_t inv_percentile(uint32_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    /* Sorting again is cheap for a few thousand samples, and keeps callers
     * from depending on call order. */
    qsort(v, n, sizeof *v, cmp_u32);
    double exact = p / 100.0 * (double)n;
    size_t rank = (size_t)exact;
    if ((double)rank < exact)
        rank++; /* nearest rank rounds up (ceil without libm) */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

#ifndef LW_METRICS_H
#define LW_METRICS_H

#include <lockweave.h>
#include <stdint.h>

/*
 * Counters per annotation site (lw_metrics_write()).  Each registered
 * lw_site gets one struct lw_sitectr, owned by the runtime (its labels
 * copied), never freed: a site whose library was unloaded keeps its
 * counts, and a reader needs no lock.  Updated with relaxed atomics, as
 * lw__stats: nothing synchronises on them.
 */

/* Histogram buckets' upper bounds in microseconds; one more bucket, +Inf,
 * follows them. */
#define LW_METRICS_BUCKETS 16

struct lw_sitectr {
    struct lw_sitectr *next; /* registration order; atomic */
    char *labels; /* function="..",key="..",site=".." escaped; the NUL-free
                     text that tells two sites apart */
    uint64_t acquired, contended, timeouts, lost, renewals;
    uint64_t wait_sum_us, hold_sum_us;
    uint64_t wait[LW_METRICS_BUCKETS + 1], hold[LW_METRICS_BUCKETS + 1];
};

/* Guards and leases whose options name no site. */
extern struct lw_sitectr lw__site_unannotated;

struct lw_sitectr *lw__site_register(lw_site *site, size_t size);

/* The counters of the site opts names: cheap once it is registered. */
static inline struct lw_sitectr *lw__site_of(const lw_lock_opts *opts)
{
    void *c;

    if (opts->site == NULL)
        return &lw__site_unannotated;
    c = __atomic_load_n(&opts->site->lw__impl, __ATOMIC_ACQUIRE);
    return c != NULL ? (struct lw_sitectr *)c
                     : lw__site_register(opts->site, sizeof(lw_site));
}

#define LW_SITE_ADD(c, field, n)                                               \
    __atomic_fetch_add(&(c)->field, (uint64_t)(n), __ATOMIC_RELAXED)

/* One wait (acquired or timed out; 0 when the lock was free) or one hold
 * (acquisition to release), in microseconds. */
void lw__site_wait(struct lw_sitectr *c, uint64_t us);
void lw__site_hold(struct lw_sitectr *c, uint64_t us);

#endif

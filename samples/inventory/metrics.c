#include "metrics.h"

#include <lockweave.h>

#include <stdatomic.h>
#include <stdlib.h>

/* Indexed by status code: the handful of codes the service answers with
 * costs less as a flat array than as a map. */
static atomic_uint_fast64_t status_count[600];
static atomic_uint_fast64_t outcome_count[INV_OUT_COUNT];
static atomic_uint_fast64_t deduct_us_sum;
static atomic_uint_fast64_t orders_replayed;

static const char *const outcome_name[INV_OUT_COUNT] = {
    "ok",          "insufficient", "not_found",
    "lock_failed", "lock_lost",    "store_error",
};

void inv_metrics_status(int http_status)
{
    if (http_status >= 100 && http_status < 600)
        atomic_fetch_add_explicit(&status_count[http_status], 1,
                                  memory_order_relaxed);
}

void inv_metrics_deduct(enum inv_outcome o, uint64_t duration_us)
{
    atomic_fetch_add_explicit(&outcome_count[o], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&deduct_us_sum, duration_us,
                              memory_order_relaxed);
}

void inv_metrics_order_replayed(void)
{
    atomic_fetch_add_explicit(&orders_replayed, 1, memory_order_relaxed);
}

static void counter(struct inv_buf *b, const char *name, const char *help,
                    uint64_t v)
{
    inv_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help,
                   name, name, (unsigned long long)v);
}

static void gauge(struct inv_buf *b, const char *name, const char *help,
                  double v)
{
    inv_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.6g\n", name, help,
                   name, name, v);
}

/* lockweave's counters per annotation site (lw_metrics_write()), read
 * into the body as they are now. */
static void lockweave_sites(struct inv_buf *b)
{
    size_t n = lw_metrics_write(NULL, 0);
    char *text = malloc(n + 1);

    if (text == NULL) {
        b->oom = 1;
        return;
    }
    lw_metrics_write(text, n + 1); /* sites only grow: a cut line at worst */
    inv_buf_printf(b, "%s", text);
    free(text);
}

void inv_metrics_render(struct inv_buf *b, int guarded)
{
    lw_stats st;

    /* What lw_metrics_write() has no series for: process-wide. */
    lw_stats_get(&st);
    counter(b, "lockweave_locks_handed_locally_total",
            "Locks handed on by another thread of this process.",
            st.handed_locally);
    counter(b, "lockweave_locks_reentered_total",
            "Guards satisfied by a lock already held.", st.reentered);
    counter(b, "lockweave_redis_errors_total", "Failed Redis round trips.",
            st.redis_errors);
    gauge(b, "lockweave_wait_max_seconds", "Longest single wait.",
          st.wait_max_us / 1e6);
    gauge(b, "lockweave_locks_held", "Locks held by this process now.",
          (double)st.held);

    gauge(b, "inventory_guarded", "1 when deductions take the Redis lock.",
          guarded);
    inv_buf_printf(b, "# HELP inventory_http_responses_total Responses by "
                      "status code.\n# TYPE inventory_http_responses_total "
                      "counter\n");
    for (int code = 100; code < 600; code++) {
        uint64_t v =
            atomic_load_explicit(&status_count[code], memory_order_relaxed);
        if (v)
            inv_buf_printf(b,
                           "inventory_http_responses_total{code=\"%d\"} "
                           "%llu\n",
                           code, (unsigned long long)v);
    }
    inv_buf_printf(b, "# HELP inventory_deductions_total Deductions by "
                      "outcome.\n# TYPE inventory_deductions_total counter\n");
    for (int o = 0; o < INV_OUT_COUNT; o++)
        inv_buf_printf(b, "inventory_deductions_total{outcome=\"%s\"} %llu\n",
                       outcome_name[o],
                       (unsigned long long)atomic_load_explicit(
                           &outcome_count[o], memory_order_relaxed));
    inv_buf_printf(b,
                   "# HELP inventory_deduct_seconds_total Time spent in "
                   "deduct(), lock wait included.\n# TYPE "
                   "inventory_deduct_seconds_total counter\n"
                   "inventory_deduct_seconds_total %.6f\n",
                   atomic_load_explicit(&deduct_us_sum, memory_order_relaxed) /
                       1e6);
    counter(b, "inventory_orders_replayed_total",
            "POST /orders answered with an earlier run's outcome.",
            atomic_load_explicit(&orders_replayed, memory_order_relaxed));
    /* Last: the longest part, per site. */
    lockweave_sites(b);
}

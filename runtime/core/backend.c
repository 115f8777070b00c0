/* Which backend serves a configuration. */
#include "core/backend.h"

#include "base/config.h"
#include "core/queue.h"
#include "core/redlock.h"

static const struct lw_backend queue_backend = {.acquire = lw__queue_acquire,
                                                .release = lw__queue_release,
                                                .renew = lw__queue_renew,
                                                .fences = lw__queue_fences,
                                                .check = lw__queue_check,
                                                .more = lw__queue_more,
                                                .queues = 1};

static const struct lw_backend redlock_backend = {
    .acquire = lw__redlock_acquire,
    .release = lw__redlock_release,
    .renew = lw__redlock_renew,
    .check = lw__redlock_check};

const struct lw_backend *lw__backend_for(const struct lw_settings *cfg)
{
    return cfg->ep.topology == LW_TOPO_REDLOCK ? &redlock_backend
                                               : &queue_backend;
}

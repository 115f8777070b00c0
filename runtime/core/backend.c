/* Which backend serves a configuration. */
#include "core/backend.h"

#include "base/config.h"
#include "core/queue.h"
#include "core/redlock.h"

static const struct lw_backend queue_backend = {
    lw__queue_acquire, lw__queue_release, lw__queue_renew, lw__queue_fences, 1};

static const struct lw_backend redlock_backend = {
    lw__redlock_acquire, lw__redlock_release, lw__redlock_renew, NULL, 0};

const struct lw_backend *lw__backend_for(const struct lw_settings *cfg)
{
    return cfg->ep.topology == LW_TOPO_REDLOCK ? &redlock_backend
                                               : &queue_backend;
}

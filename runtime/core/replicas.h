#ifndef LW_REPLICAS_H
#define LW_REPLICAS_H

#include "core/hold.h"

struct lw_names;
struct lw_target;

/*
 * Replica-safe acquire (LOCKWEAVE_WAIT_REPLICAS / lw_config.wait_replicas):
 * l's lock (companion keys names) was just taken through to; WAIT until the
 * configured number of replicas have it.  LW_OK, or the lock is released
 * again and the result is LW_EREPLICAS (too few replicas confirmed in time)
 * or LW_EREDIS.
 */
int lw__wait_replicas(struct lw_hold *l, const struct lw_names *names,
                      struct lw_target *to);

#endif

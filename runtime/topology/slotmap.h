#ifndef LW_SLOTMAP_H
#define LW_SLOTMAP_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "topology/slot.h"
#include "base/url.h"

#define LW_SLOT_UNSERVED 0xffff

/*
 * Which master serves each of the 16384 slots, as CLUSTER SLOTS last said.
 * A map is immutable once published: readers load the current pointer and
 * use it without a lock; a refresh builds a new map and swaps it in.  Old
 * maps are retired, not freed, until lw_shutdown(), so a pointer a thread
 * holds is never freed under it (refreshes are rare: failovers, resharding).
 */
struct lw_slotmap {
    unsigned cfg_gen; /* lw_settings.gen whose seeds it was learnt from */
    uint64_t version; /* increases with every published map */
    int nnodes;
    struct lw_url *nodes;     /* the masters, with the seeds' AUTH */
    uint16_t owner[LW_SLOTS]; /* index into nodes, or LW_SLOT_UNSERVED */
    struct lw_slotmap *older; /* retired maps */
};

/* Build a map from a CLUSTER SLOTS reply r, got from node asked; nodes get
 * cred's user and password.  LW_OK, LW_EREDIS (malformed) or LW_ENOMEM. */
int lw__slotmap_parse(const redisReply *r, const struct lw_url *asked,
                      const struct lw_url *cred, unsigned cfg_gen,
                      struct lw_slotmap **out);

/* The current map, or NULL before the first one. */
const struct lw_slotmap *lw__slotmap_current(void);

/* Make m current (it is owned from then on). */
void lw__slotmap_publish(struct lw_slotmap *m);

/* Free every map (lw_shutdown). */
void lw__slotmap_free_all(void);

#endif

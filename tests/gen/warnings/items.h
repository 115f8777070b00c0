/* The header of a small cache, the way memcached declares its functions:
 * one annotated where it is declared, others declared plainly and
 * annotated where they are defined. */
#ifndef ITEMS_H
#define ITEMS_H

#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>

typedef struct item {
    const char *key;
    int64_t value;
} item;

REDIS_LOCK("item:{key}", 10s, 5s)
int64_t add_delta(const char *key, int64_t delta);

int move_items(int64_t from, int64_t to, unsigned n);
const char *slab_name(int id);
int items_touch(unsigned slab);

/* An item's expiry, run on an event loop. */
lw_loop *items_loop(void);
void items_failed(const item *it, int why);
void expire_item(item it, unsigned counts[16], int slab);

#endif

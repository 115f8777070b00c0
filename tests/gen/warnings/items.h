/* The header of a small cache, the way memcached declares its functions:
 * one annotated where it is declared, one declared plainly and annotated
 * where it is defined. */
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

#endif

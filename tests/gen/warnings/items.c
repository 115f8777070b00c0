/* Annotated functions in every form a project with strict warnings has:
 * declared in a header (annotated there or here), static with a forward
 * declaration, with several keys, with on_fail and skip_if, and on an
 * event loop (loop =, its arguments kept for the body). */
#include "items.h"

static item table[16];
static unsigned hits;

static int bump(unsigned slab);

REDIS_LOCK("item:{key}", 10s, 5s)
int64_t add_delta(const char *key, int64_t delta)
{
    item *it = &table[(unsigned char)key[0] % 16u];
    it->value += delta;
    return it->value;
}

REDIS_LOCK("slab:{slab}", 2s, 0)
static int bump(unsigned slab)
{
    hits += slab;
    return slab > 0 ? bump(slab - 1) : (int)(hits % 2u);
}

REDIS_LOCK("acct:{from}", 10s, 5s)
REDIS_LOCK("acct:{to}", 10s, 5s)
int move_items(int64_t from, int64_t to, unsigned n)
{
    table[from % 16].value -= n;
    table[to % 16].value += n;
    return 0;
}

REDIS_LOCK("slabs:{id}", 1s, 0, on_fail = NULL, skip_if = id < 0)
const char *slab_name(int id)
{
    static const char *const names[] = {"small", "large"};
    return names[id % 2];
}

REDIS_LOCK("item:{it.key}", 10s, 1s, loop = items_loop(),
           on_fail = items_failed(&it, lw_last_error()), skip_if = slab < 0)
void expire_item(item it, unsigned counts[16], int slab)
{
    counts[slab % 16]++;
    table[(unsigned char)it.key[0] % 16u] = it;
}

int items_touch(unsigned slab)
{
    return bump(slab);
}

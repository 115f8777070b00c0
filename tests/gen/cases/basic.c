/* The DESIGN.md example, with the key and lease from macros. */
#include <lockweave.h>
#include <stdint.h>

#define STOCK_KEY "stock:{stock_id}"
#define LOCK_TTL 10s

static int stock[100];

REDIS_LOCK(STOCK_KEY, LOCK_TTL, 5s)
int deduct(int64_t stock_id, int qty)
{
    if (stock[stock_id] < qty)
        return -1;
    stock[stock_id] -= qty;
    return stock[stock_id];
}

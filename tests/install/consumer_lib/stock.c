/* Woven by lockweave_generate(stock): the annotation is on the header's
 * declaration. */
#include "stock.h"

static int left = 10;

int stock_take(int64_t id, int qty)
{
    if (id < 0 || lw_fence() == 0 || lw_still_held() != 1)
        return -3; /* not under the lock */
    if (left < qty)
        return -1;
    left -= qty;
    return left;
}

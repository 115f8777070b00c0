/*
 * The body every deduction runs, in every front end: the threaded service's
 * deduct() and its unguarded twin (deduct.c), and the event loop's
 * deduct_on_loop() (deduct_loop.c).  Not woven: the lock is their business.
 */
/* nanosleep() is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "inventory.h"
#include "store.h"

#include <time.h>

static void business_work(int work_ms)
{
    struct timespec ts = {work_ms / 1000, (long)(work_ms % 1000) * 1000000L};
    while (work_ms > 0 && nanosleep(&ts, &ts) != 0)
        ; /* EINTR: sleep the rest */
}

/*
 * Read, check, work, write: separate statements, no transaction, exactly the
 * read-modify-write that loses updates when two callers interleave.  Only the
 * lock around it makes it correct; the store is deliberately not asked to.
 */
int inv_read_check_write(const char *sku, int qty, struct inv_store *store,
                         int work_ms)
{
    int64_t stock = 0;
    int rc = inv_store_get(store, sku, &stock);
    if (rc == INV_STORE_MISSING)
        return INV_NOT_FOUND;
    if (rc != INV_STORE_OK)
        return INV_STORE_ERROR;
    if (stock < qty)
        return INV_INSUFFICIENT;

    business_work(work_ms);

    if (inv_store_set(store, sku, stock - qty) != INV_STORE_OK)
        return INV_STORE_ERROR;
    return (int)(stock - qty);
}

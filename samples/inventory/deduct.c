/*
 * The one annotated function of the service.  It sits alone in this file so
 * the generator weaves exactly the code that needs the lock, and so the
 * unannotated twin visibly runs the same body.
 */
/* nanosleep() is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "inventory.h"
#include "store.h"

#include <lockweave.h>

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
static int read_check_write(const char *sku, int qty, struct inv_store *store,
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

/* The key is per SKU: deductions of different SKUs never wait for each
 * other.  10 s lease (renewed by the watchdog while the body runs), 5 s to
 * wait for a busy lock before answering 503. */
REDIS_LOCK("stock:{sku}", 10s, 5s, on_fail = INV_LOCK_FAILED)
int deduct(const char *sku, int qty, struct inv_store *store, int work_ms)
{
    return read_check_write(sku, qty, store, work_ms);
}

int deduct_unguarded(const char *sku, int qty, struct inv_store *store,
                     int work_ms)
{
    return read_check_write(sku, qty, store, work_ms);
}

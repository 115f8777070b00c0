/*
 * The threaded service's annotated function.  It sits alone in this file so
 * the generator weaves exactly the code that needs the lock, and so the
 * unannotated twin visibly runs the same body (read_check_write.c).
 */
#include "inventory.h"

#include <lockweave.h>

/* The key is per SKU: deductions of different SKUs never wait for each
 * other.  10 s lease (renewed by the watchdog while the body runs), 5 s to
 * wait for a busy lock before answering 503. */
REDIS_LOCK("stock:{sku}", 10s, 5s, on_fail = INV_LOCK_FAILED)
int deduct(const char *sku, int qty, struct inv_store *store, int work_ms)
{
    return inv_read_check_write(sku, qty, store, work_ms);
}

int deduct_unguarded(const char *sku, int qty, struct inv_store *store,
                     int work_ms)
{
    return inv_read_check_write(sku, qty, store, work_ms);
}

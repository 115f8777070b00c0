/*
 * POST /orders: an order placed once per idempotency key.  The client picks
 * the key (the Idempotency-Key header, as payment APIs take it) and may send
 * the same order again, to any instance, after a timeout or a dropped
 * connection: REDIS_ONCE runs the deduction once per key and answers every
 * replay with the first run's result.  It sits alone in this file, as
 * deduct() does in deduct.c, so the generator weaves only what needs it.
 */
#include "inventory.h"

#include <lockweave.h>

/*
 * Once per key for 24 hours across every instance.  The body takes the
 * stock lock itself (deduct(), REDIS_LOCK "stock:{sku}"): the mark is per
 * order, the lock per SKU, and REDIS_ONCE stands alone on its function.
 * A replay that comes while the first run goes waits up to 10 s for its
 * result (longer than deduct()'s own 5 s wait for the stock lock).
 * failed_if: the stock lock was not had or the database failed: nothing
 * was deducted, so the key stays free and the client's retry runs again.
 * Any other result (the remaining stock, insufficient stock, unknown SKU)
 * is the order's outcome, which every replay within the window gets.
 */
REDIS_ONCE("order:{order_key}", 24h, wait = 10s,
           failed_if = lw_result == INV_LOCK_FAILED ||
                       lw_result == INV_STORE_ERROR,
           on_fail = INV_LOCK_FAILED)
int place_order(const char *order_key, const char *sku, int qty,
                struct inv_store *store, int work_ms, int *deduct_err)
{
    (void)order_key; /* the mark's key, not the body's business */
    int rc = deduct(sku, qty, store, work_ms);
    *deduct_err = lw_last_error(); /* why, when the stock lock was not had */
    return rc;
}

int place_order_unguarded(const char *order_key, const char *sku, int qty,
                          struct inv_store *store, int work_ms)
{
    (void)order_key; /* nothing remembers it: every replay deducts again */
    return deduct_unguarded(sku, qty, store, work_ms);
}

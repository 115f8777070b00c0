/*
 * The inventory service's core: what a deduction returns, and the two ways to
 * run it (guarded by the Redis lock, or not, to show the race).
 */
#ifndef INV_INVENTORY_H
#define INV_INVENTORY_H

#include <stdint.h>

struct inv_store;

/* deduct() results: >= 0 is the remaining stock; the rest are negative so a
 * caller tells them apart with one comparison. */
enum {
    INV_INSUFFICIENT = -1, /* less stock than asked for: nothing written */
    INV_NOT_FOUND = -2,    /* no such SKU */
    INV_STORE_ERROR = -3,  /* the database failed */
    INV_LOCK_FAILED = -4,  /* the lock was not had: the body did not run */
};

/* The body of every deduction: read the stock of sku, check it against
 * qty, spend work_ms of "business work", write the new stock, as separate
 * statements with no transaction: the read-modify-write that loses updates
 * when two callers interleave.  Only a lock around it makes it correct.
 * The remaining stock, or INV_INSUFFICIENT, INV_NOT_FOUND, INV_STORE_ERROR.
 * Blocks for the store's calls and the work. */
int inv_read_check_write(const char *sku, int qty, struct inv_store *store,
                         int work_ms);

/* Deduct qty units of sku: inv_read_check_write() under the lock.  Guarded
 * cluster-wide by the Redis lock "lock:stock:{sku}"; INV_LOCK_FAILED (and
 * lw_last_error() says why) when the lock could not be had. */
int deduct(const char *sku, int qty, struct inv_store *store, int work_ms);

/* The same body with no lock at all: what --no-lock runs. */
int deduct_unguarded(const char *sku, int qty, struct inv_store *store,
                     int work_ms);

/* Place the order order_key (an idempotency key: 1..64 of [A-Za-z0-9_-])
 * for qty units of sku: deduct() once per key within 24 hours across every
 * instance (REDIS_ONCE "order:{order_key}").  The first call for a key runs
 * it, lw_last_error() LW_OK (LW_ELOST when the mark was lost meanwhile);
 * a later one, or one that waited for the first, gets the first call's
 * result and LW_EDONE.  INV_LOCK_FAILED when neither happened: the mark
 * could not be had (lw_last_error() says why) or the run could not take
 * the stock lock (*deduct_err says why); the key is then free for a retry.
 * Not on an event loop: it waits on the calling thread. */
int place_order(const char *order_key, const char *sku, int qty,
                struct inv_store *store, int work_ms, int *deduct_err);

/* What --no-lock runs: deduct_unguarded() on every call, replays too. */
int place_order_unguarded(const char *order_key, const char *sku, int qty,
                          struct inv_store *store, int work_ms);

#endif /* INV_INVENTORY_H */

/*
 * The event loop's annotated function: deduct() of deduct.c with
 * `loop = inv_loop`.  It sits alone in this file, as deduct() does, so the
 * generator weaves exactly the code that needs the lock.
 *
 * A call returns at once (the HTTP handler goes back to the loop); the body
 * runs later on the loop's thread, once "stock:{sku}" is held — the same
 * key the threaded instances take, so all of them exclude each other — with
 * the arguments of the call, copied.  What the pointers point to lives on:
 * evhttp keeps a request until it is answered, and sku is the handler's
 * heap copy, freed with the answer.  Waiting for the lock never blocks the
 * loop (lockweave's own threads wait); the body does, for as long as it
 * runs: inv_read_check_write()'s SQLite calls and work are blocking.
 */
#include "inventory.h"
#include "loop.h"

#include <lockweave.h>

#include <stdint.h>

/* As deduct(): 10 s lease (renewed by the watchdog while the body runs),
 * 5 s to wait for a busy lock, then on_fail answers 503 with why. */
REDIS_LOCK("stock:{sku}", 10s, 5s, loop = inv_loop,
           on_fail = inv_loop_answer(req, sku, qty, INV_LOCK_FAILED,
                                     lw_last_error(), t0_us))
void deduct_on_loop(struct evhttp_request *req, char *sku, int qty,
                    struct inv_store *store, int work_ms, uint64_t t0_us)
{
    int rc = inv_read_check_write(sku, qty, store, work_ms);
    /* The lease is released once the body returns, without waiting; a
     * lease lost while the body ran (the watchdog could not renew it) is
     * known now, and answered as deduct()'s caller answers LW_ELOST. */
    inv_loop_answer(req, sku, qty, rc, lw_still_held() ? LW_OK : LW_ELOST,
                    t0_us);
}

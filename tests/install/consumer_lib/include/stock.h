/* The library's public header: declares its guarded function with the
 * annotation, so it includes <lockweave.h>. */
#ifndef STOCK_H
#define STOCK_H

#include <lockweave.h>

#include <stdint.h>

/* Takes qty from the stock of id; returns what is left, -1 when there is
 * not enough, and -2 when the body was not run (lw_last_error() says why). */
REDIS_LOCK("consumer_lib:{id}", 5s, 2s, on_fail = -2)
int stock_take(int64_t id, int qty);

#endif

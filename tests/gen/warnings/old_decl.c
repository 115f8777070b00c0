/* Older code declares a function without a prototype before defining it
 * (so not under -Wstrict-prototypes, which refuses that).  The wrapper
 * still needs its own declaration, which gcc finds redundant after this
 * one. */
#include <lockweave.h>
#include <stdint.h>

static int64_t total();

REDIS_LOCK("total:{id}", 1s, 0)
static int64_t total(int64_t id)
{
    return id * 2;
}

int64_t use_total(void);

int64_t use_total(void)
{
    return total(INT64_C(4));
}

#include "safety.h"
#include <stock_locks.h>

STOCK_LOCK("stock:{id}")
uint64_t safety_case(int id)
{
    (void)id;
    return lw_fence();
}

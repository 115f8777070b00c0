/* The users' way: an annotated function, woven by lockweave_generate(). */
#include <lockweave.h>

#include "mb_wrap.h"

REDIS_LOCK("mb:{id}", 10s, 5s)
int mb_section(int64_t id)
{
    return (int)(id & 7); /* no work: only the lock's cost is measured */
}

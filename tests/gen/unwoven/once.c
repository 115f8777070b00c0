/* REDIS_ONCE compiled without lockweave-gen: the link fails as for
 * REDIS_LOCK, naming what to do. */
#include <lockweave.h>

REDIS_ONCE("order:{id}", 10m)
int charge(int id)
{
    return id;
}

int main(void)
{
    return charge(1) == 1 ? 0 : 1;
}

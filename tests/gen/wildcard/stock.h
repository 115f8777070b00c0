#include <lockweave.h>
#include <stdint.h>

REDIS_LOCK("stock:{id}", 10s, 5s)
int deduct(int64_t id, int qty);

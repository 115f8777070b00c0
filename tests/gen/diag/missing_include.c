/* <lockweave.h> is never included. */
#include <stdint.h>

REDIS_LOCK("k:{id}", 1s, 0)
int64_t f(int64_t id) { return id; }

// expect: 4:1: error: REDIS_LOCK is used here without <lockweave.h>: add #include <lockweave.h> above it

#include <lockweave.h>

/* Durations are kept in milliseconds as uint32_t: anything longer than
 * ~49.7 days would wrap, so it is refused instead. */
REDIS_LOCK("a:{id}", 5000000s, 0)
int f1(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 99999999999999999999ms)
int f2(int id) { return id; }

REDIS_LOCK("a:{id}", 1194h, 0)
int f3(int id) { return id; }

// expect: 5:22: error: expire time '5000000s' is too long (at most 4294967295 ms)
// expect: 8:26: error: wait time '99999999999999999999ms' is too long (at most 4294967295 ms)
// expect: 11:22: error: expire time '1194h' is too long (at most 4294967295 ms)

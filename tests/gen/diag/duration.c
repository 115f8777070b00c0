#include <lockweave.h>

REDIS_LOCK("a:{id}", 10x, 0)
int f1(int id) { return id; }

REDIS_LOCK("a:{id}", 0, 0)
int f2(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, -5s)
int f3(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, soon)
int f4(int id) { return id; }

#define TTL 0ms
REDIS_LOCK("a:{id}", TTL, 1s)
int f5(int id) { return id; }

// expect: 3:22: error: bad expire time '10x': unknown unit 'x'
// expect: 6:22: error: expire time must be greater than zero
// expect: 9:26: error: wait time must not be negative: '-5s'
// expect: 12:26: error: bad wait time 'soon'
// expect: 16:22: error: expire time must be greater than zero

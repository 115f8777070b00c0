#include <lockweave.h>

REDIS_LOCK("a:{id}", 1s, 0)
int f(int id) { return id; }

unknown_type g(int x);

// expect: 6:1: error: unknown type name 'unknown_type'

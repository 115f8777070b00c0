#include <lockweave.h>

REDIS_LOCK("a:{x}", 1s, 0, on_fail = -1)
REDIS_LOCK("b:{y}", 1s, 0, on_fail = -2)
int f(int x, int y) { return x + y; }

REDIS_LOCK("a:{x}", 1s, 0)
REDIS_LOCK("b:{y}", 1s, 0)
int g(int x, int y);

REDIS_LOCK("a:{x}", 1s, 0)
REDIS_LOCK("c:{y}", 1s, 0)
int g(int x, int y) { return x + y; }

REDIS_LOCK("a:{x}", 1s, 0)
REDIS_LOCK("b:{nope}", 1s, 0)
int h(int x, int y) { return x + y; }

// expect: 4:28: error: on_fail given on two REDIS_LOCK annotations of 'f'
// expect: 3:28: note: first given here
// expect: 12:1: error: conflicting REDIS_LOCK annotations on 'g'
// expect: 16:15: error: 'nope' in the key is not a parameter of 'h'

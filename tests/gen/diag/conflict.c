#include <lockweave.h>

REDIS_LOCK("a:{id}", 1s, 0)
int f(int id);

REDIS_LOCK("b:{id}", 1s, 0)
int f(int id) { return id; }

int g(int id) { return id; }

REDIS_LOCK("g:{id}", 1s, 0)
int g(int id);

// expect: 6:1: error: conflicting REDIS_LOCK annotations on 'f'
// expect: 3:1: note: previous REDIS_LOCK is here
// expect: 11:1: error: REDIS_LOCK on a declaration after the function's definition
// expect: 9:5: note: previous definition is here

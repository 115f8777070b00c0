#include <lockweave.h>

REDIS_LOCK("a:{x}", 1s, 0, permits = 0)
int f1(int x) { return x; }

REDIS_LOCK("a:{x}", 1s, 0, permits = 65536)
int f2(int x) { return x; }

REDIS_LOCK("a:{x}", 1s, 0, permits = many)
int f3(int x) { return x; }

REDIS_LOCK("a:{x}", 1s, 0, permits = 2, permits = 3)
int f4(int x) { return x; }

// expect: 3:28: error: permits must be a whole number from 1 to 65535, not '0'
// expect: 6:28: error: permits must be a whole number from 1 to 65535, not '65536'
// expect: 9:28: error: permits must be a whole number from 1 to 65535, not 'many'
// expect: 12:41: error: option 'permits' given twice
// expect: 12:28: note: first given here

#include <lockweave.h>

REDIS_LOCK("v:{n}", 1s, 0)
int sum(int n, ...) { return n; }

REDIS_LOCK("k", 1s, 0)
int old(a) int a; { return a; }

#define NAME renamed
REDIS_LOCK("m:{x}", 1s, 0)
int NAME(int x) { return x; }

// expect: 4:5: error: 'sum' is variadic
// expect: 7:5: error: 'old' is an old-style (K&R) definition
// expect: 11:5: error: the name of 'renamed' comes from a macro expansion

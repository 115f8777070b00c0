#include <lockweave.h>

REDIS_LOCK("v:{n}", 1s, 0)
int sum(int n, ...) { return n; }

REDIS_LOCK("k", 1s, 0)
int old(a) int a; { return a; }

REDIS_LOCK("k", 1s, 0)
long old2(p, n) const char *p; long n; { return *p + n; }

#define NAME renamed
REDIS_LOCK("m:{x}", 1s, 0)
int NAME(int x) { return x; }

#define DEFINE_GETTER(fn) int fn(int id) { return id; }
REDIS_LOCK("g:{id}", 1s, 0)
DEFINE_GETTER(made)

#define LOCKED(fn) REDIS_LOCK("l:{id}", 1s, 0) int fn(int id) { return id; }
LOCKED(both)

// expect: 4:5: error: 'sum' is variadic
// expect: 7:5: error: 'old' is an old-style (K&R) definition
// expect: 10:6: error: 'old2' is an old-style (K&R) definition: REDIS_LOCK needs a prototype, as in 'old2(const char *p, long n)'
// expect: 14:5: error: the name of 'renamed' comes from the macro 'NAME'
// expect: 18:1: error: 'made' is defined by the macro 'DEFINE_GETTER'
// expect: 21:1: error: 'both' is defined by the macro 'LOCKED'

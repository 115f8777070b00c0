#include <lockweave.h>

/* The wrapper repeats the signature: a type with no name cannot be. */
REDIS_LOCK("a:{id}", 1s, 0)
struct { int x; } f1(int id) { return (struct { int x; }){id}; }

REDIS_LOCK("a:{n}", 1s, 0)
int f2(int n, int (*m)[n]) { return n + (*m)[0]; }

// expect: 5:19: error: the signature of 'f1' uses a type that cannot be written again
// expect: 8:5: error: the signature of 'f2' uses a type that cannot be written again

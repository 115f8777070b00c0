#include <lockweave.h>

/* An annotation on a declaration that declares nothing is dropped by clang
 * with a warning; the function after it must not be taken as unguarded
 * silently. */
REDIS_LOCK("stock:{id}", 1s, 0);
int deduct(int id) { return id; }

// expect: 6:1: error: REDIS_LOCK must stand before a function declaration or definition

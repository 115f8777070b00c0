#include <lockweave.h>

/* An annotation on a declaration that declares nothing is dropped by clang
 * (with a warning up to libclang 15, silently from 16); the function after
 * it must not be taken as unguarded silently. */
REDIS_LOCK("stock:{id}", 1s, 0);
int deduct(int id) { return id; }

/* A comment before the ';', a ')' in the key, the annotation on two lines. */
REDIS_LOCK("a:{id}", 1s, 0) /* ( */ ;
REDIS_LOCK("b:)", 1s,
           0)
;
int restock(int id) { return id; };

// expect: 6:1: error: REDIS_LOCK must stand before a function declaration or definition, not a declaration that declares nothing
// expect: 10:1: error: REDIS_LOCK must stand before a function declaration or definition, not a declaration that declares nothing
// expect: 11:1: error: REDIS_LOCK must stand before a function declaration or definition, not a declaration that declares nothing

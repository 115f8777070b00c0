#include <lockweave.h>

/* An annotation that clang drops with only a warning (-Wignored-attributes:
 * a struct definition without a declarator) must not vanish silently: the
 * function the writer meant to guard would run unguarded. */
REDIS_LOCK("stock:{id}", 1s, 0)
struct stock { int id; };
int deduct(int id) { return id; }

// expect: 6:1: error: REDIS_LOCK must stand before a function declaration or definition

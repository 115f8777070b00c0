#include <lockweave.h>

REDIS_LOCK("v", 1s, 0)
int counter;

struct s {
    REDIS_LOCK("f", 1s, 0) int field;
};

REDIS_LOCK("t", 1s, 0)
typedef int myint;

int h(REDIS_LOCK("p", 1s, 0) int x);

// expect: 3:1: error: REDIS_LOCK must stand before a function declaration or definition, not a variable
// expect: 7:5: error: REDIS_LOCK must stand before a function declaration or definition, not a struct field
// expect: 10:1: error: REDIS_LOCK must stand before a function declaration or definition, not a typedef
// expect: 13:7: error: REDIS_LOCK must stand before a function, not a parameter

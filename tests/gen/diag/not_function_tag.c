#include <lockweave.h>

union REDIS_LOCK("u", 1s, 0) un { int a; };

enum REDIS_LOCK("e", 1s, 0) en { E1 };

enum en2 { E2 REDIS_LOCK("c", 1s, 0) };

// expect: 3:7: error: REDIS_LOCK must stand before a function declaration or definition, not a union
// expect: 5:6: error: REDIS_LOCK must stand before a function declaration or definition, not an enum
// expect: 7:15: error: REDIS_LOCK must stand before a function declaration or definition, not an enumerator

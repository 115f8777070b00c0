// A lambda cannot carry REDIS_LOCK: the parse says where, and what to do.
#include <lockweave.h>

int outer(int y);
int outer(int y)
{
    auto l = REDIS_LOCK("lam", 1s, 1s) [](int z) { return z; };
    return l(y);
}

// expect: 7:14: error: REDIS_LOCK must stand before a function declaration or definition (expected expression); a lambda cannot carry it

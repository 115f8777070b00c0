// A member function defined in its class, in a header.
#include <lockweave.h>
struct Counter {
    REDIS_LOCK("counter", 1s, 1s)
    int bump() { return ++n; }
    int n = 0;
};

// Templates, constructors, destructors and conversions cannot be woven.
#include <lockweave.h>

template <class T>
REDIS_LOCK("t:{x}", 1s, 1s)
T twice(T x) { return x + x; }

template <class T> struct Box {
    REDIS_LOCK("box", 1s, 1s)
    T get() const { return v; }
    T v;
};

struct Account {
    REDIS_LOCK("acct", 1s, 1s)
    Account() {}
    REDIS_LOCK("acct", 1s, 1s)
    ~Account();
    REDIS_LOCK("acct", 1s, 1s)
    explicit operator bool() const { return true; }
};

// Reported once, where it is written, not again at the definition.
Account::~Account() {}

// expect: 5:1: error: REDIS_LOCK on 'twice', a function template
// expect: 9:5: error: REDIS_LOCK on 'get', a member of the class template 'Box'
// expect: 15:5: error: REDIS_LOCK on a constructor of 'Account'
// expect: 17:5: error: REDIS_LOCK on the destructor of 'Account'
// expect: 19:5: error: REDIS_LOCK on 'operator bool', a conversion function

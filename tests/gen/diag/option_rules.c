#include <lockweave.h>

/* Option rules the other cases leave out: each option's bounds hold at
 * their edges, every option needs a value, a C expression option is given
 * by one annotation of a function, and combinations are checked whatever
 * the order the options are written in. */
REDIS_LOCK("a:{x}", 10s, 0, hold_at_least = 10s, max_renew = 0,
           permits = 65535, mode = write)
int f1(int x) { return x; }

REDIS_LOCK("a:{x}", 1s, 0, permits = 1, hold_at_least = 0)
int f2(int x) { return x; }

REDIS_LOCK("a:{x}", 1s, 0, skip_if = x > 1)
REDIS_LOCK("b:{y}", 1s, 0, skip_if = y > 2)
int f3(int x, int y) { return x + y; }

REDIS_LOCK("a:{x}", 1s, 0)
REDIS_LOCK("b:{y}", 1s, 0, on_fail = 1)
void f4(int x, int y) { (void)x; (void)y; }

REDIS_LOCK("a:{x}", 10s, 0, permits = 2, mode = read)
int f5(int x) { return x; }

REDIS_LOCK("a:{x}", 10s, 0, hold_at_least = -1s)
int f6(int x) { return x; }

REDIS_LOCK("a:{x}", 10s, 0, max_renew =, mode =, permits =, skip_if =)
int f7(int x) { return x; }

REDIS_LOCK("a:{x}", 10s, 0, max_renew = 2147483648)
int f8(int x) { return x; }

// expect: 15:28: error: skip_if given on two REDIS_LOCK annotations of 'f3'
// expect: 14:28: note: first given here
// expect: 19:1: error: on_fail given, but 'f4' returns void
// expect: 22:29: error: permits cannot be given with mode = read
// expect: 25:29: error: hold_at_least must not be negative: '-1s'
// expect: 28:29: error: option 'max_renew' needs a value
// expect: 28:42: error: option 'mode' needs a value
// expect: 28:50: error: option 'permits' needs a value
// expect: 28:61: error: option 'skip_if' needs a value
// expect: 31:29: error: max_renew must be a whole number >= 0, not '2147483648'

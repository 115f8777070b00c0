#include <lockweave.h>

REDIS_LOCK("a:{id}", 1s, 0, retries = 3)
int f1(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, on_fail = -1, max_renew = 2, on_fail = -2)
int f2(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, max_renew = -1)
int f3(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, 42)
int f4(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, on_fail = 0)
void f5(int id) { (void)id; }

// expect: 3:29: error: unknown REDIS_LOCK option 'retries'
// expect: 6:58: error: option 'on_fail' given twice
// expect: 6:29: note: first given here
// expect: 9:29: error: max_renew must be a whole number >= 0, not '-1'
// expect: 12:29: error: expected 'option = value' after the wait time, not '42'
// expect: 15:1: error: on_fail given, but 'f5' returns void

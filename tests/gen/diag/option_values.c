#include <lockweave.h>

REDIS_LOCK("a:{id}", 1s, 0, on_fail =)
int f1(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, max_renew = lots)
int f2(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, max_renew = 3000000000)
int f3(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, on_fail == 1)
int f4(int id) { return id; }

REDIS_LOCK("a:{id}", 1s, 0, skip_if = id > 0, skip_if = 0)
int f5(int id) { return id; }

REDIS_LOCK("a", 1s, 0, a=1, a=2, a=3, a=4, a=5, a=6, a=7, a=8, a=9, a=10, a=11, a=12, a=13, a=14, a=15, a=16, a=17, a=18, a=19, a=20, a=21, a=22, a=23, a=24, a=25, a=26, a=27, a=28, a=29, a=30)
int f6(int id) { return id; }

// expect: 3:29: error: option 'on_fail' needs a value
// expect: 6:29: error: max_renew must be a whole number >= 0, not 'lots'
// expect: 9:29: error: max_renew must be a whole number >= 0, not '3000000000'
// expect: 12:29: error: expected 'option = value' after the wait time, not 'on_fail == 1'
// expect: 15:47: error: option 'skip_if' given twice
// expect: 15:29: note: first given here
// expect: 18:1: error: cannot read the REDIS_LOCK arguments

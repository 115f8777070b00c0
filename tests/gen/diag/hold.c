#include <lockweave.h>

REDIS_LOCK("job:a", 10s, 0, hold_at_least = 11s)
int f1(int id) { return id; }

REDIS_LOCK("job:b", 10s, 0, hold_at_least = soon)
int f2(int id) { return id; }

REDIS_LOCK("job:c", 10s, 0, hold_at_least = 1s, hold_at_least = 2s)
int f3(int id) { return id; }

REDIS_LOCK("job:d", 10s, 0, hold_at_least =)
int f4(int id) { return id; }

// expect: 3:29: error: hold_at_least (11000 ms) is longer than the expire time (10000 ms)
// expect: 6:29: error: bad hold_at_least 'soon'
// expect: 9:49: error: option 'hold_at_least' given twice
// expect: 9:29: note: first given here
// expect: 12:29: error: option 'hold_at_least' needs a value

#include <lockweave.h>

REDIS_LOCK("doc:{id}", 10s, 5s, mode = shared)
int f1(int id) { return id; }

REDIS_LOCK("doc:{id}", 10s, 5s, mode = read, permits = 4)
int f2(int id) { return id; }

REDIS_LOCK("doc:{id}", 10s, 5s, mode = read, mode = write)
int f3(int id) { return id; }

// expect: 3:33: error: mode must be read or write, not 'shared'
// expect: 6:46: error: permits cannot be given with mode = read
// expect: 9:46: error: option 'mode' given twice
// expect: 9:33: note: first given here

#include <lockweave.h>

REDIS_LOCK("a:{id", 1s, 0)
int f1(int id) { return id; }

REDIS_LOCK("a:}:{}", 1s, 0)
int f2(int id) { return id; }

REDIS_LOCK("a:{id+1}", 1s, 0)
int f3(int id) { return id; }

REDIS_LOCK(f4_key, 1s, 0)
int f4(int id) { return id; }

REDIS_LOCK("a")
int f5(int id) { return id; }

// expect: 3:15: error: unterminated '{' in the key
// expect: 6:15: error: unmatched '}' in the key
// expect: 6:17: error: empty '{}' in the key
// expect: 9:18: error: unexpected '+' in '{id+1}'
// expect: 12:12: error: the lock key must be a string literal, not 'f4_key'
// expect: 15:1: error: REDIS_LOCK needs a key, an expire time and a wait time

#include <lockweave.h>

struct s { int a; };

REDIS_LOCK("", 1s, 0)
int f1(int id) { return id; }

REDIS_LOCK("a:{1x}:{ id}", 1s, 0)
int f2(int id) { return id; }

REDIS_LOCK("a:{v.}:{p->}", 1s, 0)
int f3(struct s v, struct s *p) { return v.a + p->a; }

// expect: 5:12: error: the lock key is empty
// expect: 8:15: error: '{1x}' in the key is not a parameter name (write '{{' for a literal brace)
// expect: 8:20: error: '{ id}' in the key is not a parameter name
// expect: 11:18: error: expected a field name in '{v.}'
// expect: 11:24: error: expected a field name in '{p->}'

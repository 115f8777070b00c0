#include <lockweave.h>

struct s { int a; double d; int arr[2]; };

REDIS_LOCK("f:{price}", 1s, 0)
int f(double price) { return (int)price; }

REDIS_LOCK("s:{v}:{p}:{q}:{v.d}:{v.arr}:{p.a}:{v->a}:{v.nope}", 1s, 0)
int g(struct s v, struct s *p, int *q) { return v.a + p->a + *q; }

// expect: 5:15: error: '{price}' is floating point ('double')
// expect: 8:15: error: '{v}' is a struct or union ('struct s') and cannot be printed
// expect: 8:19: error: '{p}' is a pointer to a struct ('struct s *')
// expect: 8:23: error: '{q}' has type 'int *', which cannot be printed in a lock key
// expect: 8:27: error: '{v.d}' is floating point ('double')
// expect: 8:33: error: '{v.arr}' is an array of type 'int[2]': only char arrays
// expect: 8:43: error: '.' in '{p.a}' needs a struct, but 'p' has type 'struct s *' (use '->')
// expect: 8:49: error: '->' in '{v->a}' needs a pointer to a struct, but 'v' has type 'struct s' (use '.')
// expect: 8:57: error: 'struct s' has no field named 'nope'

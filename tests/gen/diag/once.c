#include <lockweave.h>

struct pair {
    int a, b;
};

REDIS_ONCE("a:{id}", soon)
int f1(int id) { return id; }

REDIS_ONCE("b:{id}", 10s, failed_if = id < 0)
void f2(int id) { (void)id; }

REDIS_ONCE("c:{id}", 10s, loop = 0)
void f3(int id) { (void)id; }

REDIS_ONCE("d:{id}", 10s)
struct pair f4(int id) { struct pair p = {id, id}; return p; }

REDIS_ONCE("e:{id}", 10s, expire = 20s)
int f5(int id) { return id; }

REDIS_ONCE("f:{id}", 10s)
REDIS_LOCK("f:{id}", 10s, 0)
int f6(int id) { return id; }

REDIS_ONCE("g:{id}", 10s, permits = 2)
int f7(int id) { return id; }

REDIS_ONCE("h:{id}")
int f8(int id) { return id; }

REDIS_ONCE("i:{id}", 0)
int f9(int id) { return id; }

// expect: 7:22: error: bad window 'soon'
// expect: 10:1: error: failed_if given, but 'f2' returns void
// expect: 13:27: error: REDIS_ONCE does not take loop = yet
// expect: 16:1: error: REDIS_ONCE on 'f4', which returns 'struct pair'
// expect: 19:27: error: expire (20000 ms) is longer than the window (10000 ms)
// expect: 23:1: error: 'f6' has REDIS_ONCE and another annotation
// expect: 26:27: error: unknown REDIS_ONCE option 'permits'
// expect: 29:1: error: REDIS_ONCE needs a key and a window
// expect: 32:22: error: window must be greater than zero

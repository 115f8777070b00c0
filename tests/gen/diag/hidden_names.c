#include <lockweave.h>

/* The wrapper's own code uses names of <lockweave.h> and <stdint.h>, the
 * function's name (to call the body) and the return type: a parameter of
 * the wrapper that hides one breaks it, or changes what it does. */
REDIS_LOCK("a:{id}", 1s, 0)
int f1(int id, int LW_OK) { return id + LW_OK; }

REDIS_LOCK("a:{id}", 1s, 0)
int f2(int id, const char *lw_guard) { return id + (lw_guard != 0); }

REDIS_LOCK("a:{id}", 1s, 0)
int f3(int id, int lw_guard_enter, long int64_t)
{
    return id + lw_guard_enter + (int)int64_t;
}

REDIS_LOCK("a:{id}", 1s, 0)
int f4(unsigned id, int uint64_t) { return (int)id + uint64_t; }

REDIS_LOCK("a:{id}", 1s, 0)
int f5(int id, int f5) { return id + f5; }

typedef long count;
REDIS_LOCK("a:{id}", 1s, 0)
count f6(int id, count count) { return id + count; }

/* The wrapper writes the types of the first declaration with the names of
 * the annotated one. */
typedef int handle;
int f7(int id, int h, handle n);
REDIS_LOCK("a:{id}", 1s, 0)
int f7(int id, int handle, int n);
int f7(int id, int h, handle n) { return id + h + n; }

/* Fine: a tag cannot be hidden, a void result is not written, and a
 * parameter may hide what only comes before it. */
struct point {
    int x;
};
REDIS_LOCK("a:{id}", 1s, 0)
struct point f8(int id, int point) { return (struct point){id + point}; }

typedef void nothing;
REDIS_LOCK("a:{id}", 1s, 0)
nothing f9(int id, int nothing) { (void)(id + nothing); }

REDIS_LOCK("a:{id}", 1s, 0)
int f10(handle id, int handle) { return id + handle; }

// expect: 7:20: error: parameter 'LW_OK' of 'f1' would hide <lockweave.h>'s 'LW_OK', which the lock's wrapper uses; rename the parameter
// expect: 10:28: error: parameter 'lw_guard' of 'f2' would hide <lockweave.h>'s 'lw_guard'
// expect: 13:20: error: parameter 'lw_guard_enter' of 'f3' would hide <lockweave.h>'s 'lw_guard_enter'
// expect: 13:41: error: parameter 'int64_t' of 'f3' would hide <stdint.h>'s 'int64_t'
// expect: 19:25: error: parameter 'uint64_t' of 'f4' would hide <stdint.h>'s 'uint64_t'
// expect: 22:20: error: parameter 'f5' of 'f5' would hide the function's own name, which the lock's wrapper uses
// expect: 26:24: error: parameter 'count' of 'f6' would hide the type name 'count' in its return type
// expect: 33:20: error: parameter 'handle' of 'f7' would hide the type name 'handle' in the type of parameter 'n'

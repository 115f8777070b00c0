#include <lockweave.h>

/* Names beginning with lw__ are the wrapper's own (its guard, options,
 * result, the names it gives unnamed parameters): a parameter or a name in
 * on_fail or skip_if cannot have one. */
REDIS_LOCK("a:{id}", 1s, 0)
int f1(int id, int lw__g, int lw__o) { return id + lw__g + lw__o; }

REDIS_LOCK("a:{lw__r}", 1s, 0)
long f2(long lw__r) { return lw__r; }

REDIS_LOCK("a:{x}", 1s, 0)
REDIS_LOCK("b:{y}", 1s, 0)
int f3(int x, int y, int lw__gs, int lw__n, int lw__g0)
{
    return x + y + lw__gs + lw__n + lw__g0;
}

REDIS_LOCK("a:{id}", 1s, 0)
int f4(int id, int, int lw__p1) { return id + lw__p1; }

/* The wrapper names parameters as the annotated declaration does. */
REDIS_LOCK("a:{id}", 1s, 0)
int f5(int id, int lw__count);
int f5(int id, int count) { return id + count; }

REDIS_LOCK("a:{id}", 1s, 0)
int f6(int id, int count);
int f6(int id, int lw__count) { return id + lw__count; }

static const int lw__o = -1;
static int lw__n;

REDIS_LOCK("a:{id}", 1s, 0, on_fail = lw__o)
int f7(int id) { return id; }

REDIS_LOCK("a:{x}", 1s, 0)
REDIS_LOCK("b:{y}", 1s, 0, skip_if = lw__n != 0)
int f8(int x, int y) { return x + y; }

/* Only names count: a field or text that holds the prefix is fine. */
struct rec {
    int lw__id;
};
REDIS_LOCK("lw__:{r.lw__id}", 1s, 0, skip_if = r.lw__id < 0, on_fail = -1)
int f9(struct rec r) { return r.lw__id; }

// expect: 7:20: error: parameter 'lw__g' of 'f1': names beginning with 'lw__' are reserved for lockweave's generated code; rename the parameter
// expect: 7:31: error: parameter 'lw__o' of 'f1': names beginning with 'lw__' are reserved
// expect: 10:14: error: parameter 'lw__r' of 'f2': names beginning with 'lw__' are reserved
// expect: 14:26: error: parameter 'lw__gs' of 'f3': names beginning with 'lw__' are reserved
// expect: 14:38: error: parameter 'lw__n' of 'f3': names beginning with 'lw__' are reserved
// expect: 14:49: error: parameter 'lw__g0' of 'f3': names beginning with 'lw__' are reserved
// expect: 20:25: error: parameter 'lw__p1' of 'f4': names beginning with 'lw__' are reserved
// expect: 24:20: error: parameter 'lw__count' of 'f5': names beginning with 'lw__' are reserved
// expect: 34:29: error: on_fail names 'lw__o': names beginning with 'lw__' are reserved for lockweave's generated code; rename it
// expect: 38:28: error: skip_if names 'lw__n': names beginning with 'lw__' are reserved

/* One of each signature kind the wrapper must reproduce. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stddef.h>
#include <lockweave.h>

typedef struct point {
    int x, y;
} point;
enum mode { FAST, SLOW };
struct req {
    unsigned long id;
    char name[8];
    const char *owner;
};

REDIS_LOCK("pt:{x}", 1s, 0)
static point mkpoint(int x, int y)
{
    point p = {x, y};
    return p;
}

REDIS_LOCK("m:{m}:{b}", 1500ms, 250ms, max_renew = 4)
static inline int mode_of(enum mode m, bool b)
{
    return (int)m + b;
}

REDIS_LOCK("req:{r->id}/{r->name}/{r->owner}", 2m, 0, on_fail = NULL)
const char *owner_of(const struct req *restrict r, char *restrict scratch)
{
    (void)scratch;
    return r->owner;
}

/* Arrays, a function pointer parameter, a function pointer return. */
static int inc(int v) { return v + 1; }
REDIS_LOCK("\"quoted\"?{{}}\t\xc3\xa9:{n}", 1s, 0)
int (*apply(size_t n, const int vals[4], int (*f)(int)))(int)
{
    (void)n;
    (void)vals;
    return f ? f : inc;
}

/* void, skip_if, the annotation on a prototype with an unnamed parameter. */
static bool done[16];
REDIS_LOCK("job:{job}", 30s, 1s, skip_if = done[job % 16])
void run_job(unsigned job, int);
void run_job(unsigned job, int unused)
{
    (void)unused;
    done[job % 16] = true;
    if (job > 0)
        run_job(job - 1, 0);
}

/* External inline: the body keeps external linkage (C11 6.7.4p3). */
REDIS_LOCK("twice:{v}", 1s, 0)
inline long twice(long v) { return 2 * v; }
extern inline long twice(long v);

/* An explicit visibility on the definition moves to the wrapper. */
__attribute__((visibility("default"))) REDIS_LOCK("exp:{id}", 1s, 0)
int exported(int id) { return id; }

int use_all(void)
{
    struct req r = {7, "n", "o"};
    run_job(3, 0);
    return mkpoint(1, 2).x + mode_of(FAST, true) + (owner_of(&r, NULL) != NULL) +
           apply(1, NULL, NULL)(1) + (int)twice(2);
}

/* Every signature kind lockweave-gen must reproduce, each checked to run
 * with its lock held, on the expected key. */
#define _GNU_SOURCE /* before any include: the woven file must keep this */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gen_check.h"
#include "sig.h"

#define STOCK_KEY "stock:{stock_id}"
#define LOCK_TTL  10s

typedef struct point {
    int x, y;
} point;
enum color { RED = 3, GREEN = 7 };

static int body_held(void)
{
    return lw_still_held() && lw_fence() != 0;
}

/* Plain extern function; the key and expire come from macros. */
REDIS_LOCK(STOCK_KEY, LOCK_TTL, 0)
int deduct(int64_t stock_id, int qty)
{
    (void)stock_id;
    CHECK(body_held());
    CHECK(key_busy("stock:42") == 1);
    CHECK(strcmp(__func__, "deduct") == 0); /* the body keeps its name */
    return qty * 2;
}

/* static, pointer return, const and restrict. */
REDIS_LOCK("user:{u}", 2s, 0)
static const char *greet(const char *restrict u, char *restrict out, size_t n)
{
    CHECK(body_held());
    CHECK(key_busy("user:ann") == 1);
    snprintf(out, n, "hi %s", u);
    return out;
}

/* static inline, struct return, unsigned and enum keys. */
REDIS_LOCK("pt:{x}:{c}", 2s, 0)
static inline point make_point(unsigned x, enum color c)
{
    CHECK(body_held());
    CHECK(key_busy("pt:5:7") == 1);
    point p = {(int)x, (int)c};
    return p;
}

/* Array and function-pointer parameters, bool key, void return. */
static int sum_calls;
REDIS_LOCK("sum:{flag}:{{literal}}", 2s, 0)
void sum(bool flag, const int vals[3], int (*map)(int), int *out)
{
    (void)flag;
    CHECK(body_held());
    CHECK(key_busy("sum:1:{literal}") == 1);
    *out = map(vals[0]) + map(vals[1]) + map(vals[2]);
    sum_calls++;
}

static int twice(int v)
{
    return v * 2;
}

/* Function returning a function pointer. */
static int add1(int v)
{
    return v + 1;
}
REDIS_LOCK("fp:{which}", 2s, 0)
int (*pick(int which))(int)
{
    CHECK(body_held());
    CHECK(key_busy("fp:1") == 1);
    return which ? add1 : twice;
}

/* Struct fields through -> and ., char array and char pointer. */
REDIS_LOCK("who:{o->user}:{p.x}", 2s, 0)
long owner(const struct order *o, point p)
{
    CHECK(body_held());
    CHECK(key_busy("who:bob:9") == 1);
    return o->id + p.x;
}

/* Annotated in sig.h, defined here without the annotation. */
int place(const struct order *o)
{
    CHECK(body_held());
    CHECK(key_busy("order:17:SKU-1") == 1);
    return (int)o->id;
}

/* A definition with an unnamed parameter needs C23 for gcc; a prototype
 * with one is fine anywhere. */
REDIS_LOCK("proto:{id}", 2s, 0)
int proto_only(int id, int);
int proto_only(int id, int unused)
{
    (void)unused;
    CHECK(body_held());
    CHECK(key_busy("proto:3") == 1);
    return id;
}

int main(void)
{
    char buf[32];
    CHECK(deduct(42, 4) == 8);
    CHECK(lw_last_error() == LW_OK);
    CHECK(strcmp(greet("ann", buf, sizeof buf), "hi ann") == 0);
    point p = make_point(5, GREEN);
    CHECK(p.x == 5 && p.y == 7);
    int vals[3] = {1, 2, 3}, total = 0;
    sum(true, vals, twice, &total);
    CHECK(total == 12 && sum_calls == 1);
    CHECK(pick(1)(1) == 2);
    struct order o = {17, "SKU-1", "bob"};
    CHECK(owner(&o, (point){9, 0}) == 26);
    CHECK(place(&o) == 17);
    CHECK(call_place_from_other_file(&o) == 17);
    CHECK(place_pointer()(&o) == 17);
    int (*fp)(int64_t, int) = deduct;
    CHECK(fp(42, 1) == 2);
    CHECK(proto_only(3, 0) == 3);
    /* Outside any guarded call nothing is held. */
    CHECK(lw_fence() == 0);
    CHECK(key_busy("stock:42") == 0);
    lw_stats st;
    lw_stats_get(&st);
    CHECK(st.held == 0);
    return gen_done("gen_run_signatures");
}

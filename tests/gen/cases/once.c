/* REDIS_ONCE: each stored result type, failed_if, void, and a struct with
 * on_fail. */
#include <lockweave.h>
#include <stdbool.h>
#include <stdint.h>

enum order_state { ORDER_NEW, ORDER_PAID };

struct receipt {
    int64_t id;
    int cents;
};

REDIS_ONCE("order:{id}", 10m)
int64_t charge(int64_t id, int cents)
{
    return id * 100 + cents;
}

REDIS_ONCE("order:{id}:pay", 1h, expire = 20s, wait = 5s,
           failed_if = lw_result < 0, on_fail = -1)
int pay(int64_t id)
{
    return (int)id;
}

REDIS_ONCE("state:{id}", 30s)
enum order_state state(unsigned id)
{
    return id ? ORDER_PAID : ORDER_NEW;
}

REDIS_ONCE("flag:{id}", 5s)
bool flag(int id)
{
    return id > 0;
}

REDIS_ONCE("ratio:{id}", 2m, failed_if = lw_result != lw_result)
double ratio(int id)
{
    return id / 3.0;
}

REDIS_ONCE("ship:{id}", 1m)
void ship(int id)
{
    (void)id;
}

REDIS_ONCE("receipt:{id}", 1m, on_fail = (struct receipt){-1, 0})
struct receipt make_receipt(int64_t id)
{
    struct receipt r = {id, 1};
    return r;
}

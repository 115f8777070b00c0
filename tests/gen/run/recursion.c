/* Recursion and mutual recursion on one key: every call goes through the
 * wrapper and re-enters the lock the thread already holds. */
#include "gen_check.h"

static int depth_seen;

REDIS_LOCK("count:{tag}", 5s, 0)
int countdown(int tag, int n)
{
    CHECK(lw_still_held());
    CHECK(key_busy("count:3") == 1);
    depth_seen++;
    return n == 0 ? 0 : 1 + countdown(tag, n - 1);
}

int is_even(unsigned n, int account);
int is_odd(unsigned n, int account);

REDIS_LOCK("acct:{account}", 5s, 0)
int is_even(unsigned n, int account)
{
    CHECK(lw_still_held());
    return n == 0 ? 1 : is_odd(n - 1, account);
}

REDIS_LOCK("acct:{account}", 5s, 0)
int is_odd(unsigned n, int account)
{
    CHECK(lw_still_held());
    return n == 0 ? 0 : is_even(n - 1, account);
}

int main(void)
{
    lw_stats before, after;
    lw_stats_get(&before);
    CHECK(countdown(3, 3) == 3);
    CHECK(depth_seen == 4);
    CHECK(lw_last_error() == LW_OK);
    CHECK(is_even(10, 7) == 1);
    CHECK(is_odd(7, 7) == 1);
    CHECK(lw_last_error() == LW_OK);
    lw_stats_get(&after);
    /* One Redis acquisition per outermost call, the rest re-entered. */
    CHECK(after.acquired - before.acquired == 3);
    CHECK(after.reentered - before.reentered == 3 + 10 + 7);
    CHECK(key_busy("count:3") == 0);
    CHECK(key_busy("acct:7") == 0);
    return gen_done("gen_run_recursion");
}

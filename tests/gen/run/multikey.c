/* Several REDIS_LOCK annotations on one function: every key is held while
 * the body runs (another client finds each busy), a key named twice is
 * taken once, one busy key keeps the body from running and the others are
 * given back, on_fail given on one annotation applies to the function, and
 * a declaration may carry the same set as its definition. */
#include <stdint.h>

#include "gen_check.h"

static int64_t balance[4] = {100, 100, 100, 100};
static int held_from, held_to, runs;

int transfer(int from, int to, int64_t cents);

REDIS_LOCK("acct:{from}", 10s, 300ms)
REDIS_LOCK("acct:{to}", 10s, 300ms, on_fail = -1)
int transfer(int from, int to, int64_t cents);

REDIS_LOCK("acct:{to}", 10s, 300ms, on_fail = -1)
REDIS_LOCK("acct:{from}", 10s, 300ms)
int transfer(int from, int to, int64_t cents)
{
    char kf[16], kt[16];
    snprintf(kf, sizeof kf, "acct:%d", from);
    snprintf(kt, sizeof kt, "acct:%d", to);
    held_from = key_busy(kf);
    held_to = key_busy(kt);
    runs++;
    CHECK(lw_fence_of(kf, strlen(kf)) != 0);
    CHECK(lw_fence_of(kt, strlen(kt)) != 0);
    balance[from] -= cents;
    balance[to] += cents;
    return 0;
}

int main(void)
{
    struct gen_holder h;

    CHECK_EQ(transfer(0, 1, 30), 0);
    CHECK_EQ(lw_last_error(), LW_OK);
    CHECK_EQ(held_from, 1);
    CHECK_EQ(held_to, 1);
    CHECK_EQ(key_busy("acct:0"), 0); /* both released */
    CHECK_EQ(key_busy("acct:1"), 0);

    CHECK_EQ(transfer(2, 2, 5), 0); /* the same key twice: taken once */
    CHECK_EQ(lw_last_error(), LW_OK);
    CHECK_EQ(held_from, 1);

    CHECK_EQ(gen_hold(&h, "acct:3"), 0);
    runs = 0;
    CHECK_EQ(transfer(0, 3, 10), -1);
    CHECK_EQ(lw_last_error(), LW_ETIMEOUT);
    CHECK_EQ(runs, 0);
    CHECK_EQ(key_busy("acct:0"), 0); /* given back */
    gen_release(&h);

    CHECK_EQ(balance[0], 70);
    CHECK_EQ(balance[1], 130);
    CHECK_EQ(balance[3], 100);
    return gen_done("multikey");
}

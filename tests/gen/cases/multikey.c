/* Several keys as one lock: both accounts, or neither. */
#include <lockweave.h>
#include <stdint.h>

static int64_t balance[16];

REDIS_LOCK("acct:{from}", 10s, 5s)
REDIS_LOCK("acct:{to}", 10s, 5s, on_fail = -1, skip_if = cents == 0)
int transfer(int from, int to, int64_t cents)
{
    balance[from] -= cents;
    balance[to] += cents;
    return 0;
}

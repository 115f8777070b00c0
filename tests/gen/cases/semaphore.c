/* At most 8 calls to a tenant's API at once, across every host. */
#include <lockweave.h>

int api_call(const char *tenant, int req);

REDIS_LOCK("api:{tenant}", 30s, 2s, permits = 8, on_fail = -1)
int api_call(const char *tenant, int req)
{
    (void)tenant;
    return req;
}

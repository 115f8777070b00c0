/* A program outside the lockweave tree, built against an installed
 * lockweave: takes and releases one lock on the Redis named by
 * $LOCKWEAVE_REDIS_URL.  Exit status 0 only if everything worked. */
#include <lockweave.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    lw_lock_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.expire_ms = 5000;
    opts.wait_ms = 2000;
    opts.max_renew = -1;

    lw_guard g;
    int rc = lw_lock(&g, "consumer", 8, &opts);
    if (rc != LW_OK) {
        fprintf(stderr, "consumer: lock: %s\n", lw_strerror(rc));
        return 1;
    }
    uint64_t fence = lw_fence();
    int held = lw_still_held();
    rc = lw_guard_leave(&g);
    if (rc != LW_OK || fence == 0 || held != 1) {
        fprintf(stderr, "consumer: leave %s, fence %llu, held %d\n",
                lw_strerror(rc), (unsigned long long)fence, held);
        return 1;
    }
    printf("consumer (lockweave %s): locked and released, fence %llu\n",
           LW_VERSION, (unsigned long long)fence);
    lw_shutdown();
    return 0;
}

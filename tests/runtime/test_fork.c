/* fork() while holding a lock: the child does not believe it holds the
 * parent's lock, cannot release it (by leave or lw_shutdown), cannot re-enter
 * it, and can still take locks of its own on fresh connections.  The parent
 * keeps its lock, renewed, and releases it normally, its connections
 * untouched by the child (runtime_tls_fork: over TLS too). */
#include "util.h"

#include <sys/wait.h>
#include <unistd.h>

#define EXPIRE_MS 1000

static rh_server srv;

static void child(lw_guard *inherited)
{
    printf("child: lw_still_held()=%d lw_fence()=%llu\n", lw_still_held(),
           (unsigned long long)lw_fence());
    CHECK_EQ(lw_still_held(), 0);

    /* Not a re-entry: the lock belongs to another process now. */
    lw_guard g;
    int rc = lock_str(&g, "forked", EXPIRE_MS, 0);
    printf("child: entering the parent's key: %s\n", lw_strerror(rc));
    CHECK(rc != LW_OK);

    /* Its own lock works, over its own connection. */
    CHECK_RC(lock_str(&g, "child-own", EXPIRE_MS, 1000), LW_OK);
    CHECK(lw_fence() > 0);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lock_exists(&srv, "child-own"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "child-own"), 0);

    rc = lw_guard_leave(inherited);
    printf("child: leave of the inherited guard: %s\n", lw_strerror(rc));
    CHECK(rc != LW_OK);
    CHECK_EQ(lock_exists(&srv, "forked"), 1);

    lw_shutdown();
    CHECK_EQ(lock_exists(&srv, "forked"), 1);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    lw_guard g;
    CHECK_RC(lock_str(&g, "forked", EXPIRE_MS, 0), LW_OK);
    uint64_t fence = lw_fence();
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        child(&g);
        fflush(stdout);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (0x%x)", st);

    /* The parent's lock is intact and still renewed past its first lease. */
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lw_fence(), fence);
    CHECK_EQ(lock_exists(&srv, "forked"), 1);
    sleep_ms(2 * EXPIRE_MS);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lock_exists(&srv, "forked"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "forked"), 0);

    /* And the parent keeps working after its child came and went, on the
     * connections it had: the child dropped its copies without a byte on
     * them (over TLS, no close_notify on the parent's session). */
    CHECK_RC(lock_str(&g, "after", EXPIRE_MS, 0), LW_OK);
    CHECK(lw_fence() > 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    lw_stats stats;
    lw_stats_get(&stats);
    CHECK_EQ(stats.redis_errors, 0);

    lw_shutdown();
    rh_stop(&srv);
    printf("fork: ok\n");
    return 0;
}

/* A holder killed with SIGKILL releases nothing and renews nothing: the lock
 * stays busy until its lease runs out, then another client gets it. */
#include "util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPIRE_MS 1500

int main(void)
{
    rh_server srv;
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    int ready[2];
    CHECK_EQ(pipe(ready), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        lw_guard g;
        if (lock_str(&g, "victim", EXPIRE_MS, 0) != LW_OK)
            _exit(3);
        if (write(ready[1], "x", 1) != 1)
            _exit(4);
        for (;;)
            pause(); /* holding, with the watchdog renewing */
    }
    close(ready[1]);
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1);

    /* Let the child's watchdog renew a few times: the lock outlives one
     * lease while its holder lives. */
    sleep_ms(2 * EXPIRE_MS);
    CHECK_EQ(lock_exists(&srv, "victim"), 1);
    lw_guard g;
    CHECK_RC(lock_str(&g, "victim", EXPIRE_MS, 0), LW_ETIMEOUT);

    CHECK_EQ(kill(pid, SIGKILL), 0);
    int64_t killed = now_ms();
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    /* Still busy right after the kill: nobody released it. */
    long long ttl = lock_pttl(&srv, "victim");
    CHECK_MSG(ttl > 0, "lock gone right after SIGKILL (PTTL %lld)", ttl);
    CHECK_RC(lock_str(&g, "victim", EXPIRE_MS, 0), LW_ETIMEOUT);

    /* Waiting long enough, we get in once the lease expires. */
    CHECK_RC(lock_str(&g, "victim", 5000, 5 * EXPIRE_MS), LW_OK);
    int64_t after = now_ms() - killed;
    printf("holder SIGKILLed with PTTL %lld ms left: acquired %lld ms after "
           "the kill\n",
           ttl, (long long)after);
    CHECK(lw_fence() > 0);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_RANGE(after, 0, EXPIRE_MS + 1500);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "victim"), 0);

    lw_shutdown();
    rh_stop(&srv);
    printf("sigkill: ok\n");
    return 0;
}

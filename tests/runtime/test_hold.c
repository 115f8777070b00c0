/*
 * hold_at_least: after the body returns, the key stays locked until the
 * hold has passed since acquisition, on one server and under Redlock.
 *   - a job that ran: another process trying with wait 0 is refused
 *     (LW_ETIMEOUT) during the rest of the hold; one that waits gets the
 *     lock, and never before the hold is over (measured from before the
 *     first call started, a bound no slow machine can break);
 *   - a body that outlasts the hold releases the key at once;
 *   - a hold longer than the lease is LW_EINVAL, the body not run.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define HOLD_MS   3000
#define EXPIRE_MS 10000

static lw_lock_opts hold_opts(uint32_t wait_ms)
{
    lw_lock_opts o = lock_opts(EXPIRE_MS, wait_ms, -1);
    o.hold_at_least_ms = HOLD_MS;
    return o;
}

/* In a child process (another host, as far as Redis can tell): lock key
 * with wait_ms; exit status 0 LW_OK, 1 LW_ETIMEOUT, 2 anything else.
 * *ok_ms: when (now_ms()) the child had the lock, through a pipe. */
static int other_host(const char *url, const char *key, uint32_t wait_ms,
                      int64_t *ok_ms)
{
    int fd[2], status;
    pid_t pid;

    CHECK_EQ(pipe(fd), 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        lw_guard g;
        lw_lock_opts o = lock_opts(EXPIRE_MS, wait_ms, -1);
        int64_t t;
        use_url(url, 1000, 2000);
        int rc = lw_lock(&g, key, strlen(key), &o);
        t = now_ms();
        if (write(fd[1], &t, sizeof t) != (ssize_t)sizeof t)
            _exit(3);
        if (rc == LW_OK)
            rc = lw_guard_leave(&g);
        _exit(rc == LW_OK ? 0 : rc == LW_ETIMEOUT ? 1 : 2);
    }
    close(fd[1]);
    CHECK_EQ(read(fd[0], ok_ms, sizeof *ok_ms), (ssize_t)sizeof *ok_ms);
    close(fd[0]);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The job runs once; for the rest of the hold the key is locked. */
static void held_after_return(const char *url, rh_server *s, int nservers)
{
    const char *key = "job:nightly";
    lw_lock_opts o = hold_opts(0);
    int64_t start_ms, ok_ms;
    lw_guard g;

    use_url(url, 1000, 2000);
    start_ms = now_ms();
    CHECK_RC(lw_lock(&g, key, strlen(key), &o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    for (int i = 0; i < nservers; i++) {
        long long pttl = lock_pttl(&s[i], key);
        printf("%s: after the body, PTTL %lld ms on server %d\n", url, pttl, i);
        CHECK(pttl > 0 && pttl <= HOLD_MS + 1);
    }
    /* Another host, now: skipped. */
    CHECK_EQ(other_host(url, key, 0, &ok_ms), 1);
    /* Another host that waits: gets it once the hold is over. */
    CHECK_EQ(other_host(url, key, EXPIRE_MS, &ok_ms), 0);
    printf("%s: the waiter had it %lld ms after the job started\n", url,
           (long long)(ok_ms - start_ms));
    CHECK(ok_ms - start_ms >= HOLD_MS);
    for (int i = 0; i < nservers; i++)
        CHECK_EQ(lock_exists(&s[i], key), 0);
}

/* The body took longer than the hold: the key goes at once. */
static void body_outlasts_hold(const char *url, rh_server *s, int nservers)
{
    lw_lock_opts o = lock_opts(EXPIRE_MS, 0, -1);
    lw_guard g;

    use_url(url, 1000, 2000);
    o.hold_at_least_ms = 200;
    CHECK_RC(lw_lock(&g, "job:long", 8, &o), LW_OK);
    sleep_ms(400);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    for (int i = 0; i < nservers; i++)
        CHECK_EQ(lock_exists(&s[i], "job:long"), 0);
}

static void hold_past_lease(void)
{
    lw_lock_opts o = lock_opts(1000, 0, -1);
    lw_guard g;

    o.hold_at_least_ms = 1001;
    CHECK_RC(lw_lock(&g, "job:bad", 7, &o), LW_EINVAL);
}

int main(void)
{
    rh_server s[3];
    char url[256];
    int n = 0;

    for (int i = 0; i < 3; i++)
        CHECK_EQ(rh_start(&s[i], NULL), 0);

    held_after_return(s[0].url, s, 1);
    body_outlasts_hold(s[0].url, s, 1);
    hold_past_lease();

    for (int i = 0; i < 3; i++)
        n += snprintf(url + n, sizeof url - (size_t)n, "%s%s", i ? "," : "",
                      s[i].url);
    held_after_return(url, s, 3);
    body_outlasts_hold(url, s, 3);

    lw_shutdown();
    for (int i = 0; i < 3; i++)
        rh_stop(&s[i]);
    printf("hold: ok\n");
    return 0;
}

/*
 * Regression test for a stale hand-off grant: a hand-off message read after
 * the lease it granted ran out must not let its waiter in.  A grant is a
 * hint, confirmed on the lock itself before the body runs unless it is
 * fresh (see runtime/core/acquire.c, fresh_grant()).
 *
 * The story, driven by state (no timing is asserted):
 *  1. we hold k; a child process queues for k;
 *  2. the child is stopped (SIGSTOP); we release, which hands k to the
 *     child: its token in the key, a fence minted, the grant
 *     "g<fence> <entry>" pushed to its mailbox;
 *  3. the child's granted lease runs out (we watch the key disappear), and
 *     we take k again: we are the holder now;
 *  4. the child continues (SIGCONT) while we hold k, and its BLPOP reads
 *     that grant.
 * The child must keep waiting until we leave.  Exit status 1: it took the
 * old grant and entered its body beside us with the old fence.
 */
#include "fw_shared.h"
#include "redis_harness.h"

#include <lockweave.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEP_MS 10000 /* how long any step may take: generous, not asserted */
#define HOLD_MS 3000  /* we hold k this long after the child continues */

static rh_server srv;

static long long queued(void)
{
    return rh_cmd_int(&srv, "ZCARD {lock:k}:q");
}

static long long key_exists(void)
{
    return rh_cmd_int(&srv, "EXISTS lock:k");
}

/* Poll fn until it returns want, STEP_MS at most; 0 or -1. */
static int await(long long (*fn)(void), long long want, const char *what)
{
    for (int i = 0; i < STEP_MS; i += 5) {
        if (fn() == want)
            return 0;
        fw_sleep_us(5000);
    }
    fprintf(stderr, "xfail_stale_grant: gave up waiting: %s\n", what);
    return -1;
}

/* The child: queue for k, and report how its call went. */
static void child(int out)
{
    lw_lock_opts o = {.expire_ms = 1000, .wait_ms = 30000, .max_renew = -1};
    lw_guard g;
    char line[160];
    int rc = lw_lock(&g, "k", 1, &o);
    unsigned long long fence = lw_fence();
    int held = lw_still_held();
    int left = rc == LW_OK ? lw_guard_leave(&g) : rc;
    int n =
        snprintf(line, sizeof line, "%d %llu %d %d\n", rc, fence, held, left);
    fw_write_all(out, line, (size_t)n);
    _exit(0);
}

int main(void)
{
    lw_lock_opts o = {.expire_ms = 1000, .wait_ms = 30000, .max_renew = -1};
    lw_guard g;
    char line[160] = "";
    int p[2], st, rc, bug = 0, crc = -99, held = 0, left = 0;
    unsigned long long ours = 0, theirs = 0;
    pid_t pid = -1;

    if (rh_start(&srv, NULL) != 0 || pipe(p) != 0)
        return 2;
    setenv("LOCKWEAVE_REDIS_URL", srv.url, 1);
    /* Strict FIFO: our release hands k to the queued child whatever its
     * age, instead of sometimes only waking it. */
    setenv("LOCKWEAVE_HANDOFF_MS", "0", 1);
    if (lw_lock(&g, "k", 1, &o) != LW_OK)
        goto fail;
    /* Fork before our runtime starts threads of its own would matter only
     * for our locks; the child takes none of ours (LW_EFORKED rules). */
    if ((pid = fork()) == 0) {
        close(p[0]);
        child(p[1]);
    }
    close(p[1]);
    if (pid < 0 || await(queued, 1, "the child to queue") != 0)
        goto fail;
    kill(pid, SIGSTOP);
    rc = lw_guard_leave(&g);
    printf("released with the child stopped and queued: %s\n", lw_strerror(rc));
    if (await(key_exists, 0, "the child's granted lease to run out") != 0)
        goto fail;
    if (lw_lock(&g, "k", 1, &o) != LW_OK)
        goto fail;
    ours = lw_fence();
    kill(pid, SIGCONT);
    /* Hold k while the child runs.  A correct child keeps waiting: no
     * answer within STEP_MS is the good outcome. */
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    if (poll(&pf, 1, HOLD_MS) == 1) {
        ssize_t n = read(p[0], line, sizeof line - 1);
        line[n > 0 ? n : 0] = '\0';
        sscanf(line, "%d %llu %d %d", &crc, &theirs, &held, &left);
        bug = crc == LW_OK; /* its body ran while we held k */
    }
    rc = lw_guard_leave(&g);
    printf("we held k with fence %llu and left: %s\n", ours, lw_strerror(rc));
    if (!bug) {
        /* The child gets k after our leave: its answer comes now. */
        ssize_t n = read(p[0], line, sizeof line - 1);
        line[n > 0 ? n : 0] = '\0';
        sscanf(line, "%d %llu %d %d", &crc, &theirs, &held, &left);
    }
    waitpid(pid, &st, 0);
    /* After us, the child must hold a fence newer than ours. */
    bug = bug || (crc == LW_OK && theirs <= ours);
    printf("child: enter %s with fence %llu, lw_still_held() %d, leave %s\n",
           lw_strerror(crc), theirs, held, lw_strerror(left));
    printf("%s\n", bug ? "BUG: the child ran its body while we held the lock"
                       : "ok: the child waited for us");
    lw_shutdown();
    rh_stop(&srv);
    return bug;
fail:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    rh_stop(&srv);
    return 2;
}

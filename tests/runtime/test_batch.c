/*
 * core/take.c's batch (what an event loop's pump sends), called directly
 * through lw__lease_batch() on a real server: the takes and releases of a
 * batch go to Redis as one call of the mutex's batch script (core/batch.c),
 * and each op still ends as it would alone:
 *   folded   16 takes of free keys, then their 16 releases: each LW_OK,
 *            fences distinct and higher than the same keys' last, the keys
 *            gone after, and Redis ran one script for each batch
 *   apart    two of the keys hold hashes: those two fail (LW_EREDIS), the
 *            14 beside them in the same script are taken and given back
 *   fenced   takes that lead a run handed on in memory, their run's
 *            fences minted by a script of their own right behind the
 *            batch's call: each run's fences above its take's
 *   capped   129 takes, then their releases: two calls of 64 ops and the
 *            op left over alone, each way
 *   handed   a release in a batch with a waiter of another process queued
 *            in Redis (hand-off age 0, the default) and stopped
 *            (SIGSTOP): the batch script hands it the key (the key holds
 *            its token while it cannot act), and, let go, it has the lock
 *            with a fence above the one given back; the takes batched
 *            beside the release unharmed
 * Script calls are counted: exactly what is wanted, unless a round trip of
 * the batch failed (lw_stats.redis_errors moved: a machine so slow that a
 * reply took past the command timeout), when the batch goes again on a new
 * connection, whose first use runs a check of its own: then at most
 * 2 * want + 1.  One call per op would be N at least.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/lease.h"
#include "util.h"

static rh_server srv;

#define N        16
#define NOT_HELD 1 /* an op's status once its lease is given back */

/* The most ops a call of the batch script takes (core/take.c), and ops
 * enough for two calls and one op left over. */
#define FOLD_MAX 64
#define MANY     (2 * FOLD_MAX + 1)

static struct lw_lease_op ops[MANY];
static char keys[MANY][32];
static lw_lock_opts opts;

/* EVAL and EVALSHA calls so far. */
static long long scripts(void)
{
    const char *const cmds[] = {"evalsha", "eval"};
    return command_calls(&srv, cmds, 2);
}

static uint64_t redis_errors(void)
{
    lw_stats st;

    lw_stats_get(&st);
    return st.redis_errors;
}

/* The last batch's: a round trip failed (redis_errors moved). */
static int batch_failed;

/* calls script calls did what wants want (see the top). */
static void check_calls(long long calls, long long want, const char *what)
{
    CHECK_MSG(batch_failed ? calls >= want && calls <= 2 * want + 1
                           : calls == want,
              "%s in %lld script calls (%lld wanted%s)", what, calls, want,
              batch_failed ? ", a round trip failed" : "");
}

/* Take "<prefix>:<i>" for i < n in one batch, those i with run[i] set
 * (run NULL: none) leading a run; the calls it took. */
static long long take_run(const char *prefix, int n, const int *run)
{
    long long before = scripts();
    uint64_t errors = redis_errors();

    memset(ops, 0, sizeof ops);
    for (int i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "%s:%d", prefix, i);
        ops[i] = (struct lw_lease_op){.key = keys[i],
                                      .keylen = strlen(keys[i]),
                                      .opts = &opts,
                                      .run_fences = run != NULL && run[i]};
    }
    lw__lease_batch(ops, n);
    batch_failed = redis_errors() != errors;
    return scripts() - before;
}

static long long take_all(const char *prefix, int n)
{
    return take_run(prefix, n, NULL);
}

/* Give back, in one batch, the leases of ops[i] for i < n that were won
 * (statuses in ops[i].status; NOT_HELD for the others); the calls it
 * took. */
static long long give_all(int n)
{
    static struct lw_lease_op gives[MANY];
    int m = 0, map[MANY];
    long long before = scripts();
    uint64_t errors = redis_errors();

    for (int i = 0; i < n; i++)
        if (ops[i].status == LW_OK) {
            map[m] = i;
            gives[m++] = (struct lw_lease_op){.give = 1, .lease = ops[i].lease};
        }
    lw__lease_batch(gives, m);
    batch_failed = redis_errors() != errors;
    for (int i = 0; i < n; i++)
        ops[i].status = NOT_HELD;
    for (int j = 0; j < m; j++)
        ops[map[j]].status = gives[j].status;
    return scripts() - before;
}

/* Each take of ops[0..n) LW_OK, the key there, its fence unlike the
 * others' and above last[i] (when last). */
static void check_taken(int n, const uint64_t *last)
{
    for (int i = 0; i < n; i++) {
        uint64_t f = lw_lease_fence(ops[i].lease);
        CHECK_MSG(ops[i].status == LW_OK, "%s: %s", keys[i],
                  lw_strerror(ops[i].status));
        CHECK(lock_exists(&srv, keys[i]));
        for (int j = 0; j < i; j++)
            CHECK_MSG(f != lw_lease_fence(ops[j].lease), "fence %llu twice",
                      (unsigned long long)f);
        CHECK_MSG(last == NULL || f > last[i], "%s: fence %llu after %llu",
                  keys[i], (unsigned long long)f,
                  (unsigned long long)(last != NULL ? last[i] : 0));
    }
}

static void folded(void)
{
    uint64_t last[N];
    long long calls;

    take_all("bf", N); /* the connection's first use: its own checks */
    check_taken(N, NULL);
    check_calls(give_all(N), 1, "16 releases");
    calls = take_all("bf", N);
    check_calls(calls, 1, "16 takes");
    check_taken(N, NULL);
    for (int i = 0; i < N; i++)
        last[i] = lw_lease_fence(ops[i].lease);
    check_calls(give_all(N), 1, "16 releases");
    for (int i = 0; i < N; i++) {
        CHECK_RC(ops[i].status, LW_OK);
        CHECK_EQ(lock_exists(&srv, keys[i]), 0);
    }
    take_all("bf", N); /* the same keys again: higher fences */
    check_taken(N, last);
    check_calls(give_all(N), 1, "16 releases");
    printf("folded: %d takes, then %d releases, in %lld script call(s)\n", N, N,
           calls);
}

static void apart(void)
{
    CHECK_EQ(rh_cmd_int(&srv, "HSET lock:ba:3 f v"), 1);
    CHECK_EQ(rh_cmd_int(&srv, "HSET lock:ba:11 f v"), 1);
    /* (Each failed take is given back after, alone, as a try whose answer
     * was an error always is: the script calls are not counted here.) */
    take_all("ba", N);
    for (int i = 0; i < N; i++) {
        int bad = i == 3 || i == 11;
        CHECK_MSG(ops[i].status == (bad ? LW_EREDIS : LW_OK), "ba:%d: %s", i,
                  lw_strerror(ops[i].status));
    }
    CHECK_EQ(rh_cmd_int(&srv, "HLEN lock:ba:3"), 1);
    check_calls(give_all(N), 1, "14 releases");
    for (int i = 0; i < N; i++) {
        if (i == 3 || i == 11)
            continue;
        CHECK_RC(ops[i].status, LW_OK);
        CHECK_EQ(lock_exists(&srv, keys[i]), 0);
    }
    printf("apart: 2 of %d keys held as hashes failed alone\n", N);
}

static void fenced(void)
{
    static const int run[N] = {[0] = 1, [5] = 1, [15] = 1};
    long long calls;

    take_run("bn", N, run); /* the fences' script met first: NOSCRIPT */
    give_all(N);
    calls = take_run("bn", N, run);
    check_calls(calls, 1 + 3, "16 takes and 3 runs' fences");
    check_taken(N, NULL);
    for (int i = 0; i < N; i++) {
        if (!run[i]) {
            CHECK_EQ(ops[i].fences, 0);
            continue;
        }
        CHECK_MSG(ops[i].fences > 0, "bn:%d: no fences for its run", i);
        CHECK_MSG(ops[i].first_fence > lw_lease_fence(ops[i].lease),
                  "bn:%d: run's fences from %llu, its take's %llu", i,
                  (unsigned long long)ops[i].first_fence,
                  (unsigned long long)lw_lease_fence(ops[i].lease));
    }
    check_calls(give_all(N), 1, "16 releases");
    for (int i = 0; i < N; i++)
        CHECK_RC(ops[i].status, LW_OK);
    printf("fenced: 3 of %d takes with their runs' fences behind the batch, "
           "in %lld script calls\n",
           N, calls);
}

static void capped(void)
{
    long long calls;

    /* Two calls of FOLD_MAX ops, and the op left over alone: no script
     * holds Redis for more than FOLD_MAX ops, whatever a pump's batch. */
    take_all("bm", MANY); /* the lone op's script met first: NOSCRIPT */
    give_all(MANY);
    calls = take_all("bm", MANY);
    check_calls(calls, 3, "129 takes");
    check_taken(MANY, NULL);
    check_calls(give_all(MANY), 3, "129 releases");
    for (int i = 0; i < MANY; i++) {
        CHECK_RC(ops[i].status, LW_OK);
        CHECK_EQ(lock_exists(&srv, keys[i]), 0);
    }
    printf("capped: %d takes and releases, in %lld script calls each way\n",
           MANY, calls);
}

/* The waiter of handed, another process: forked before lockweave has a
 * thread (a fork beside them is runtime_fork's subject), it takes "bh:0"
 * once told to (a byte on go), and writes its status and fence to done. */
static int go[2], done[2];
static pid_t waiter_pid;

/* A test failing while the waiter lives (stopped, perhaps) ends it too. */
static void waiter_kill(void)
{
    if (waiter_pid > 0)
        kill(waiter_pid, SIGKILL);
}

static void waiter_start(void)
{
    CHECK(pipe(go) == 0 && pipe(done) == 0);
    waiter_pid = fork();
    CHECK(waiter_pid >= 0);
    if (waiter_pid == 0) {
        lw_lock_opts o = lock_opts(30000, 30000, 0);
        struct {
            int status;
            uint64_t fence;
        } got = {0};
        char c;
        lw_lease *l;
        close(go[1]); /* so that a parent gone ends the read */
        close(done[0]);
        if (read(go[0], &c, 1) != 1)
            _exit(1);
        use_server(&srv);
        got.status = lw_acquire("bh:0", 4, &o, &l);
        if (got.status == LW_OK) {
            got.fence = lw_lease_fence(l);
            got.status = lw_release(l);
        }
        if (write(done[1], &got, sizeof got) != (ssize_t)sizeof got)
            _exit(1);
        lw_shutdown();
        _exit(0);
    }
    close(go[0]);
    close(done[1]);
    atexit(waiter_kill);
}

/* Wait until the waiter is queued in Redis for "bh:0", then stop it
 * (SIGSTOP), so that what a release does stays to be seen: a hand-off
 * sets the key to the waiter's token, a wake-up would leave the key gone
 * for the waiter (stopped) to take.  Its token, from its queue entry
 * ("token|lease ms"), in token.  A stopped waiter no longer refreshes its
 * entry's keys (a second or so): they are made to last, and if one ran
 * out first (a stall between two lines here) the waiter goes on and is
 * stopped again once queued anew. */
static void stop_queued_waiter(char *token, size_t size)
{
    for (int tries = 0;; tries++) {
        redisReply *r;
        const char *bar;
        int wstatus, kept;
        CHECK(tries < 20);
        for (int i = 0; i < 3000 && rh_cmd_int(&srv, "ZCARD {lock:bh:0}:q") < 1;
             i++)
            sleep_ms(10);
        r = rh_cmd(&srv, "ZRANGE {lock:bh:0}:q 0 0");
        CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
        bar = strchr(r->element[0]->str, '|');
        CHECK(bar != NULL && (size_t)(bar - r->element[0]->str) < size);
        memcpy(token, r->element[0]->str, (size_t)(bar - r->element[0]->str));
        token[bar - r->element[0]->str] = '\0';
        freeReplyObject(r);
        CHECK(kill(waiter_pid, SIGSTOP) == 0);
        CHECK(waitpid(waiter_pid, &wstatus, WUNTRACED) == waiter_pid &&
              WIFSTOPPED(wstatus));
        kept = rh_cmd_int(&srv, "PEXPIRE {lock:bh:0}:q 60000") == 1 &&
               rh_cmd_int(&srv, "PEXPIRE {lock:bh:0}:w:%s 60000", token) == 1;
        if (kept)
            return;
        CHECK(kill(waiter_pid, SIGCONT) == 0);
        sleep_ms(100);
    }
}

static void handed(void)
{
    struct lw_lease_op batch[N];
    char more[N][32];
    struct {
        int status;
        uint64_t fence;
    } got;
    uint64_t given;
    char token[128];
    redisReply *r;
    int wstatus;

    take_all("bh", 1);
    CHECK_RC(ops[0].status, LW_OK);
    given = lw_lease_fence(ops[0].lease);
    CHECK(write(go[1], "g", 1) == 1);
    stop_queued_waiter(token, sizeof token);
    /* The release of bh:0, in one batch with takes of bh:1 .. */
    batch[0] = (struct lw_lease_op){.give = 1, .lease = ops[0].lease};
    for (int i = 1; i < N; i++) {
        snprintf(more[i], sizeof more[i], "bh:%d", i);
        batch[i] = (struct lw_lease_op){
            .key = more[i], .keylen = strlen(more[i]), .opts = &opts};
    }
    lw__lease_batch(batch, N);
    CHECK_RC(batch[0].status, LW_OK);
    for (int i = 1; i < N; i++)
        CHECK_RC(batch[i].status, LW_OK);
    r = rh_cmd(&srv, "GET lock:bh:0");
    CHECK_MSG(r != NULL && r->type == REDIS_REPLY_STRING &&
                  strcmp(r->str, token) == 0,
              "lock:bh:0 does not hold the waiter's token after the release");
    freeReplyObject(r);
    CHECK(kill(waiter_pid, SIGCONT) == 0);
    CHECK(read(done[0], &got, sizeof got) == (ssize_t)sizeof got);
    CHECK(waitpid(waiter_pid, &wstatus, 0) == waiter_pid);
    waiter_pid = 0;
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    CHECK_RC(got.status, LW_OK);
    CHECK_MSG(got.fence > given, "handed fence %llu after %llu",
              (unsigned long long)got.fence, (unsigned long long)given);
    memcpy(ops, batch, sizeof batch);
    ops[0].status = NOT_HELD; /* given back already */
    check_calls(give_all(N), 1, "15 releases");
    for (int i = 1; i < N; i++)
        CHECK_RC(ops[i].status, LW_OK);
    printf("handed: a waiter of another process, queued in Redis, handed "
           "the key by a batch's release, fence %llu after %llu\n",
           (unsigned long long)got.fence, (unsigned long long)given);
}

int main(void)
{
    CHECK(rh_start(&srv, NULL) == 0);
    waiter_start();
    use_server(&srv);
    /* No renewals: the watchdog's scripts stay out of the counts. */
    opts = lock_opts(30000, 0, 0);

    folded();
    apart();
    fenced();
    capped();
    handed();

    lw_shutdown();
    CHECK(rh_stop(&srv) == 0);
    printf("batch: ok\n");
    return 0;
}

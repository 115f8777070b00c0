/* What LOCKWEAVE_LOG=debug says of each call, through a log hook: an
 * acquisition from Redis with its fence and how long it took, one handed
 * on by another thread of the process, one that timed out; a release
 * through Redis, one handed on to another thread, one whose key Redis
 * keeps for hold_at_least.  At warn, a call that goes well says nothing.
 * And a LOCKWEAVE_LOG that names no level is warned about as soon as the
 * library reads it, on stderr, in a program that logs nothing else. */
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static rh_server srv;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char lines[64][512];
static int nlines;

static void capture(int level, const char *msg, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    if (nlines < 64)
        snprintf(lines[nlines++], sizeof lines[0], "%d %s", level, msg);
    pthread_mutex_unlock(&mu);
}

static void clear(void)
{
    pthread_mutex_lock(&mu);
    nlines = 0;
    pthread_mutex_unlock(&mu);
}

/* How many lines hold every one of the NULL-terminated needles. */
static int logged(const char *needle, ...)
{
    int n = 0;

    pthread_mutex_lock(&mu);
    for (int i = 0; i < nlines; i++) {
        va_list ap;
        const char *s = needle;
        int all = 1;
        va_start(ap, needle);
        for (; s != NULL; s = va_arg(ap, const char *))
            all &= strstr(lines[i], s) != NULL;
        va_end(ap);
        n += all;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

static void show(void)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nlines; i++)
        fprintf(stderr, "  log: %s\n", lines[i]);
    pthread_mutex_unlock(&mu);
}

#define CHECK_LOGGED(...)                                                      \
    do {                                                                       \
        if (logged(__VA_ARGS__, NULL) != 1) {                                  \
            show();                                                            \
            CHECK_MSG(0, "not logged once: %s", #__VA_ARGS__);                 \
        }                                                                      \
    } while (0)

/* One lock and release from Redis: both said, with the fence. */
static void from_redis(void)
{
    char fence[64];
    lw_guard g;

    clear();
    CHECK_RC(lock_str(&g, "dbg:1", 5000, 0), LW_OK);
    snprintf(fence, sizeof fence, "fence %llu,",
             (unsigned long long)lw_fence());
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_LOGGED("0 lock lock:dbg:1: acquired from Redis", fence, " ms");
    CHECK_LOGGED("0 lock lock:dbg:1: released through Redis");
}

/* A minimum hold: the release says Redis keeps the key. */
static void held_at_least(void)
{
    lw_lock_opts o = lock_opts(5000, 0, -1);
    lw_guard g;

    o.hold_at_least_ms = 3000;
    clear();
    CHECK_RC(lw_lock(&g, "dbg:hold", 8, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_LOGGED("lock lock:dbg:hold: released; Redis keeps its key",
                 "(hold_at_least)");
}

/* A lock another thread holds: the wait times out, said with the code. */
static void *busy_try(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "dbg:busy", 5000, 50), LW_ETIMEOUT);
    return NULL;
}

static void timed_out(void)
{
    pthread_t t;
    lw_guard g;

    CHECK_RC(lock_str(&g, "dbg:busy", 5000, 0), LW_OK);
    clear();
    CHECK(pthread_create(&t, NULL, busy_try, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_LOGGED("lock lock:dbg:busy: not acquired after",
                 lw_strerror(LW_ETIMEOUT));
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

/* Two threads, one key, hand-offs in the process: the second is handed the
 * lock by the first. */
static uint64_t contended_before;

static int waiting(void *arg)
{
    lw_stats st;

    (void)arg;
    lw_stats_get(&st);
    return st.contended > contended_before;
}

static void *second(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "dbg:2", 5000, 5000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void handed_on(void)
{
    lw_stats st;
    pthread_t t;
    lw_guard g;

    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "15", 1);
    use_server(&srv);
    CHECK_RC(lock_str(&g, "dbg:2", 5000, 0), LW_OK);
    lw_stats_get(&st);
    contended_before = st.contended;
    clear();
    CHECK(pthread_create(&t, NULL, second, NULL) == 0);
    CHECK(wait_until(waiting, NULL, 5000) >= 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_LOGGED("lock lock:dbg:2: released, handed on to another thread");
    CHECK_LOGGED("lock lock:dbg:2: acquired from another thread of this "
                 "process, which handed it on, fence ");
    /* The second gives it back through Redis: nobody waits. */
    CHECK_LOGGED("lock lock:dbg:2: released through Redis");
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    use_server(&srv);
}

/* At warn, a call that goes well says nothing. */
static void quiet(void)
{
    lw_guard g;

    lw_set_logger(capture, NULL, LW_LOG_WARN);
    clear();
    CHECK_RC(lock_str(&g, "dbg:quiet", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    if (nlines != 0) {
        show();
        CHECK_MSG(0, "a quiet call logged at warn");
    }
}

/* This program again, with LOCKWEAVE_LOG=bogus and no log hook, its
 * stderr read back: one lock and release, which log nothing else. */
static void bad_level_at_once(const char *self)
{
    char out[4096], port[16];
    size_t n = 0;
    ssize_t k;
    int fd[2], status;
    pid_t pid;

    CHECK_EQ(pipe(fd), 0);
    snprintf(port, sizeof port, "%d", srv.port);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        setenv("LOCKWEAVE_LOG", "bogus", 1);
        execl(self, self, "bad-level", port, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    while (n < sizeof out - 1 &&
           (k = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fd[0]);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s", out);
    const char *at = strstr(out, "ignoring LOCKWEAVE_LOG=bogus");
    CHECK_MSG(at != NULL, "not warned; the child's stderr:\n%s", out);
    CHECK_MSG(strstr(at + 1, "ignoring LOCKWEAVE_LOG") == NULL,
              "warned more than once:\n%s", out);
}

static int bad_level_child(const char *port)
{
    char url[64];
    lw_guard g;

    snprintf(url, sizeof url, "redis://127.0.0.1:%s", port);
    use_url(url, 1000, 2000);
    CHECK_RC(lock_str(&g, "dbg:child", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    lw_shutdown();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "bad-level") == 0)
        return bad_level_child(argv[2]);
    CHECK_EQ(rh_start(&srv, NULL), 0);
    bad_level_at_once(argv[0]);

    /* Threads of this process stand in for other processes: no hand-offs
     * from thread to thread but in handed_on(). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    use_server(&srv);
    lw_set_logger(capture, NULL, LW_LOG_DEBUG);
    from_redis();
    held_at_least();
    timed_out();
    handed_on();
    quiet();

    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    lw_shutdown();
    rh_stop(&srv);
    printf("log: ok\n");
    return 0;
}

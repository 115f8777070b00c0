/* Out of file descriptors: with RLIMIT_NOFILE lowered and every descriptor
 * taken, a lock that needs a new connection fails with LW_EREDIS and a log
 * line that names the cause (no crash, no body run); connections opened
 * before keep working (a held lock stays renewed); once descriptors are free
 * again, new connections and locks work.  In this process, with the limit
 * restored afterwards. */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static rh_server srv;
static int body_runs;

/* ---- log capture -------------------------------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int emfile_lines;
static char last_line[512];

static void capture(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&log_mu);
    snprintf(last_line, sizeof last_line, "%s", msg);
    if (strstr(msg, strerror(EMFILE)) != NULL)
        emfile_lines++;
    pthread_mutex_unlock(&log_mu);
}

/* ---- descriptors -------------------------------------------------------- */

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ".", "..", and the DIR's own descriptor */
}

static int hogs[4096];
static int nhogs;

/* Take every descriptor the (lowered) limit allows. */
static void exhaust(void)
{
    nhogs = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            CHECK_EQ(errno, EMFILE);
            break;
        }
        CHECK_MSG(nhogs < 4096, "no EMFILE after 4096 descriptors");
        hogs[nhogs++] = fd;
    }
}

static void release_all(void)
{
    for (int i = 0; i < nhogs; i++)
        close(hogs[i]);
    nhogs = 0;
}

/* ---- calls -------------------------------------------------------------- */

struct thread_call {
    const char *key;
    int rc;
};

static int call(const char *key)
{
    lw_guard g;
    int rc = lock_str(&g, key, 5000, 500);
    if (rc == LW_OK) {
        body_runs++;
        rc = lw_guard_leave(&g);
    }
    return rc;
}

static void *call_in_thread(void *arg)
{
    struct thread_call *tc = arg;
    tc->rc = call(tc->key);
    return NULL;
}

/* A new thread: a new connection, hence a new descriptor. */
static int call_new_thread(const char *key)
{
    struct thread_call tc = {key, 0};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, call_in_thread, &tc), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return tc.rc;
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    lw_set_logger(capture, NULL, LW_LOG_DEBUG);
    /* The main thread's connection exists before the limit is lowered. */
    CHECK_RC(call("before"), LW_OK);
    /* The server's own client in this process, opened now. */
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:before"), 0);

    /* Held across renewals first, so the watchdog has its connection:
     * a renewal that cannot connect marks the lease lost at once. */
    lw_guard held;
    CHECK_RC(lock_str(&held, "held-through", 1500, 0), LW_OK);
    sleep_ms(800);
    CHECK_EQ(lw_still_held(), 1);

    struct rlimit old;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    struct rlimit low = old;
    low.rlim_cur = (rlim_t)open_fds() + 16;
    CHECK(low.rlim_cur <= old.rlim_cur);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    exhaust();
    printf("limit %llu, %d descriptors taken to reach EMFILE\n",
           (unsigned long long)low.rlim_cur, nhogs);

    /* A thread with no connection yet: fails closed, says why. */
    int before = body_runs;
    int rc = call_new_thread("no-fd");
    printf("new thread, no descriptor left: %s\n", lw_strerror(rc));
    CHECK_RC(rc, LW_EREDIS);
    CHECK_EQ(body_runs, before);
    pthread_mutex_lock(&log_mu);
    printf("last log line: %s\n", last_line);
    CHECK_MSG(emfile_lines > 0, "no log line says \"%s\"", strerror(EMFILE));
    pthread_mutex_unlock(&log_mu);

    /* The main thread's open connection does not need a new descriptor. */
    CHECK_RC(call("kept-connection"), LW_OK);
    CHECK_EQ(body_runs, before + 1);

    /* A lock held through it all: its renewals (every 500 ms) use the
     * watchdog's open connection. */
    sleep_ms(2000);
    CHECK_EQ(lw_still_held(), 1);
    CHECK(lock_pttl(&srv, "held-through") > 0);
    CHECK_RC(lw_guard_leave(&held), LW_OK);

    /* Descriptors back: recovers (a reconnect backoff may delay it). */
    release_all();
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    int64_t t0 = now_ms();
    do {
        rc = call("recovered");
        if (rc != LW_OK)
            sleep_ms(50);
    } while (rc != LW_OK && now_ms() - t0 < 5000);
    CHECK_RC(rc, LW_OK);
    CHECK_RC(call_new_thread("recovered-thread"), LW_OK);

    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    lw_shutdown();
    rh_stop(&srv);
    printf("fd_limit: ok\n");
    return 0;
}

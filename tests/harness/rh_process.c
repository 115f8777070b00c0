/* The redis-server process: start, wait for PING, stop by PID, pause,
 * restart on the same port. */
#include "rh_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RH_READY_TIMEOUT_MS 10000
#define RH_MAX_ARGS         96

void rh__sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rh_opts_init(rh_opts *o)
{
    memset(o, 0, sizeof *o);
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void rh_remove_tree(const char *dir)
{
    if (dir && *dir)
        nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int rh__terminate(pid_t pid, int grace_ms)
{
    if (pid <= 0)
        return 0;
    kill(pid, SIGTERM);
    /* A stopped process keeps SIGTERM pending until it runs again. */
    kill(pid, SIGCONT);
    long long deadline = mono_ms() + grace_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return 0;
        if (mono_ms() >= deadline)
            break;
        rh__sleep_ms(5);
    }
    fprintf(stderr,
            "redis harness: pid %d ignored SIGTERM for %d ms; "
            "sending SIGKILL\n",
            (int)pid, grace_ms);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return -1;
}

void rh__print_log(const rh_server *s)
{
    FILE *f = fopen(s->log_path, "r");
    if (!f) {
        fprintf(stderr, "redis harness: no log at %s\n", s->log_path);
        return;
    }
    char buf[4096];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    if (size > (long)sizeof buf - 1)
        fseek(f, size - (long)sizeof buf + 1, SEEK_SET);
    else
        fseek(f, 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "---- %s ----\n%s\n---- end of log ----\n", s->log_path,
            buf);
}

static int log_says_port_taken(const rh_server *s)
{
    FILE *f = fopen(s->log_path, "r");
    if (!f)
        return 0;
    char line[1024];
    int taken = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "Address already in use"))
            taken = 1;
    fclose(f);
    return taken;
}

/* Fork and exec the server.  Everything the child needs is prepared before
 * fork(): the test process may have threads, so the child may only make
 * async-signal-safe calls until exec. */
static int spawn(rh_server *s, const char *exe)
{
    char port[16], conf[160];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(conf, sizeof conf, "%s/sentinel.conf", s->dir);
    const char *argv[RH_MAX_ARGS];
    int n = 0;
    argv[n++] = exe;
    if (s->opts.sentinel_conf) {
        /* The file comes first; Sentinel refuses to run without one it
         * can rewrite. */
        argv[n++] = conf;
        argv[n++] = "--sentinel";
    }
    argv[n++] = "--port";
    argv[n++] = s->opts.tls ? "0" : port;
    if (s->opts.tls) {
        argv[n++] = "--tls-port";
        argv[n++] = port;
        argv[n++] = "--tls-cert-file";
        argv[n++] = s->opts.tls_cert ? s->opts.tls_cert : s->opts.tls->server;
        argv[n++] = "--tls-key-file";
        argv[n++] = s->opts.tls_key ? s->opts.tls_key : s->opts.tls->server_key;
        argv[n++] = "--tls-ca-cert-file";
        argv[n++] = s->opts.tls->ca;
        argv[n++] = "--tls-auth-clients";
        argv[n++] =
            s->opts.tls_auth_clients ? s->opts.tls_auth_clients : "optional";
    }
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--dir";
    argv[n++] = s->dir;
    argv[n++] = "--daemonize";
    argv[n++] = "no";
    argv[n++] = "--logfile";
    argv[n++] = ""; /* stdout, redirected to log_path */
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    argv[n++] = s->opts.aof ? "yes" : "no";
    if (s->opts.aof) {
        /* Every write on disk before the reply: a restart or SIGKILL loses
         * nothing, so tests can reason about what survives. */
        argv[n++] = "--appendfsync";
        argv[n++] = "always";
    }
    if (s->opts.unix_socket || s->opts.tls) {
        argv[n++] = "--unixsocket";
        argv[n++] = s->sock_path;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
    }
    if (s->opts.password) {
        argv[n++] = "--requirepass";
        argv[n++] = s->opts.password;
    }
    if (s->opts.extra_args)
        for (const char *const *a = s->opts.extra_args; *a; a++) {
            if (n >= RH_MAX_ARGS - 1) {
                fprintf(stderr, "redis harness: too many extra_args\n");
                return -1;
            }
            argv[n++] = *a;
        }
    argv[n] = NULL;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("redis harness: fork");
        return -1;
    }
    if (pid == 0) {
        /* Die with the test, even when ctest SIGKILLs it on TIMEOUT. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        int log = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int null = open("/dev/null", O_RDONLY);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        if (null >= 0)
            dup2(null, 0);
        execv(exe, (char *const *)argv);
        static const char msg[] = "redis harness: execv redis-server failed\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        _exit(127);
    }
    s->pid = pid;
    return 0;
}

enum { READY = 0, FAILED = -1, PORT_TAKEN = -2 };

/* Poll until PONG, the process exits, or the deadline passes. */
static int wait_ready(rh_server *s)
{
    long long deadline = mono_ms() + RH_READY_TIMEOUT_MS;
    char err[256] = "";
    for (;;) {
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            if (log_says_port_taken(s))
                return PORT_TAKEN;
            fprintf(stderr,
                    "redis harness: redis-server exited at start "
                    "(status 0x%x)\n",
                    status);
            return FAILED;
        }
        redisContext *c = rh__connect_quiet(s, 200, err, sizeof err);
        if (c) {
            redisReply *r = redisCommand(c, "PING");
            int pong = r && r->type == REDIS_REPLY_STATUS &&
                       strcmp(r->str, "PONG") == 0;
            if (r)
                snprintf(err, sizeof err, "PING replied %s",
                         r->str ? r->str : "(non-string)");
            freeReplyObject(r);
            redisFree(c);
            /* "LOADING" (AOF being read) is not ready yet. */
            if (pong)
                return READY;
        }
        if (mono_ms() >= deadline) {
            fprintf(stderr,
                    "redis harness: redis-server on port %d did not "
                    "answer PING within %d ms (last: %s)\n",
                    s->port, RH_READY_TIMEOUT_MS, err);
            rh__terminate(s->pid, 2000);
            s->pid = 0;
            return FAILED;
        }
        rh__sleep_ms(10);
    }
}

static int start_on_port(rh_server *s, const char *exe)
{
    if (s->opts.tls)
        snprintf(s->url, sizeof s->url, "rediss://localhost:%d", s->port);
    else
        snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
    if (spawn(s, exe) != 0)
        return FAILED;
    int r = wait_ready(s);
    if (r == READY) {
        s->owner = getpid();
        rh__registry_add(s->pid, s->dir);
    }
    return r;
}

static const char *find_server(const rh_server *s)
{
    const char *exe = rh_server_path();
    if (!exe)
        fprintf(stderr,
                "redis harness: redis-server not found ($LW_REDIS_SERVER, "
                "$PATH, /usr/bin, /usr/local/bin).  The tests need a real "
                "Redis: apt-get install redis-server.  This is a test "
                "failure, not a skip.\n");
    /* Debian's redis-sentinel is redis-server under another name, which
     * --sentinel makes a sentinel as well. */
    if (exe && s->opts.sentinel_conf && rh_sentinel_path())
        exe = rh_sentinel_path();
    return exe;
}

/* The sentinel's configuration file, from opts.sentinel_conf; 0 or -1. */
static int write_conf(const rh_server *s)
{
    char path[160];
    FILE *f;
    int ok;

    snprintf(path, sizeof path, "%s/sentinel.conf", s->dir);
    if ((f = fopen(path, "w")) == NULL) {
        perror("redis harness: sentinel.conf");
        return -1;
    }
    ok = fputs(s->opts.sentinel_conf, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int rh_start(rh_server *s, const rh_opts *opts)
{
    memset(s, 0, sizeof *s);
    if (opts)
        s->opts = *opts;
    if (s->opts.tls == NULL && getenv("LW_TEST_TLS") != NULL) {
        /* Cluster nodes announce 127.0.0.1: a certificate that has it. */
        if ((s->opts.tls = rh__tls_from_env()) == NULL)
            return -1;
        s->opts.tls_cert = s->opts.tls->node;
        s->opts.tls_key = s->opts.tls->node_key;
    }
    const char *exe = find_server(s);
    if (!exe)
        return -1;

    const char *tmp = getenv("TMPDIR");
    /* Keep the unix socket path well under sun_path's 108 bytes. */
    if (!tmp || !*tmp || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s/lw-redis-XXXXXX", tmp);
    if (!mkdtemp(s->dir)) {
        perror("redis harness: mkdtemp");
        return -1;
    }
    snprintf(s->sock_path, sizeof s->sock_path, "%s/redis.sock", s->dir);
    snprintf(s->log_path, sizeof s->log_path, "%s/redis.log", s->dir);
    if (s->opts.sentinel_conf && write_conf(s) != 0) {
        rh_remove_tree(s->dir);
        s->dir[0] = '\0';
        return -1;
    }

    for (int attempt = 0; attempt < 20; attempt++) {
        s->port = rh_free_port();
        if (s->port < 0)
            break;
        int r = start_on_port(s, exe);
        if (r == READY)
            return 0;
        if (r != PORT_TAKEN) {
            rh__print_log(s);
            break;
        }
        /* Someone took the port between our probe and the server's bind. */
        remove(s->log_path);
    }
    fprintf(stderr, "redis harness: could not start redis-server (%s)\n", exe);
    rh_remove_tree(s->dir);
    s->dir[0] = '\0';
    return -1;
}

static void drop_raw(rh_server *s)
{
    if (s->raw && s->raw_pid == getpid())
        redisFree(s->raw);
    s->raw = NULL;
}

static int stop_process(rh_server *s)
{
    if (s->pid <= 0 || s->owner != getpid())
        return 0;
    drop_raw(s);
    int r = rh__terminate(s->pid, 5000);
    rh__registry_remove(s->pid);
    s->pid = 0;
    s->paused = 0;
    return r;
}

int rh_stop_keep(rh_server *s)
{
    return stop_process(s);
}

int rh_stop(rh_server *s)
{
    if (s->owner != 0 && s->owner != getpid())
        return 0; /* a forked child: the server is the parent's */
    int r = stop_process(s);
    rh_remove_tree(s->dir);
    s->dir[0] = '\0';
    return r;
}

int rh_kill(rh_server *s)
{
    if (s->pid <= 0 || s->owner != getpid())
        return -1;
    drop_raw(s);
    kill(s->pid, SIGKILL);
    int status;
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
        ;
    rh__registry_remove(s->pid);
    s->pid = 0;
    s->paused = 0;
    return 0;
}

int rh_pause(rh_server *s)
{
    if (s->pid <= 0 || kill(s->pid, SIGSTOP) != 0)
        return -1;
    s->paused = 1;
    return 0;
}

int rh_resume(rh_server *s)
{
    if (s->pid <= 0 || kill(s->pid, SIGCONT) != 0)
        return -1;
    s->paused = 0;
    return 0;
}

int rh_start_again(rh_server *s)
{
    if (s->pid > 0)
        return 0;
    const char *exe = find_server(s);
    if (!exe || !s->dir[0])
        return -1;
    /* The port was ours a moment ago; a parallel test may grab it in between,
     * in which case wait for it to go away rather than move (the runtime
     * under test is configured with this port). */
    for (int attempt = 0; attempt < 50; attempt++) {
        int r = start_on_port(s, exe);
        if (r == READY)
            return 0;
        if (r != PORT_TAKEN) {
            rh__print_log(s);
            return -1;
        }
        rh__sleep_ms(100);
    }
    fprintf(stderr, "redis harness: port %d stayed taken; no restart\n",
            s->port);
    return -1;
}

int rh_restart(rh_server *s)
{
    stop_process(s);
    return rh_start_again(s);
}

/* fork/exec, prctl and kill are POSIX and Linux, not C11. */
#ifndef _GNU_SOURCE /* the harness target defines it too */
#define _GNU_SOURCE
#endif

#include "procs.h"

#include "httpc.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 15000
#define MAX_ARGS         32

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int read_port(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int port = -1;
    if (fscanf(f, "%d", &port) != 1)
        port = -1;
    fclose(f);
    return port;
}

static int healthy(int port)
{
    struct httpc c;
    struct httpc_resp r;
    httpc_init(&c, "127.0.0.1", port, 2000);
    int ok = httpc_request(&c, "GET", "/health", NULL, 0, &r) == 0 &&
             r.status == 200;
    httpc_close(&c);
    return ok;
}

int svc_start(struct svc_proc *p, const char *exe, const char *dir, int idx,
              const char *db, const char *redis_url, char *const *extra)
{
    memset(p, 0, sizeof *p);
    snprintf(p->port_file, sizeof p->port_file, "%s/port.%d", dir, idx);
    remove(p->port_file);

    char *argv[MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)exe;
    argv[n++] = "--port";
    argv[n++] = "0"; /* the service binds a free port itself: no race */
    argv[n++] = "--port-file";
    argv[n++] = p->port_file;
    argv[n++] = "--db";
    argv[n++] = (char *)db;
    for (int i = 0; extra && extra[i] && n < MAX_ARGS - 1; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("e2e: fork");
        return -1;
    }
    if (pid == 0) {
        /* Die with the test, even when ctest's TIMEOUT kills it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        setenv("LOCKWEAVE_REDIS_URL", redis_url, 1);
        execv(exe, argv);
        fprintf(stderr, "e2e: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    p->pid = pid;

    for (int waited = 0; waited < READY_TIMEOUT_MS; waited += 20) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "e2e: instance %d exited during start-up\n", idx);
            p->pid = 0;
            return -1;
        }
        if (p->port <= 0)
            p->port = read_port(p->port_file);
        if (p->port > 0 && healthy(p->port))
            return 0;
        sleep_ms(20);
    }
    fprintf(stderr, "e2e: instance %d not ready after %d ms\n", idx,
            READY_TIMEOUT_MS);
    svc_stop(p);
    return -1;
}

int svc_stop(struct svc_proc *p)
{
    if (p->pid <= 0)
        return 0;
    kill(p->pid, SIGTERM);
    int status;
    for (int waited = 0; waited < 5000; waited += 10) {
        if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
            p->pid = 0;
            if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
            return WEXITSTATUS(status);
        }
        sleep_ms(10);
    }
    fprintf(stderr, "e2e: pid %d ignored SIGTERM; SIGKILL\n", (int)p->pid);
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
    p->pid = 0;
    return -1;
}

int run_capture_summary(char *const *argv, char *summary, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("e2e: pipe");
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("e2e: fork");
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        fprintf(stderr, "e2e: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[1024];
    summary[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        fputs(line, stdout);
        if (strncmp(line, "SUMMARY ", 8) == 0) {
            snprintf(summary, len, "%s", line + 8);
        }
    }
    if (f)
        fclose(f);
    else
        close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    fflush(stdout);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

long long json_int(const char *json, const char *name)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(json, pat);
    long long v;
    if (!p || sscanf(p + strlen(pat), "%lld", &v) != 1)
        return LLONG_MIN;
    return v;
}

/*
 * lw_with_redis [--] COMMAND [ARG]...
 *
 * Runs COMMAND with a private redis-server (free loopback port, temporary
 * directory) and LOCKWEAVE_REDIS_URL pointing at it, then stops the server by
 * its PID.  Exits with COMMAND's status (128 + signal if it was killed).  For
 * scripted tests (tests/install) that need a server but are not C programs.
 */
#include "redis_harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int first = 1;
    if (first < argc && strcmp(argv[first], "--") == 0)
        first++;
    if (first >= argc) {
        fprintf(stderr, "usage: %s [--] COMMAND [ARG]...\n", argv[0]);
        return 2;
    }
    rh_server s;
    if (rh_start(&s, NULL) != 0)
        return 1;
    fprintf(stderr, "lw_with_redis: redis-server pid %d at %s\n", (int)s.pid,
            s.url);
    setenv("LOCKWEAVE_REDIS_URL", s.url, 1);

    pid_t pid = fork();
    if (pid < 0) {
        perror("lw_with_redis: fork");
        rh_stop(&s);
        return 1;
    }
    if (pid == 0) {
        execvp(argv[first], argv + first);
        fprintf(stderr, "lw_with_redis: cannot run %s: %s\n", argv[first],
                strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    rh_stop(&s);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

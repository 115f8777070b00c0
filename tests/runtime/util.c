#include "util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t now_ms(void)
{
    return now_us() / 1000;
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void use_url(const char *url, int connect_timeout_ms, int command_timeout_ms)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = connect_timeout_ms;
    cfg.command_timeout_ms = command_timeout_ms;
    CHECK_RC(lw_configure(&cfg), LW_OK);
}

void use_server(const rh_server *s)
{
    use_url(s->url, 1000, 2000);
}

lw_lock_opts lock_opts(uint32_t expire_ms, uint32_t wait_ms, int32_t max_renew)
{
    lw_lock_opts o;
    memset(&o, 0, sizeof o);
    o.expire_ms = expire_ms;
    o.wait_ms = wait_ms;
    o.max_renew = max_renew;
    return o;
}

int lock_str(lw_guard *g, const char *key, uint32_t expire_ms, uint32_t wait_ms)
{
    lw_lock_opts o = lock_opts(expire_ms, wait_ms, -1);
    return lw_lock(g, key, strlen(key), &o);
}

int lock_exists(rh_server *s, const char *key)
{
    long long n = rh_cmd_int(s, "EXISTS lock:%s", key);
    CHECK_MSG(n == 0 || n == 1, "EXISTS lock:%s failed", key);
    return (int)n;
}

long long command_calls(rh_server *s, const char *const *cmds, size_t n)
{
    redisReply *r = rh_cmd(s, "INFO commandstats");
    long long sum = 0;

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    for (size_t i = 0; i < n; i++) {
        char needle[64];
        const char *p;

        snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmds[i]);
        if ((p = strstr(r->str, needle)) != NULL)
            sum += atoll(p + strlen(needle));
    }
    freeReplyObject(r);
    return sum;
}

long long lock_pttl(rh_server *s, const char *key)
{
    long long n = rh_cmd_int(s, "PTTL lock:%s", key);
    CHECK_MSG(n != LLONG_MIN, "PTTL lock:%s failed", key);
    return n;
}

int64_t wait_until(int (*cond_fn)(void *), void *arg, int timeout_ms)
{
    int64_t start = now_ms();
    for (;;) {
        if (cond_fn(arg))
            return now_ms() - start;
        if (now_ms() - start >= timeout_ms)
            return -1;
        sleep_ms(5);
    }
}

void die_holding(const rh_server *s, const char *key, const lw_lock_opts *o)
{
    int fd[2];
    char b;
    pid_t pid;

    CHECK_EQ(pipe(fd), 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        lw_guard g;
        use_server(s);
        if (lw_lock(&g, key, strlen(key), o) == LW_OK &&
            write(fd[1], "x", 1) == 1)
            pause();
        _exit(1);
    }
    CHECK_EQ(read(fd[0], &b, 1), 1);
    CHECK_EQ(kill(pid, SIGKILL), 0);
    CHECK_EQ(waitpid(pid, NULL, 0), pid);
    close(fd[0]);
    close(fd[1]);
}

void in_processes(int n, void (*fn)(int))
{
    pid_t kids[64];

    CHECK(n > 0 && n <= 64);
    for (int p = 0; p < n; p++) {
        kids[p] = fork();
        CHECK(kids[p] >= 0);
        if (kids[p] == 0) {
            fn(p);
            lw_shutdown();
            _exit(0);
        }
    }
    for (int p = 0; p < n; p++) {
        int st;
        CHECK_EQ(waitpid(kids[p], &st, 0), kids[p]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: 0x%x", p,
                  st);
    }
}

/* Delete every fence counter, whatever it is named. */
void forget_fences(rh_server *s)
{
    redisReply *r = rh_cmd(s, "SCAN 0 MATCH *fence* COUNT 1000000");
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    CHECK_EQ(strcmp(r->element[0]->str, "0"), 0); /* one call saw them all */
    CHECK(r->element[1]->elements > 0);
    for (size_t i = 0; i < r->element[1]->elements; i++) {
        const char *k = r->element[1]->element[i]->str;
        const char *argv[] = {"DEL", k};
        freeReplyObject(rh_cmd_argv(s, 2, argv, NULL));
    }
    freeReplyObject(r);
}

int replica_online(void *master)
{
    redisReply *r = rh_cmd(master, "INFO replication");
    int up = r != NULL && r->type == REDIS_REPLY_STRING &&
             strstr(r->str, "state=online") != NULL;
    if (r != NULL)
        freeReplyObject(r);
    return up;
}

void start_pair(rh_server *m, rh_server *r, char port[16], const char **args)
{
    static const char *const master_args[] = {"--repl-diskless-sync-delay", "0",
                                              NULL};
    rh_opts o;
    int k = 0;

    rh_opts_init(&o);
    o.extra_args = master_args;
    CHECK_EQ(rh_start(m, &o), 0);
    snprintf(port, 16, "%d", m->port);
    args[k++] = "--replicaof";
    args[k++] = "127.0.0.1";
    args[k++] = port;
    if (getenv("LW_TEST_TLS") != NULL) { /* every server serves TLS only */
        args[k++] = "--tls-replication";
        args[k++] = "yes";
    }
    args[k] = NULL;
    o.extra_args = args;
    CHECK_EQ(rh_start(r, &o), 0);
    CHECK_MSG(wait_until(replica_online, m, 10000) >= 0,
              "replica not online at its master within 10 s");
}

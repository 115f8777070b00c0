/* The harness's own test: every feature the runtime tests lean on. */
#include "check.h"
#include "redis_harness.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int alive(pid_t pid)
{
    return kill(pid, 0) == 0;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void check_string(rh_server *s, const char *key, const char *want)
{
    redisReply *r = rh_cmd(s, "GET %s", key);
    CHECK(r != NULL);
    CHECK_MSG(r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0,
              "GET %s: type %d", key, r->type);
    freeReplyObject(r);
}

static void basic(void)
{
    rh_server a, b;
    CHECK_EQ(rh_start(&a, NULL), 0);
    CHECK_EQ(rh_start(&b, NULL), 0);
    CHECK(a.port != b.port);
    CHECK(alive(a.pid));
    CHECK(exists(a.dir));

    redisReply *r = rh_cmd(&a, "SET %s %b", "k", "v\0x", (size_t)3);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    CHECK_EQ(rh_cmd_int(&a, "STRLEN k"), 3);
    CHECK_EQ(rh_cmd_int(&b, "EXISTS k"), 0); /* separate servers */

    /* Paused: a client with a short timeout gets nothing back. */
    CHECK_EQ(rh_pause(&a), 0);
    redisContext *c = rh_connect(&a);
    CHECK(c != NULL); /* the kernel still accepts the connection */
    struct timeval tv = {0, 200000};
    redisSetTimeout(c, tv);
    r = redisCommand(c, "PING");
    CHECK(r == NULL);
    redisFree(c);
    CHECK_EQ(rh_resume(&a), 0);
    CHECK_EQ(rh_cmd_int(&a, "EXISTS k"), 1);

    /* Stopped while paused: still goes away, directory removed. */
    pid_t pid = a.pid;
    char dir[sizeof a.dir];
    strcpy(dir, a.dir);
    CHECK_EQ(rh_pause(&a), 0);
    CHECK_EQ(rh_stop(&a), 0);
    CHECK(!alive(pid));
    CHECK(!exists(dir));
    CHECK_EQ(rh_stop(&a), 0); /* twice is harmless */
    CHECK_EQ(rh_stop(&b), 0);
}

static void restart_with_aof(void)
{
    rh_opts o;
    rh_opts_init(&o);
    o.aof = 1;
    o.unix_socket = 1;
    rh_server s;
    CHECK_EQ(rh_start(&s, &o), 0);
    CHECK(exists(s.sock_path));
    int port = s.port;
    redisReply *r = rh_cmd(&s, "SET kept yes");
    freeReplyObject(r);

    CHECK_EQ(rh_restart(&s), 0);
    CHECK_EQ(s.port, port);
    check_string(&s, "kept", "yes");

    /* A crash loses nothing either, thanks to appendfsync always. */
    r = rh_cmd(&s, "SET kept2 yes");
    freeReplyObject(r);
    CHECK_EQ(rh_kill(&s), 0);
    CHECK_EQ(rh_start_again(&s), 0);
    CHECK_EQ(s.port, port);
    check_string(&s, "kept2", "yes");
    CHECK_EQ(rh_stop(&s), 0);
}

static void auth(void)
{
    static const char *const acl[] = {"--user", "alice", "on",    ">secret",
                                      "~*",     "&*",    "+@all", NULL};
    rh_opts o;
    rh_opts_init(&o);
    o.password = "rootpw";
    o.extra_args = acl;
    rh_server s;
    CHECK_EQ(rh_start(&s, &o), 0);
    CHECK_EQ(rh_cmd_int(&s, "EXISTS x"), 0); /* harness authenticates */

    redisContext *c = redisConnect("127.0.0.1", s.port);
    CHECK(c && !c->err);
    redisReply *r = redisCommand(c, "GET x");
    CHECK(r && r->type == REDIS_REPLY_ERROR); /* NOAUTH */
    freeReplyObject(r);
    r = redisCommand(c, "AUTH alice secret");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    CHECK_EQ(rh_stop(&s), 0);
}

/* Missing redis-server: a clear failure, not a hang or a crash. */
static void missing_server(void)
{
    setenv("LW_REDIS_SERVER", "/nonexistent/redis-server", 1);
    rh_server s;
    CHECK_EQ(rh_start(&s, NULL), -1);
    unsetenv("LW_REDIS_SERVER");
}

/* A forked child stopping "its" copy must not stop the parent's server. */
static void child_does_not_stop(void)
{
    rh_server s;
    CHECK_EQ(rh_start(&s, NULL), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        rh_stop(&s);
        exit(rh_cmd_int(&s, "DBSIZE") == 0 ? 0 : 3); /* own connection */
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(alive(s.pid));
    CHECK_EQ(rh_cmd_int(&s, "DBSIZE"), 0);
    CHECK_EQ(rh_stop(&s), 0);
}

int main(void)
{
    basic();
    restart_with_aof();
    auth();
    missing_server();
    child_does_not_stop();
    printf("harness: ok\n");
    return 0;
}

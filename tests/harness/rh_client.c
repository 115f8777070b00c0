/* The harness's own Redis client: tests use it to look at (and tamper with)
 * the keys lockweave writes, independently of lockweave's connections. */
#include "rh_internal.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Long enough for any test command, short enough that a paused server does
 * not hang a test past its ctest TIMEOUT. */
#define RH_CMD_TIMEOUT_MS 5000

static int authenticate(redisContext *c, const char *password, char *err,
                        size_t n)
{
    if (!password)
        return 0;
    redisReply *r = redisCommand(c, "AUTH %s", password);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        snprintf(err, n, "AUTH failed: %s", r && r->str ? r->str : c->errstr);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

redisContext *rh__connect_quiet(const rh_server *s, int timeout_ms, char *err,
                                size_t n)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    /* A TLS server is reached over its unix socket: hiredis 0.14 has no
     * TLS, and the harness is not what the tests check. */
    redisContext *c = s->opts.tls
                          ? redisConnectUnixWithTimeout(s->sock_path, tv)
                          : redisConnectWithTimeout("127.0.0.1", s->port, tv);
    if (!c || c->err) {
        snprintf(err, n, "connect %s:%d: %s",
                 s->opts.tls ? s->sock_path : "127.0.0.1", s->port,
                 c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    struct timeval cmd = {RH_CMD_TIMEOUT_MS / 1000,
                          (RH_CMD_TIMEOUT_MS % 1000) * 1000};
    redisSetTimeout(c, cmd);
    if (authenticate(c, s->opts.password, err, n) != 0) {
        redisFree(c);
        return NULL;
    }
    return c;
}

redisContext *rh_connect(const rh_server *s)
{
    char err[256];
    redisContext *c = rh__connect_quiet(s, 2000, err, sizeof err);
    if (!c)
        fprintf(stderr, "redis harness: %s\n", err);
    return c;
}

static int ensure_raw(rh_server *s)
{
    if (s->raw && s->raw_pid != getpid())
        s->raw = NULL; /* the parent's socket: leave it to the parent */
    if (!s->raw) {
        s->raw = rh_connect(s);
        s->raw_pid = getpid();
    }
    return s->raw ? 0 : -1;
}

/* redisCommandArgv() with SIGPIPE blocked for the call, and one it raised
 * taken back: a server that closed the harness's connection (as a sentinel
 * does to every client of a replica it promotes) must cost an EPIPE, not
 * the test.  The process's disposition stays as it is: tests check that the
 * library never raises SIGPIPE. */
static redisReply *command(redisContext *c, int argc, const char **argv,
                           const size_t *argvlen)
{
    sigset_t pipe_set, old, pending;
    struct timespec now = {0, 0};
    redisReply *r;
    int was_pending;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    r = redisCommandArgv(c, argc, argv, argvlen);
    sigpending(&pending);
    if (!was_pending && sigismember(&pending, SIGPIPE))
        sigtimedwait(&pipe_set, NULL, &now);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

/* One retry on a fresh connection: after rh_restart() the old socket is dead
 * and the first command on it fails without reaching the new server. */
static redisReply *run(rh_server *s, int argc, const char **argv,
                       const size_t *argvlen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (ensure_raw(s) != 0)
            return NULL;
        redisReply *r = command(s->raw, argc, argv, argvlen);
        if (r)
            return r;
        fprintf(stderr, "redis harness: command %.*s: %s%s\n",
                (int)(argvlen ? argvlen[0] : strlen(argv[0])), argv[0],
                s->raw->errstr, attempt == 0 ? " (reconnecting)" : "");
        redisFree(s->raw);
        s->raw = NULL;
    }
    return NULL;
}

redisReply *rh_cmd_argv(rh_server *s, int argc, const char **argv,
                        const size_t *argvlen)
{
    return run(s, argc, argv, argvlen);
}

/* hiredis formats the printf-style command into the protocol; re-parse it
 * into argv so that both entry points share the retry logic. */
static redisReply *vcmd(rh_server *s, const char *fmt, va_list ap)
{
    char *proto = NULL;
    int len = redisvFormatCommand(&proto, fmt, ap);
    if (len < 0 || !proto) {
        fprintf(stderr, "redis harness: cannot format \"%s\"\n", fmt);
        return NULL;
    }
    /* *<argc>\r\n then $<len>\r\n<bytes>\r\n per argument. */
    int argc = 0;
    const char *p = proto + 1;
    argc = (int)strtol(p, (char **)&p, 10);
    p += 2;
    const char *argv[64];
    size_t argvlen[64];
    redisReply *r = NULL;
    if (argc > 0 && argc <= 64) {
        for (int i = 0; i < argc; i++) {
            p++; /* '$' */
            argvlen[i] = (size_t)strtol(p, (char **)&p, 10);
            p += 2;
            argv[i] = p;
            p += argvlen[i] + 2;
        }
        r = run(s, argc, argv, argvlen);
    } else {
        fprintf(stderr, "redis harness: %d arguments in \"%s\"\n", argc, fmt);
    }
    redisFreeCommand(proto);
    return r;
}

redisReply *rh_cmd(rh_server *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(s, fmt, ap);
    va_end(ap);
    return r;
}

int rh_ok(redisReply *r, const char *what)
{
    int ok = r != NULL && r->type != REDIS_REPLY_ERROR;

    if (!ok)
        fprintf(stderr, "redis harness: %s: %s\n", what,
                r != NULL ? r->str : "no reply");
    if (r != NULL)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

long long rh_cmd_int(rh_server *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(s, fmt, ap);
    va_end(ap);
    long long v = LLONG_MIN;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r)
        fprintf(stderr,
                "redis harness: \"%s\" gave reply type %d (%s), not "
                "an integer\n",
                fmt, r->type, r->str ? r->str : "");
    freeReplyObject(r);
    return v;
}

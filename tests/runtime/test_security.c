/* Security properties of the lock and its logging:
 *  - only the owner's token releases or renews a lock: lockweave's own
 *    release and renewal calls, captured with MONITOR and replayed by
 *    another client with wrong tokens (empty, truncated, the next sequence
 *    number, a stale token of the same thread, ...), change nothing; the
 *    same calls with the right token do (so the replay is the real thing);
 *  - tokens are unguessable: distinct across threads, processes and
 *    acquisitions, their random parts far apart in bits and balanced;
 *  - passwords never reach the log, at any level, whatever fails (wrong
 *    password, malformed URL, unreachable server); tokens never reach it at
 *    INFO or above, even when locks are lost.
 * test_lost.c covers lockweave's own leave of a key that now holds another
 * token (LW_ELOST, the other owner's key intact). */
#include "util.h"

#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define ADMIN_PW "Adm1n-S3cret-pw"
#define ALICE_PW "al1ce-S3cret-pw"

static rh_server srv;
static char alice_url[256];
static int failures; /* checks that let the rest run first */

/* ---- log capture -------------------------------------------------------- */

struct line {
    int level;
    char *msg;
};
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct line lines[4096];
static int nlines;

static void capture(int level, const char *msg, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&log_mu);
    if (nlines < 4096) {
        lines[nlines].level = level;
        lines[nlines].msg = strdup(msg);
        nlines++;
    }
    pthread_mutex_unlock(&log_mu);
}

/* Count log lines at or above min_level containing needle (printing them
 * when show). */
static int logged(const char *needle, int min_level, int show)
{
    int n = 0;
    pthread_mutex_lock(&log_mu);
    for (int i = 0; i < nlines; i++)
        if (lines[i].level >= min_level && lines[i].msg &&
            strstr(lines[i].msg, needle) != NULL) {
            if (show)
                fprintf(stderr, "  logged (level %d): %s\n", lines[i].level,
                        lines[i].msg);
            n++;
        }
    pthread_mutex_unlock(&log_mu);
    return n;
}

/* ---- tokens ------------------------------------------------------------- */

static char *tokens[64];
static int ntokens;

/* GET of a lock key: its owner's token (CHECKs it exists). */
static char *token_of(const char *key)
{
    redisReply *r = rh_cmd(&srv, "GET lock:%s", key);
    CHECK_MSG(r && r->type == REDIS_REPLY_STRING, "lock:%s has no token", key);
    char *t = strdup(r->str);
    freeReplyObject(r);
    CHECK(ntokens < 64);
    tokens[ntokens++] = t;
    return t;
}

/* ---- MONITOR: lockweave's own release and renewal calls ----------------- */

struct cmd {
    int argc;
    char *argv[16];
    size_t len[16];
};

static void cmd_free(struct cmd *c)
{
    for (int i = 0; i < c->argc; i++)
        free(c->argv[i]);
    c->argc = 0;
}

/* Parse one MONITOR line: `<time> [<db> <addr>] "arg" "arg" ...`, each arg
 * in Redis's quoted form (\\ \" \n \r \t \a \b \xHH). */
static int parse_monitor(const char *s, struct cmd *c)
{
    c->argc = 0;
    const char *p = strchr(s, ']');
    if (p == NULL)
        return -1;
    p++;
    while ((p = strchr(p, '"')) != NULL && c->argc < 16) {
        char *out = malloc(strlen(p) + 1);
        size_t n = 0;
        p++;
        while (*p && *p != '"') {
            if (*p == '\\' && p[1]) {
                p++;
                switch (*p) {
                case 'n':
                    out[n++] = '\n';
                    break;
                case 'r':
                    out[n++] = '\r';
                    break;
                case 't':
                    out[n++] = '\t';
                    break;
                case 'a':
                    out[n++] = '\a';
                    break;
                case 'b':
                    out[n++] = '\b';
                    break;
                case 'x': {
                    char hex[3] = {p[1], p[2], 0};
                    out[n++] = (char)strtol(hex, NULL, 16);
                    p += 2;
                    break;
                }
                default:
                    out[n++] = *p;
                    break;
                }
                p++;
            } else
                out[n++] = *p++;
        }
        out[n] = '\0';
        c->argv[c->argc] = out;
        c->len[c->argc] = n;
        c->argc++;
        if (*p == '"')
            p++;
    }
    return 0;
}

static int is_script(const struct cmd *c)
{
    return c->argc >= 3 && (strcasecmp(c->argv[0], "EVALSHA") == 0 ||
                            strcasecmp(c->argv[0], "EVAL") == 0);
}

/* Replace every "lock:<from>" with "lock:<to>" inside each argument (the
 * lock key, its helper keys, channel and prefixes all contain it). */
static void retarget(struct cmd *c, const char *from, const char *to)
{
    char f[64], t[64];
    snprintf(f, sizeof f, "lock:%s", from);
    snprintf(t, sizeof t, "lock:%s", to);
    for (int i = 3; i < c->argc; i++) {
        char *hit = strstr(c->argv[i], f);
        if (hit == NULL)
            continue;
        size_t pre = (size_t)(hit - c->argv[i]);
        char *n = malloc(c->len[i] - strlen(f) + strlen(t) + 1);
        memcpy(n, c->argv[i], pre);
        strcpy(n + pre, t);
        strcat(n, hit + strlen(f));
        free(c->argv[i]);
        c->argv[i] = n;
        c->len[i] = strlen(n);
    }
}

static void set_arg(struct cmd *c, int i, const char *v)
{
    free(c->argv[i]);
    c->argv[i] = strdup(v);
    c->len[i] = strlen(v);
}

static redisReply *replay(const struct cmd *c)
{
    return rh_cmd_argv(&srv, c->argc, (const char **)c->argv, c->len);
}

static struct cmd release_cmd, renew_cmd;

/* Take and keep "probe" long enough to be renewed, release it, and catch
 * both script calls on a MONITOR connection. */
static void capture_scripts(void)
{
    redisContext *mon = rh_connect(&srv);
    CHECK(mon != NULL);
    struct timeval tv = {5, 0};
    redisSetTimeout(mon, tv);
    redisReply *r = redisCommand(mon, "MONITOR");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);

    lw_guard g;
    CHECK_RC(lock_str(&g, "probe", 600, 0), LW_OK);
    token_of("probe");
    sleep_ms(700); /* renewed at ~200 ms, ~400 ms, ~600 ms */
    CHECK_EQ(lw_still_held(), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    while (release_cmd.argc == 0) {
        void *v = NULL;
        CHECK_MSG(redisGetReply(mon, &v) == REDIS_OK,
                  "MONITOR ended before lockweave's release was seen: %s",
                  mon->errstr);
        r = v;
        struct cmd c;
        if (r->type == REDIS_REPLY_STATUS && parse_monitor(r->str, &c) == 0) {
            int nkeys = is_script(&c) ? atoi(c.argv[2]) : -1;
            int probe =
                nkeys > 0 && c.argc > 3 && strcmp(c.argv[3], "lock:probe") == 0;
            if (probe && nkeys == 1 && c.argc == 6 && renew_cmd.argc == 0)
                renew_cmd = c; /* KEYS: lock; ARGV: token, lease ms */
            else if (probe && nkeys == 3)
                release_cmd = c; /* KEYS: lock, queue, fence; ARGV[1]:
                                    token */
            else
                cmd_free(&c);
        }
        freeReplyObject(r);
    }
    redisFree(mon);
    CHECK_MSG(renew_cmd.argc == 6, "no renewal of lock:probe was seen");
    printf("captured: %s <sha> %s keys (release), %s <sha> 1 key (renew)\n",
           release_cmd.argv[0], release_cmd.argv[2], renew_cmd.argv[0]);
}

static void only_the_owner(void)
{
    capture_scripts();

    lw_guard g;
    CHECK_RC(lock_str(&g, "victim", 10000, 0), LW_OK);
    const char *tok = token_of("victim");
    const char *stale = tokens[0]; /* probe's: same thread, released */
    size_t tl = strlen(tok);

    /* Wrong tokens, from the obvious to the near miss. */
    char *wrong[8];
    int nw = 0;
    wrong[nw++] = strdup("");
    wrong[nw++] = strdup(stale);
    wrong[nw++] = strndup(tok, tl - 1);
    wrong[nw++] = malloc(tl + 2);
    snprintf(wrong[nw - 1], tl + 2, "%sx", tok);
    wrong[nw++] = strdup(tok);
    wrong[nw - 1][0] = wrong[nw - 1][0] == '0' ? '1' : '0';
    const char *colon = strrchr(tok, ':');
    if (colon != NULL) {
        /* The same thread's next token: base and sequence + 1. */
        unsigned long long seq = strtoull(colon + 1, NULL, 16);
        wrong[nw] = malloc(tl + 20);
        snprintf(wrong[nw], tl + 20, "%.*s:%llx", (int)(colon - tok), tok,
                 seq + 1);
        nw++;
        wrong[nw++] = strndup(tok, (size_t)(colon - tok)); /* base only */
    }

    for (int i = 0; i < nw; i++) {
        struct cmd rel = release_cmd, ren = renew_cmd;
        /* Deep copies, retargeted at "victim" with the wrong token. */
        for (int k = 0; k < rel.argc; k++)
            rel.argv[k] = strdup(release_cmd.argv[k]);
        for (int k = 0; k < ren.argc; k++)
            ren.argv[k] = strdup(renew_cmd.argv[k]);
        retarget(&rel, "probe", "victim");
        retarget(&ren, "probe", "victim");
        set_arg(&rel, 3 + atoi(rel.argv[2]), wrong[i]);
        set_arg(&ren, 4, wrong[i]);
        set_arg(&ren, 5, "600000");

        redisReply *r = replay(&rel);
        CHECK(r != NULL);
        printf("release with wrong token #%d: %s %lld\n", i,
               r->type == REDIS_REPLY_INTEGER ? "integer" : "other",
               r->type == REDIS_REPLY_INTEGER ? r->integer : 0);
        CHECK_MSG(r->type == REDIS_REPLY_INTEGER && r->integer == -1,
                  "wrong token #%d: the release script did not answer -1 "
                  "(held by another)",
                  i);
        freeReplyObject(r);
        r = replay(&ren);
        CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
        CHECK_MSG(r->element[0]->integer == 0,
                  "wrong token #%d renewed the lock", i);
        freeReplyObject(r);

        /* Still ours, untouched. */
        redisReply *v = rh_cmd(&srv, "GET lock:victim");
        CHECK(v && v->type == REDIS_REPLY_STRING && strcmp(v->str, tok) == 0);
        freeReplyObject(v);
        CHECK_RANGE(lock_pttl(&srv, "victim"), 1, 10000);
        cmd_free(&rel);
        cmd_free(&ren);
        free(wrong[i]);
    }
    CHECK_EQ(lw_still_held(), 1);

    /* The same calls with the right token act: the replay is genuine. */
    struct cmd rel = release_cmd, ren = renew_cmd;
    for (int k = 0; k < rel.argc; k++)
        rel.argv[k] = strdup(release_cmd.argv[k]);
    for (int k = 0; k < ren.argc; k++)
        ren.argv[k] = strdup(renew_cmd.argv[k]);
    retarget(&rel, "probe", "victim");
    retarget(&ren, "probe", "victim");
    set_arg(&rel, 3 + atoi(rel.argv[2]), tok);
    set_arg(&ren, 4, tok);
    set_arg(&ren, 5, "600000");
    redisReply *r = replay(&ren);
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 1);
    freeReplyObject(r);
    CHECK(lock_pttl(&srv, "victim") > 10000);
    r = replay(&rel);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
    CHECK_EQ(lock_exists(&srv, "victim"), 0);
    cmd_free(&rel);
    cmd_free(&ren);
    /* Released behind lockweave's back, by the token: reported as lost. */
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
}

/* ---- randomness --------------------------------------------------------- */

#define NTHREADS 6
#define NCHILD   6

static pthread_barrier_t barrier;

static void *hold_in_thread(void *arg)
{
    char key[32];
    snprintf(key, sizeof key, "tok:t%d", (int)(intptr_t)arg);
    lw_guard g;
    int rc = lock_str(&g, key, 30000, 0);
    pthread_barrier_wait(&barrier); /* main reads the tokens */
    pthread_barrier_wait(&barrier);
    if (rc == LW_OK)
        lw_guard_leave(&g);
    return (void *)(intptr_t)rc;
}

/* Child mode: take `key` and exit holding it (the key outlives us). */
static int child_main(const char *url, const char *key)
{
    use_url(url, 1000, 2000);
    lw_guard g;
    int rc = lock_str(&g, key, 60000, 0);
    fflush(stdout);
    _exit(rc == LW_OK ? 0 : 3);
}

static int hamming(const char *a, const char *b, size_t n)
{
    int d = 0;
    for (size_t i = 0; i < n; i++) {
        char x[2] = {a[i], 0}, y[2] = {b[i], 0};
        d += __builtin_popcount(
            (unsigned)(strtol(x, NULL, 16) ^ strtol(y, NULL, 16)));
    }
    return d;
}

static void unguessable(const char *self)
{
    int first = ntokens;
    /* Threads of this process. */
    pthread_t t[NTHREADS];
    CHECK_EQ(pthread_barrier_init(&barrier, NULL, NTHREADS + 1), 0);
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(
            pthread_create(&t[i], NULL, hold_in_thread, (void *)(intptr_t)i),
            0);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < NTHREADS; i++) {
        char key[32];
        snprintf(key, sizeof key, "tok:t%d", i);
        token_of(key);
    }
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < NTHREADS; i++) {
        void *rc;
        CHECK_EQ(pthread_join(t[i], &rc), 0);
        CHECK_RC((int)(intptr_t)rc, LW_OK);
    }
    pthread_barrier_destroy(&barrier);

    /* Processes started one right after the other (a clock- or pid-seeded
     * generator would show here). */
    for (int i = 0; i < NCHILD; i++) {
        char key[32];
        snprintf(key, sizeof key, "tok:p%d", i);
        char *argv[] = {(char *)self, "child", alice_url, key, NULL};
        pid_t pid;
        CHECK_EQ(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "child %d could not take its lock", i);
        token_of(key);
    }

    /* Acquisitions in a row on one thread. */
    for (int i = 0; i < 3; i++) {
        lw_guard g;
        CHECK_RC(lock_str(&g, "tok:seq", 5000, 0), LW_OK);
        token_of("tok:seq");
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }

    /* All distinct. */
    for (int i = 0; i < ntokens; i++)
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(tokens[i], tokens[j]) != 0,
                      "token %s handed out twice", tokens[i]);

    /* The random part (the hex before the last ':', >= 128 bits) of each
     * thread and process: far apart pairwise, balanced overall.  Random
     * 128-bit values differ in 64 +- 6 bits; 24 is > 6 sigma away. */
    int nb = NTHREADS + NCHILD;
    const char *base[NTHREADS + NCHILD];
    for (int i = 0; i < nb; i++) {
        base[i] = tokens[first + i];
        CHECK_MSG(strspn(base[i], "0123456789abcdef") >= 32,
                  "token %s: fewer than 128 bits of hex", base[i]);
    }
    const size_t blen = 32;
    int ones = 0, mind = 128;
    for (int i = 0; i < nb; i++) {
        ones += hamming(base[i], "00000000000000000000000000000000", blen);
        for (int j = 0; j < i; j++) {
            int d = hamming(base[i], base[j], blen);
            mind = d < mind ? d : mind;
        }
    }
    printf("%d tokens; random parts: closest pair %d bits apart of 128, "
           "%d of %d bits set\n",
           ntokens, mind, ones, nb * 128);
    CHECK_RANGE(mind, 24, 128);
    CHECK_RANGE(ones, nb * 64 - 9 * 23, nb * 64 + 9 * 23); /* ~9 sigma */
}

/* ---- what reaches the log ----------------------------------------------- */

static void make_warnings(void)
{
    /* Lost while held: deleted behind our back, then taken by another
     * owner while the watchdog renews. */
    lw_guard g;
    CHECK_RC(lock_str(&g, "lost-del", 5000, 0), LW_OK);
    token_of("lost-del");
    freeReplyObject(rh_cmd(&srv, "DEL lock:lost-del"));
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);

    /* A key holding a newline and a terminal escape, lost: its warning
     * names it escaped, on one line. */
    CHECK_RC(lock_str(&g, "evil\nlockweave: error: forged\x1b[2K", 5000, 0),
             LW_OK);
    freeReplyObject(
        rh_cmd(&srv, "DEL %s", "lock:evil\nlockweave: error: forged\x1b[2K"));
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);

    CHECK_RC(lock_str(&g, "lost-taken", 600, 0), LW_OK);
    token_of("lost-taken");
    freeReplyObject(rh_cmd(&srv, "SET lock:lost-taken intruder PX 5000"));
    sleep_ms(700);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
}

/* A server without EVAL/EVALSHA (renamed away): its error reply to the
 * acquire script echoes the script's arguments, this thread's token among
 * them; the warning that logs the reply must carry no part of the token's
 * random base (shared by all of this thread's tokens). */
static void echoed_arguments(void)
{
    static const char *const renamed[] = {"--rename-command",
                                          "EVALSHA",
                                          "",
                                          "--rename-command",
                                          "EVAL",
                                          "",
                                          NULL};
    rh_opts o;
    rh_server bare;
    const char *tok;
    char head[17], tail[17];
    lw_guard g;

    CHECK_RC(lock_str(&g, "echoed-base", 5000, 0), LW_OK);
    tok = token_of("echoed-base");
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(strspn(tok, "0123456789abcdef") >= 32);
    snprintf(head, sizeof head, "%.16s", tok);
    snprintf(tail, sizeof tail, "%.16s", tok + 16);

    rh_opts_init(&o);
    o.extra_args = renamed;
    CHECK_EQ(rh_start(&bare, &o), 0);
    use_url(bare.url, 1000, 2000);
    /* Every acquisition runs a script: refused, the body is not run. */
    CHECK_RC(lock_str(&g, "echoed", 5000, 0), LW_EREDIS);
    CHECK(logged("unknown command", LW_LOG_WARN, 0) > 0);
    if (logged(head, LW_LOG_INFO, 1) > 0 || logged(tail, LW_LOG_INFO, 1) > 0) {
        fprintf(stderr, "a logged error reply holds a token\n");
        failures++;
    }
    use_url(alice_url, 1000, 2000);
    rh_stop(&bare);
}

static void password_failures(void)
{
    char url[512];
    int free_port = rh_free_port();
    lw_guard g;

    /* Wrong passwords, for the default user and for alice. */
    snprintf(url, sizeof url, "redis://:wrong-" ADMIN_PW "@127.0.0.1:%d",
             srv.port);
    use_url(url, 500, 500);
    CHECK_RC(lock_str(&g, "pw", 5000, 0), LW_EAUTH);
    snprintf(url, sizeof url, "redis://alice:wrong-" ALICE_PW "@127.0.0.1:%d",
             srv.port);
    use_url(url, 500, 500);
    CHECK_RC(lock_str(&g, "pw", 5000, 0), LW_EAUTH);

    /* The right password, nobody listening. */
    snprintf(url, sizeof url, "redis://alice:" ALICE_PW "@127.0.0.1:%d",
             free_port);
    use_url(url, 500, 500);
    CHECK_RC(lock_str(&g, "pw", 5000, 0), LW_EREDIS);

    /* Malformed URLs holding the password: refused, and logged as refused. */
    static const char *const bad[] = {
        "redis://alice:" ALICE_PW "@127.0.0.1:notaport",
        "redis://alice:" ALICE_PW "@127.0.0.1:6379?timeout=1",
        "redis://alice:" ALICE_PW "%zz@127.0.0.1:6379",
        "redis://alice:" ALICE_PW "@127.0.0.1:6379/x",
        "redis://alice:" ALICE_PW "@127.0.0.1:1,redis://alice:" ALICE_PW
        "@127.0.0.1:2",
        "http://alice:" ALICE_PW "@127.0.0.1:6379",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lw_config cfg;
        lw_config_init(&cfg);
        cfg.redis_url = bad[i];
        /* Refused here; the list is two unreachable masters (Redlock),
         * accepted or not depending on Redlock support: its call fails. */
        if (lw_configure(&cfg) == LW_OK) {
            CHECK(strchr(bad[i], ',') != NULL);
            CHECK(lock_str(&g, "pw", 5000, 0) != LW_OK);
        }
    }
    /* Through the environment (lw_configure() with no URL reads it):
     * refused there, or by the first call. */
    setenv("LOCKWEAVE_REDIS_URL",
           "redis://alice:" ALICE_PW "@127.0.0.1:notaport", 1);
    lw_config cfg;
    lw_config_init(&cfg);
    if (lw_configure(&cfg) == LW_OK)
        CHECK_RC(lock_str(&g, "pw", 5000, 0), LW_ECONFIG);
    unsetenv("LOCKWEAVE_REDIS_URL");
    use_url(alice_url, 1000, 2000);
}

static void nothing_secret_logged(void)
{
    printf("%d log lines captured\n", nlines);
    CHECK(nlines > 0);
    /* Our failures did get logged (the checks below look at real lines). */
    CHECK(logged("AUTH refused", LW_LOG_WARN, 0) > 0);
    CHECK(logged("Redis URL", LW_LOG_WARN, 0) > 0);
    CHECK(logged("lost", LW_LOG_WARN, 0) > 0);
    /* Untrusted bytes are escaped: no line holds a control character. */
    CHECK(logged("evil\\x0alockweave: error: forged\\x1b[2K", LW_LOG_WARN, 0) >
          0);
    for (int i = 0; i < nlines; i++)
        for (const char *p = lines[i].msg; *p; p++)
            CHECK_MSG((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
                      "log line %d holds byte 0x%02x", i, (unsigned char)*p);

    int n =
        logged(ADMIN_PW, LW_LOG_DEBUG, 1) + logged(ALICE_PW, LW_LOG_DEBUG, 1);
    if (n > 0) {
        fprintf(stderr, "%d log lines hold a password\n", n);
        failures++;
    }
    /* Tokens at INFO and above: whole, and their random part alone. */
    int nt = 0;
    for (int i = 0; i < ntokens; i++) {
        char base[33];
        snprintf(base, sizeof base, "%.32s", tokens[i]);
        nt += logged(base, LW_LOG_INFO, 1);
    }
    if (nt > 0) {
        fprintf(stderr, "%d log lines at INFO or above hold a token\n", nt);
        failures++;
    }
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "child") == 0)
        return child_main(argv[2], argv[3]);

    static const char *const acl[] = {"--user", "alice", "on",    ">" ALICE_PW,
                                      "~*",     "&*",    "+@all", NULL};
    rh_opts o;
    rh_opts_init(&o);
    o.password = ADMIN_PW;
    o.extra_args = acl;
    CHECK_EQ(rh_start(&srv, &o), 0);
    snprintf(alice_url, sizeof alice_url,
             "redis://alice:" ALICE_PW "@127.0.0.1:%d", srv.port);
    lw_set_logger(capture, NULL, LW_LOG_DEBUG);
    use_url(alice_url, 1000, 2000);

    only_the_owner();
    unguessable("/proc/self/exe");
    make_warnings();
    echoed_arguments();
    password_failures();
    nothing_secret_logged();

    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    CHECK_EQ(failures, 0);
    lw_shutdown();
    rh_stop(&srv);
    for (int i = 0; i < ntokens; i++)
        free(tokens[i]);
    for (int i = 0; i < nlines; i++)
        free(lines[i].msg);
    cmd_free(&release_cmd);
    cmd_free(&renew_cmd);
    printf("security: ok\n");
    return 0;
}

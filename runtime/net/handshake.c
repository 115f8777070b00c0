/* What a connection says after connecting, before any request, in one
 * round trip: AUTH and SELECT as its URL asks, CLIENT SETNAME (whose
 * connection it is, for lockweave-ctl inspect), INFO memory (the
 * eviction-policy warning), ROLE on a master a sentinel named and, unless
 * this process only looks at locks, the ACL check: a script asking the
 * server whether the user may run every command a lock sends.  To a
 * sentinel, only AUTH. */
#include "net/handshake.h"

#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/config.h"
#include "base/fork.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/url.h"
#include "net/conn.h"
#include "net/script.h"
#include "net/tls.h"

/* ---- the ACL check ----------------------------------------------------- */

/*
 * ARGV is groups, each a count n and then a command and its n - 1
 * arguments; the first group the user may not run comes back as {its
 * index (from 1), 'command' or 'keys'}: 'keys' when the command alone is
 * allowed, so its key is what is refused.  {} when every group is allowed,
 * and on a server with no redis.acl_check_cmd (before Redis 7), which can
 * say nothing.  A command the server does not know counts as refused: a
 * lock could not run it either.  The script runs no command itself.
 */
static const char acl_text[] =
    "if not redis.acl_check_cmd then return {} end\n"
    "local function allowed(...)\n"
    "  local ok, yes = pcall(redis.acl_check_cmd, ...)\n"
    "  return ok and yes\n"
    "end\n"
    "local i, g = 1, 1\n"
    "while i <= #ARGV do\n"
    "  local n = tonumber(ARGV[i])\n"
    "  if not allowed(unpack(ARGV, i + 1, i + n)) then\n"
    "    return {g, allowed(ARGV[i + 1]) and 'keys' or 'command'}\n"
    "  end\n"
    "  i, g = i + n + 1, g + 1\n"
    "end\n"
    "return {}\n";
static struct lw_script acl_script = LW_SCRIPT_INIT(acl_text);

/* Stands for a key in needs[]: checked once with a lock key under the
 * prefix and once with a companion's (core/keynames.c: "{...}" then a name
 * holding the prefix), the two shapes an ACL's key patterns must allow. */
#define KEY        "\001"
#define NEEDS_ARGS 8

/*
 * Every command a lock's connection sends, with arguments of the shape it
 * sends them in: requests of their own (core/acquire.c, release.c,
 * handoff.c, replicas.c, redlock.c), then what the scripts call
 * (core/kind_*.c, core/lua.h; tests/runtime/test_acl.c checks that every
 * redis.call() and redis.pcall() of theirs is here).  Not checked: BLPOP
 * (refused, a waiter polls instead), INFO (the eviction warning is only
 * skipped), CLIENT SETNAME (inspect then cannot name the holder); WAIT
 * only with wait_replicas, CLUSTER SLOTS and ASKING only in a Cluster,
 * ROLE only behind Sentinel.
 */
static const char *const needs[][NEEDS_ARGS] = {
    {"evalsha", "0000000000000000000000000000000000000000", "1", KEY},
    {"eval", "return 0", "1", KEY},
    {"set", KEY, "t", "NX", "PX", "1000", "GET"},
    {"incr", KEY},
    {"get", KEY},
    {"del", KEY},
    {"exists", KEY},
    {"incrby", KEY, "1"},
    {"pexpire", KEY, "1000"},
    {"pttl", KEY},
    {"rpush", KEY, "m"},
    {"time"},
    {"type", KEY},
    {"zadd", KEY, "NX", "1", "m"},
    {"zcard", KEY},
    {"zcount", KEY, "-inf", "+inf"},
    {"zrange", KEY, "0", "0", "WITHSCORES"},
    {"zrangebyscore", KEY, "-inf", "+inf", "LIMIT", "0", "1"},
    {"zrem", KEY, "m"},
    {"zremrangebyscore", KEY, "-inf", "0"},
    {"zscore", KEY, "m"},
};
#define NNEEDS ((int)(sizeof needs / sizeof needs[0]))
static const char *const wait_need[] = {"wait", "0", "0"};
static const char *const cluster_needs[][2] = {{"cluster", "slots"},
                                               {"asking"}};
static const char *const sentinel_need[] = {"role"};

int lw__handshake_needs(const char *cmd)
{
    for (int i = 0; i < NNEEDS; i++)
        if (strcmp(needs[i][0], cmd) == 0)
            return 1;
    return 0;
}

/* Off in a process that only looks at locks (lockweave-ctl): it must not
 * be refused for rights it never uses. */
static int acl_check_on = 1;

void lw__handshake_acl_check(int on)
{
    __atomic_store_n(&acl_check_on, on, __ATOMIC_RELAXED);
}

#define ACL_GROUPS_MAX (2 * NNEEDS + 4)
#define ACL_ARGS_MAX   (3 + ACL_GROUPS_MAX * (NEEDS_ARGS + 1))
#define SAMPLE_NAME    "lockweave-acl-check"

/* The check's command: EVALSHA (EVAL after NOSCRIPT, as every script
 * goes: its text is sent once per server, not per connection), its
 * script, numkeys 0, then the groups acl_build() adds. */
struct acl_req {
    const char *argv[ACL_ARGS_MAX];
    size_t lens[ACL_ARGS_MAX];
    char counts[ACL_GROUPS_MAX][4];
    char *lock, *comp; /* the sample keys: one allocation, at lock */
    int argc, ngroups;
};

/* A group: cmd's n words, KEY in them standing for key. */
static void acl_add(struct acl_req *q, const char *const *cmd, int n,
                    const char *key)
{
    char *count = q->counts[q->ngroups++];

    snprintf(count, sizeof q->counts[0], "%d", n);
    q->argv[q->argc++] = count;
    for (int i = 0; i < n; i++)
        q->argv[q->argc++] = strcmp(cmd[i], KEY) == 0 ? key : cmd[i];
}

/* ---- the connection's name ----------------------------------------------
 *
 * "lockweave:<host>:<pid>:<thread>:<tag>", the tag being the first 16 hex
 * digits of the tokens this thread mints (core/token.c): a lock's token
 * finds the connections of the thread that took it.  Redis takes a name of
 * printable ASCII without spaces: the host's other bytes, and ':' and '%',
 * go as %XX.
 */
#define NAME_TAG_LEN 16
#define NAME_HOST    64

static size_t name_make(char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    struct lw_thread *t = lw__thread();
    char host[NAME_HOST + 1] = "", shown[3 * NAME_HOST + 1];
    size_t n = 0;
    int len;

    if (lw__thread_token_base(t) != LW_OK)
        return 0;
    gethostname(host, sizeof host - 1);
    for (const unsigned char *p = (const unsigned char *)host; *p; p++) {
        if (*p > ' ' && *p < 0x7f && *p != ':' && *p != '%') {
            shown[n++] = (char)*p;
        } else {
            shown[n++] = '%';
            shown[n++] = hex[*p >> 4];
            shown[n++] = hex[*p & 15];
        }
    }
    shown[n] = '\0';
    len = snprintf(buf, cap, "lockweave:%s:%ld:%ld:", shown, (long)getpid(),
                   (long)syscall(SYS_gettid));
    if (len < 0 || (size_t)len + NAME_TAG_LEN >= cap)
        return 0;
    for (int i = 0; i < NAME_TAG_LEN / 2; i++) {
        buf[len++] = hex[t->token_base[i] >> 4];
        buf[len++] = hex[t->token_base[i] & 15];
    }
    buf[len] = '\0';
    return (size_t)len;
}

int lw__client_name_parse(const char *s, size_t n, struct lw_client_name *out)
{
    char buf[256], *f[5], *p = buf, *end;
    size_t k = 0;
    int nf = 0;

    if (n >= sizeof buf || n < 10 || memcmp(s, "lockweave:", 10) != 0)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    while (nf < 5 && (f[nf] = strsep(&p, ":")) != NULL)
        nf++;
    if (nf != 5 || p != NULL || strlen(f[4]) != NAME_TAG_LEN)
        return 0;
    for (const char *h = f[1]; *h && k < sizeof out->host - 1; h++) {
        unsigned v;
        if (*h == '%' && h[1] && h[2] && sscanf(h + 1, "%2x", &v) == 1) {
            out->host[k++] = (char)v;
            h += 2;
        } else {
            out->host[k++] = *h;
        }
    }
    out->host[k] = '\0';
    out->pid = strtol(f[2], &end, 10);
    if (*f[2] == '\0' || *end != '\0')
        return 0;
    out->tid = strtol(f[3], &end, 10);
    if (*f[3] == '\0' || *end != '\0')
        return 0;
    memcpy(out->tag, f[4], NAME_TAG_LEN + 1);
    return 1;
}

/* ---- the handshake ------------------------------------------------------ */

/* What each reply of the pipeline answers. */
enum step { S_AUTH, S_SELECT, S_NAME, S_INFO, S_ROLE, S_ACL };

/* Servers already warned about (described), so each is named once. */
static pthread_mutex_t evict_mu = PTHREAD_MUTEX_INITIALIZER;
static char evict_warned[32][128];
static int nevict_warned;

/*
 * Any maxmemory policy but noeviction lets Redis evict a held lock under
 * memory pressure (lock keys carry a TTL, so volatile-* ones too): another
 * caller may then enter while the holder still runs, which learns LW_ELOST
 * only at its next renewal or release.  (An evicted fence counter is
 * harmless: it starts again from the server's clock.)  r is INFO memory's
 * reply (an error where an ACL denies INFO: then nothing is known and
 * nothing said); warn once per server.
 */
static void check_eviction(const redisReply *r, const struct lw_url *u)
{
    char where[128], policy[32] = "";
    const char *p;
    int seen = 0;

    if (r->type == REDIS_REPLY_STRING &&
        (p = strstr(r->str, "maxmemory_policy:")) != NULL)
        sscanf(p + 17, "%31[a-z-]", policy);
    if (policy[0] == '\0' || strcmp(policy, "noeviction") == 0)
        return;
    lw__url_describe(u, where, sizeof where);
    lw__fork_register_mutex(&evict_mu);
    pthread_mutex_lock(&evict_mu);
    for (int i = 0; i < nevict_warned; i++)
        seen |= strcmp(evict_warned[i], where) == 0;
    if (!seen && nevict_warned < 32)
        snprintf(evict_warned[nevict_warned++], sizeof evict_warned[0], "%s",
                 where);
    pthread_mutex_unlock(&evict_mu);
    if (!seen)
        lw__log(LW_LOG_WARN,
                "Redis %s has maxmemory-policy %s: under memory pressure it "
                "may evict a held lock and let another caller in while the "
                "holder still runs (which then gets LW_ELOST); use "
                "noeviction",
                where, policy);
}

/* The ACL check's groups for settings s, after the EVAL, script and
 * numkeys already in q: needs[] (each keyed one twice: a lock key and a
 * companion), then WAIT and the Cluster's commands when s uses them. */
static int acl_build(struct acl_req *q, const struct lw_settings *s)
{
    size_t plen = s->prefix_len, klen = plen + sizeof SAMPLE_NAME - 1;

    /* lock key, NUL; '{', lock key, "}:q", NUL */
    q->lock = malloc(2 * klen + 6);
    if (q->lock == NULL)
        return -1;
    memcpy(q->lock, s->prefix, plen);
    memcpy(q->lock + plen, SAMPLE_NAME, sizeof SAMPLE_NAME);
    q->comp = q->lock + klen + 1;
    q->comp[0] = '{';
    memcpy(q->comp + 1, q->lock, klen);
    memcpy(q->comp + 1 + klen, "}:q", 4);
    for (int i = 0; i < NNEEDS; i++) {
        int n = 0, keyed = 0;
        while (n < NEEDS_ARGS && needs[i][n] != NULL)
            keyed |= strcmp(needs[i][n++], KEY) == 0;
        acl_add(q, needs[i], n, q->lock);
        if (keyed)
            acl_add(q, needs[i], n, q->comp);
    }
    if (s->wait_replicas > 0)
        acl_add(q, wait_need, 3, NULL);
    if (s->ep.topology == LW_TOPO_CLUSTER) {
        acl_add(q, cluster_needs[0], 2, NULL);
        acl_add(q, cluster_needs[1], 1, NULL);
    }
    if (s->ep.topology == LW_TOPO_SENTINEL)
        acl_add(q, sentinel_need, 1, NULL);
    for (int i = 0; i < q->argc; i++)
        q->lens[i] = strlen(q->argv[i]);
    return 0;
}

/* Group g (from 1) of acl_build()'s, as a log line shows it: the command
 * in upper case and, when its key was refused, the key. */
static void acl_group(const struct acl_req *q, long long g, int keys, char *out,
                      size_t cap)
{
    int i = 3; /* past EVAL, the script and numkeys */

    while (--g > 0 && i < q->argc)
        i += atoi(q->argv[i]) + 1;
    if (g != 0 || i + 1 >= q->argc) {
        snprintf(out, cap, "a command it needs");
        return;
    }
    snprintf(out, cap, "%s", q->argv[i + 1]);
    for (char *p = out; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    for (int j = i + 2; keys && j <= i + atoi(q->argv[i]); j++)
        if (q->argv[j] == q->lock || q->argv[j] == q->comp) {
            size_t n = strlen(out);
            snprintf(out + n, cap - n, " on key %s", q->argv[j]);
            break;
        }
}

/* What the ACL check's reply r says: LW_OK, or LW_EAUTH with what the user
 * may not do in what. */
static int acl_verdict(const struct acl_req *q, const redisReply *r,
                       const struct lw_url *u, char *what, size_t cap)
{
    char cmd[200];

    if (r->type == REDIS_REPLY_ERROR) {
        /* The script itself refused is the answer too; any other error
         * (a server loading its data, busy with a script) says nothing of
         * the ACL, and the requests will meet what it means. */
        if (strncmp(r->str, "NOPERM", 6) != 0)
            return LW_OK;
        snprintf(what, cap,
                 "the ACL user %s may not run %s (%s), which locks need: see "
                 "docs/operations.md, \"Credentials and ACLs\"",
                 u->user ? u->user : "default",
                 strstr(r->str, "'evalsha'") != NULL ? "EVALSHA" : "EVAL",
                 r->str);
        return LW_EAUTH;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return LW_OK;
    acl_group(q, r->element[0]->integer,
              strcmp(r->element[1]->str, "keys") == 0, cmd, sizeof cmd);
    snprintf(what, cap,
             "the ACL user %s may not run %s, which locks need: see "
             "docs/operations.md, \"Credentials and ACLs\"",
             u->user ? u->user : "default", cmd);
    return LW_EAUTH;
}

/* An error reply to SELECT: the database out of range is the URL's fault
 * (LW_ECONFIG), a right missing LW_EAUTH. */
static int select_rc(const redisReply *r)
{
    return strncmp(r->str, "NOPERM", 6) == 0 ||
                   strncmp(r->str, "NOAUTH", 6) == 0
               ? LW_EAUTH
               : LW_ECONFIG;
}

/* What c's I/O failure during the handshake stands for.  A server that
 * wants a client certificate refuses a TLS 1.3 client only after the
 * handshake, with an alert: LW_ETLS.  Anything else (the session's own
 * LW_EREDIS, or no failure of the session's at all: a reply hiredis could
 * not read) is LW_EREDIS. */
static int io_rc(const struct lw_conn *c)
{
    return c->tls != NULL && lw__tls_error(c->tls, NULL) == LW_ETLS ? LW_ETLS
                                                                    : LW_EREDIS;
}

/* Read one reply per step into rs; LW_OK, else what a reply that did not
 * come means (logged into what). */
static int read_replies(struct lw_conn *c, const enum step *steps, int n,
                        redisReply **rs, char *what, size_t cap)
{
    static const char *const names[] = {"AUTH", "SELECT", "CLIENT SETNAME",
                                        "INFO", "ROLE",   "EVAL"};

    for (int i = 0; i < n; i++)
        if (lw__conn_reply(c, (void **)&rs[i]) != REDIS_OK || rs[i] == NULL) {
            rs[i] = NULL;
            snprintf(what, cap, "%s failed: %s", names[steps[i]],
                     lw__conn_io_error(c));
            return io_rc(c);
        }
    return LW_OK;
}

/* The server did not know the check's script: send its text (EVAL), one
 * more round trip, on the first connection to a server only.  *r, the
 * NOSCRIPT reply, is replaced by the answer. */
static int acl_eval(struct lw_conn *c, struct acl_req *q, redisReply **r,
                    char *what, size_t cap)
{
    enum step step = S_ACL;
    int rc;

    freeReplyObject(*r);
    *r = NULL;
    q->argv[0] = "EVAL";
    q->argv[1] = acl_script.text;
    q->lens[0] = 4;
    q->lens[1] = acl_script.len;
    c->out.len = 0;
    if (lw__resp_cmd(&c->out, q->argc, q->argv, q->lens) != 0)
        return LW_ENOMEM;
    if (lw__conn_send(c, c->out.p, c->out.len) != 0) {
        snprintf(what, cap, "EVAL failed: %s", lw__conn_io_error(c));
        return io_rc(c);
    }
    rc = read_replies(c, &step, 1, r, what, cap);
    return rc;
}

/* What ROLE's reply r says of a server a sentinel named master: LW_OK
 * when it is one.  A replica is LW_EREDIS, which sends the caller back to
 * the sentinels (topology/sentinel.c): they answered from before a
 * failover, or the server was demoted since. */
static int role_verdict(const redisReply *r, const struct lw_url *u, char *what,
                        size_t cap)
{
    if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "NOPERM", 6) != 0) {
            snprintf(what, cap, "ROLE failed: %s", r->str);
            return LW_EREDIS;
        }
        snprintf(what, cap,
                 "the ACL user %s may not run ROLE, which a Sentinel setup "
                 "needs: see docs/operations.md, \"Credentials and ACLs\"",
                 u->user ? u->user : "default");
        return LW_EAUTH;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[0]->str, "master") == 0)
        return LW_OK;
    snprintf(what, cap,
             "the sentinels named it master, but ROLE says %s: a failover "
             "is under way, or it was demoted",
             r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                     r->element[0]->type == REDIS_REPLY_STRING
                 ? r->element[0]->str
                 : "no role");
    return LW_EREDIS;
}

int lw__handshake(struct lw_conn *c, const struct lw_url *u)
{
    const struct lw_settings *s = lw__settings();
    struct acl_req *acl = NULL;
    enum step steps[6] = {S_AUTH};
    redisReply *rs[6] = {NULL};
    char db[16], name[160], what[400];
    int n = 0, rc = LW_ENOMEM, sentinel = u->role == LW_URL_SENTINEL;
    size_t namelen = sentinel ? 0 : name_make(name, sizeof name);

    c->out.len = 0;
#define PUT(step, argc, argv, lens)                                            \
    do {                                                                       \
        if (lw__resp_cmd(&c->out, (argc), (argv), (lens)) != 0)                \
            goto cleanup;                                                      \
        steps[n++] = (step);                                                   \
    } while (0)
    if (u->password != NULL) {
        const char *argv[] = {"AUTH", u->user ? u->user : u->password,
                              u->password};
        size_t lens[] = {4, strlen(argv[1]), strlen(u->password)};
        PUT(S_AUTH, u->user ? 3 : 2, argv, lens);
    }
    if (sentinel)
        goto send; /* a sentinel holds no data, and knows no SELECT */
    if (u->db != 0) {
        const char *argv[] = {"SELECT", db};
        size_t lens[] = {6, (size_t)snprintf(db, sizeof db, "%d", u->db)};
        PUT(S_SELECT, 2, argv, lens);
    }
    if (namelen > 0) {
        const char *argv[] = {"CLIENT", "SETNAME", name};
        size_t lens[] = {6, 7, namelen};
        PUT(S_NAME, 3, argv, lens);
    }
    {
        const char *argv[] = {"INFO", "memory"};
        size_t lens[] = {4, 6};
        PUT(S_INFO, 2, argv, lens);
    }
    if (u->role == LW_URL_MASTER) {
        const char *argv[] = {"ROLE"};
        size_t lens[] = {4};
        PUT(S_ROLE, 1, argv, lens);
    }
    if (__atomic_load_n(&acl_check_on, __ATOMIC_RELAXED)) {
        acl = calloc(1, sizeof *acl);
        if (acl == NULL)
            goto cleanup;
        acl->argv[0] = "EVALSHA";
        acl->argv[1] = lw__script_sha(&acl_script);
        acl->argv[2] = "0";
        acl->argc = 3;
        if (acl_build(acl, s) != 0)
            goto cleanup;
        PUT(S_ACL, acl->argc, acl->argv, acl->lens);
    }
#undef PUT

send:
    /* One write, one round trip: each command is answered in turn even
     * after an earlier one failed (a refused AUTH leaves the rest to run as
     * the default user, harmlessly: none of them changes anything the
     * connection keeps, and it is closed). */
    rc = LW_OK;
    if (n > 0 && lw__conn_send(c, c->out.p, c->out.len) != 0) {
        snprintf(what, sizeof what, "%s failed: %s",
                 n > 0 && steps[0] == S_AUTH ? "AUTH" : "the handshake",
                 lw__conn_io_error(c));
        rc = io_rc(c);
    }
    if (rc == LW_OK)
        rc = read_replies(c, steps, n, rs, what, sizeof what);
    for (int i = 0; rc == LW_OK && i < n; i++) {
        const redisReply *r = rs[i];
        int err = r->type == REDIS_REPLY_ERROR;
        switch (steps[i]) {
        case S_AUTH:
            if (err)
                snprintf(what, sizeof what, "AUTH refused: %s", r->str);
            rc = err ? LW_EAUTH : LW_OK;
            break;
        case S_SELECT:
            if (err && (rc = select_rc(r)) == LW_ECONFIG)
                snprintf(what, sizeof what,
                         "SELECT %d refused: %s (the URL's database must be "
                         "one the server has: below its \"databases\")",
                         u->db, r->str);
            else if (err)
                snprintf(what, sizeof what, "SELECT refused: %s", r->str);
            break;
        case S_NAME:
            /* Best effort: without a name, inspect cannot say who holds. */
            if (err)
                lw__log(LW_LOG_DEBUG, "CLIENT SETNAME refused: %s", r->str);
            break;
        case S_INFO:
            /* No AUTH, and the server wants one. */
            if (err && strncmp(r->str, "NOAUTH", 6) == 0) {
                snprintf(what, sizeof what,
                         "Redis wants a password: put it in the URL "
                         "(redis://:password@host:port, "
                         "unix://:password@/path)");
                rc = LW_EAUTH;
            }
            check_eviction(r, u);
            break;
        case S_ROLE:
            rc = role_verdict(r, u, what, sizeof what);
            break;
        case S_ACL:
            if (err && strncmp(r->str, "NOSCRIPT", 8) == 0)
                rc = acl_eval(c, acl, &rs[i], what, sizeof what);
            if (rc == LW_OK)
                rc = acl_verdict(acl, rs[i], u, what, sizeof what);
            break;
        }
    }
cleanup:
    if (rc == LW_ENOMEM)
        snprintf(what, sizeof what, "out of memory");
    if (rc != LW_OK)
        lw__conn_fail(c, rc, what);
    c->out.len = 0;
    for (int i = 0; i < n; i++)
        if (rs[i] != NULL)
            freeReplyObject(rs[i]);
    if (acl != NULL)
        free(acl->lock);
    free(acl);
    return rc;
}

/* Configuration and where commands go: the runtime's own URL parser,
 * settings, connections and Cluster router. */
#include <lockweave.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/url.h"
#include "core/send.h"
#include "ctl.h"
#include "net/conn.h"
#include "topology/route.h"
#include "topology/slotmap.h"

void ctl_error(const char *fmt, ...)
{
    va_list ap;

    fputs("lockweave-ctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The runtime's log lines (a server that cannot be reached, an error
 * reply), already escaped by it, under the tool's name. */
static void log_line(int level, const char *msg, void *ud)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};

    (void)ud;
    fprintf(stderr, "lockweave-ctl: %s: %s\n",
            names[level >= 0 && level < 4 ? level : 3], msg);
}

int ctl_setup(struct ctl *c)
{
    const char *url = getenv("LOCKWEAVE_REDIS_URL");
    struct lw_endpoints ep;
    lw_config cfg;
    char err[512], shown[2048];
    int rc;

    lw_set_logger(log_line, NULL, -1); /* level: LOCKWEAVE_LOG, or warn */
    /* Parsed here first for the reason (the password masked), which
     * lw_configure() only logs. */
    if (url != NULL) {
        rc = lw__endpoints_parse(url, &ep, err, sizeof err);
        if (rc != LW_OK) {
            /* The reason quotes the value: escaped, like any key. */
            ctl_error("LOCKWEAVE_REDIS_URL: %s",
                      rc == LW_ECONFIG
                          ? out_escape(shown, sizeof shown, err, strlen(err))
                          : lw_strerror(rc));
            return rc == LW_ECONFIG ? CTL_CONFIG : CTL_REDIS;
        }
        lw__endpoints_free(&ep);
    }
    lw_config_init(&cfg);
    cfg.key_prefix = c->prefix;
    rc = lw_configure(&cfg);
    if (rc == LW_OK && (rc = lw__settings()->error) == LW_OK)
        c->s = lw__settings();
    if (rc != LW_OK) {
        ctl_error("configuration: %s", lw_strerror(rc));
        return ctl_exit_for(rc);
    }
    return CTL_OK;
}

void ctl_teardown(void)
{
    lw_shutdown();
}

int ctl_key_make(const struct ctl *c, const char *arg, struct ctl_key *k)
{
    const struct lw_settings *s = c->s;
    size_t n = strlen(arg), pre = c->raw ? 0 : s->prefix_len;
    char *bytes = NULL;

    memset(k, 0, sizeof *k);
    if (c->escaped) {
        bytes = out_unescape(arg, &n);
        if (bytes == NULL) {
            if (n == 0)
                return CTL_REDIS;
            ctl_error("bad escape in a key or pattern (--escaped reads "
                      "\\xNN, \\\\, \\\", \\n, \\r and \\t)");
            return CTL_USAGE;
        }
        arg = bytes;
    }
    if (n == 0) {
        free(bytes);
        ctl_error("the key is empty");
        return CTL_USAGE;
    }
    k->key = malloc(pre + n + 1);
    if (k->key == NULL) {
        free(bytes);
        return CTL_REDIS;
    }
    memcpy(k->key, s->prefix, pre);
    memcpy(k->key + pre, arg, n);
    k->key[pre + n] = '\0';
    k->len = pre + n;
    k->prefixed = k->len >= s->prefix_len &&
                  memcmp(k->key, s->prefix, s->prefix_len) == 0;
    k->prefix_len = k->prefixed ? s->prefix_len : 0;
    free(bytes);
    return CTL_OK;
}

void ctl_key_free(struct ctl_key *k)
{
    free(k->key);
    k->key = NULL;
}

void ctl_key_shown(const struct ctl *c, const char *key, size_t len,
                   const char **p, size_t *n)
{
    size_t pre = c->s->prefix_len;

    *p = key;
    *n = len;
    if (!c->raw && len >= pre && memcmp(key, c->s->prefix, pre) == 0) {
        *p = key + pre;
        *n = len - pre;
    }
}

void ctl_put_key(struct ctl *c, const char *key, size_t len)
{
    const char *p;
    size_t n;

    ctl_key_shown(c, key, len, &p, &n);
    if (c->json) {
        out_json_bytes(&c->j, "key", p, n);
        out_json_bytes(&c->j, "redis_key", key, len);
    } else {
        out_quoted(stdout, p, n);
    }
}

void ctl_put_url(struct ctl *c, const char *name, const struct lw_url *u)
{
    char where[512];

    lw__url_describe(u, where, sizeof where);
    if (c->json)
        out_json_str(&c->j, name, where);
    else
        out_text(stdout, where, strlen(where));
}

int ctl_key_run(struct ctl *c, const char *arg, ctl_key_fn *one,
                ctl_key_fn *redlock)
{
    struct ctl_key k;
    int rc = ctl_key_make(c, arg, &k);

    if (rc != CTL_OK)
        return rc;
    rc = c->s->ep.topology == LW_TOPO_REDLOCK ? redlock(c, &k) : one(c, &k);
    ctl_key_free(&k);
    return rc;
}

int ctl_exit_for(int lw_rc)
{
    return lw_rc == LW_ECONFIG ? CTL_CONFIG : CTL_REDIS;
}

int ctl_send_key(const struct ctl *c, const char *key, size_t keylen,
                 const struct lw_cmd *cmds, int ncmds, redisReply **replies)
{
    struct lw_request q = {
        .cmds = cmds, .ncmds = ncmds, .flags = LW_REQ_RAW_ERRORS};
    struct lw_target t;
    int replayed = 0;
    int rc = lw__target_for(&t, c->s, key, keylen);

    if (rc == LW_OK)
        rc = lw__send(&t, &q, 0, replies, &replayed);
    /* A pipeline met by ASK (its slot migrating): read-only, so the map is
     * refreshed and it is sent once more. */
    if (rc > 0 && lw__route_refresh(c->s) == LW_OK)
        rc = lw__send(&t, &q, 0, replies, &replayed);
    return rc > 0 ? LW_EREDIS : rc;
}

int ctl_request_to(const struct lw_url *u, struct lw_conn **conn,
                   const struct lw_request *q, redisReply **replies)
{
    int replayed = 0;

    if (*conn == NULL && (*conn = lw__conn_new_to(u)) == NULL)
        return LW_ENOMEM;
    return lw__conn_run(*conn, q, replies, &replayed);
}

int ctl_send_to(const struct lw_url *u, struct lw_conn **conn,
                const struct lw_cmd *cmds, int ncmds, redisReply **replies)
{
    struct lw_request q = {
        .cmds = cmds, .ncmds = ncmds, .flags = LW_REQ_RAW_ERRORS};

    return ctl_request_to(u, conn, &q, replies);
}

void ctl_conn_free(struct lw_conn *conn)
{
    if (conn != NULL)
        lw__conn_free(conn);
}

int ctl_masters(const struct ctl *c, const struct lw_url **out, int *n)
{
    const struct lw_settings *s = c->s;
    const struct lw_slotmap *m;
    int rc;

    if (s->ep.topology != LW_TOPO_CLUSTER) {
        *out = s->ep.urls;
        *n = s->ep.topology == LW_TOPO_REDLOCK ? s->ep.n : 1;
        return LW_OK;
    }
    rc = lw__route_refresh(s);
    m = lw__slotmap_current();
    if (m == NULL || m->cfg_gen != s->gen)
        return rc != LW_OK ? rc : LW_EREDIS;
    *out = m->nodes;
    *n = m->nnodes;
    return LW_OK;
}

void ctl_describe(const struct lw_url *u, char *buf, size_t len)
{
    lw__url_describe(u, buf, len);
}

int ctl_reply_int(const redisReply *r, long long *v)
{
    char *end;

    if (r == NULL)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER) {
        *v = r->integer;
        return 1;
    }
    if (r->type != REDIS_REPLY_STRING || r->len == 0)
        return 0;
    *v = strtoll(r->str, &end, 10);
    return end == r->str + r->len;
}

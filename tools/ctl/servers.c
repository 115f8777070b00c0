/* Configuration, keys and what Redis answered: the runtime's own URL
 * parser and settings, through admin.h. */
#include <lockweave.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

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
    lw_config cfg;
    char err[512], shown[2048];
    int rc;

    lw_set_logger(log_line, NULL, -1); /* level: LOCKWEAVE_LOG, or warn */
    /* inspect and list read, unlock runs a release: none needs every right
     * a locking process does. */
    lw__admin_no_acl_check();
    /* Checked here first for the reason (the password masked), which
     * lw_configure() only logs. */
    if (url != NULL) {
        rc = lw__admin_url_check(url, err, sizeof err);
        if (rc != LW_OK) {
            /* The reason quotes the value: escaped, like any key. */
            ctl_error("LOCKWEAVE_REDIS_URL: %s",
                      rc == LW_ECONFIG
                          ? out_escape(shown, sizeof shown, err, strlen(err))
                          : lw_strerror(rc));
            return rc == LW_ECONFIG ? CTL_CONFIG : CTL_REDIS;
        }
    }
    lw_config_init(&cfg);
    cfg.key_prefix = c->prefix;
    rc = lw_configure(&cfg);
    if (rc == LW_OK)
        rc = lw__admin_config(&c->cfg);
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
    const struct lw_admin_config *s = &c->cfg;
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
    size_t pre = c->cfg.prefix_len;

    *p = key;
    *n = len;
    if (!c->raw && len >= pre && memcmp(key, c->cfg.prefix, pre) == 0) {
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

    lw__admin_describe(u, where, sizeof where);
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
    rc = c->cfg.topology == LW_ADMIN_REDLOCK ? redlock(c, &k) : one(c, &k);
    ctl_key_free(&k);
    return rc;
}

int ctl_exit_for(int lw_rc)
{
    return lw_rc == LW_ECONFIG ? CTL_CONFIG : CTL_REDIS;
}

int ctl_reply_errors(redisReply *const *r, int n)
{
    char text[512];

    for (int i = 0; i < n; i++)
        if (r[i] != NULL && r[i]->type == REDIS_REPLY_ERROR) {
            ctl_error("Redis answered: %s",
                      out_escape(text, sizeof text, r[i]->str, r[i]->len));
            return LW_EREDIS;
        }
    return LW_OK;
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

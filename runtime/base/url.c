/* LOCKWEAVE_REDIS_URL parsing.  Written by hand rather than with a regex so a
 * bad URL yields a reason ("port out of range"), not just "invalid". */
#include "base/url.h"

#include <lockweave.h>
#include <ctype.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* s with everything between its first "://" (or its start) and its last
 * '@' replaced by "***": error messages are logged, and a URL refused for
 * its port must not put its password in the log.  A password may hold ','
 * or '@' unescaped, so element boundaries are not trusted; a list loses its
 * hosts before the last credentials from the message, never a secret. */
static void masked(const char *s, char *out, size_t outlen)
{
    const char *at = strrchr(s, '@'), *scheme = strstr(s, "://");
    const char *from = scheme != NULL && scheme < at ? scheme + 3 : s;

    if (at == NULL)
        snprintf(out, outlen, "%s", s);
    else
        snprintf(out, outlen, "%.*s***%s", (int)(from - s), s, at);
}

static int fail(char *err, size_t errlen, const char *why, const char *s)
{
    char shown[256];

    masked(s, shown, sizeof shown);
    snprintf(err, errlen, "%s in Redis URL \"%.96s\"", why, shown);
    return LW_ECONFIG;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Copy [p, p+n) percent-decoded: passwords may hold '@', ':' or '/'. */
static char *dup_decoded(const char *p, size_t n, int *bad)
{
    char *out = malloc(n + 1), *o = out;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') {
            *o++ = p[i];
            continue;
        }
        int hi = i + 1 < n ? hexval((unsigned char)p[i + 1]) : -1;
        int lo = i + 2 < n ? hexval((unsigned char)p[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            *bad = 1;
            break;
        }
        *o++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *o = '\0';
    return out;
}

static int parse_int(const char *p, size_t n, long min, long max, int *out)
{
    long v = 0;
    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_userinfo(const char *p, size_t n, struct lw_url *u, int *bad)
{
    const char *colon = memchr(p, ':', n);
    if (colon == NULL) /* "redis://secret@host": a password alone */
        return (u->password = dup_decoded(p, n, bad)) ? 0 : -1;
    if (colon > p && (u->user = dup_decoded(p, colon - p, bad)) == NULL)
        return -1;
    u->password = dup_decoded(colon + 1, n - (colon + 1 - p), bad);
    return u->password ? 0 : -1;
}

static int parse_hostport(const char *p, size_t n, int port_dflt,
                          struct lw_url *u)
{
    const char *host = p, *port = NULL;
    size_t hlen = n;

    if (n > 0 && p[0] == '[') { /* [::1]:6379 */
        const char *close = memchr(p, ']', n);
        if (close == NULL)
            return -1;
        host = p + 1;
        hlen = close - host;
        if (close + 1 < p + n) {
            if (close[1] != ':')
                return -1;
            port = close + 2;
        }
    } else {
        const char *colon = memchr(p, ':', n);
        if (colon != NULL) {
            hlen = colon - p;
            port = colon + 1;
        }
    }
    u->port = port_dflt;
    if (port != NULL && parse_int(port, p + n - port, 1, 65535, &u->port))
        return -2;
    if (hlen == 0)
        return -1;
    u->host = strndup(host, hlen);
    return u->host ? 0 : -3;
}

static int parse_tcp(const char *s, const char *rest, struct lw_url *u,
                     char *err, size_t errlen)
{
    const char *end = rest + strcspn(rest, "/?#");
    const char *at = NULL;
    int bad = 0, rc;

    for (const char *q = rest; q < end; q++)
        if (*q == '@')
            at = q; /* the last '@': an unescaped one may sit in a password */
    if (at != NULL && parse_userinfo(rest, at - rest, u, &bad))
        return LW_ENOMEM;
    if (bad)
        return fail(err, errlen, "bad %-escape", s);
    rc =
        parse_hostport(at ? at + 1 : rest, end - (at ? at + 1 : rest), 6379, u);
    if (rc == -1)
        return fail(err, errlen, "bad host", s);
    if (rc == -2)
        return fail(err, errlen, "port must be 1..65535", s);
    if (rc == -3)
        return LW_ENOMEM;
    if (*end == '/' && end[1] != '\0' &&
        parse_int(end + 1, strlen(end + 1), 0, 1000000, &u->db))
        return fail(err, errlen, "database must be a number", s);
    if (*end == '?' || *end == '#')
        return fail(err, errlen, "query strings are not supported", s);
    return LW_OK;
}

/* unix://[user:password@]/path[?db=N]: credentials end at the "@/" before
 * the absolute path ('/' in a password is %-escaped, as in redis://).  A
 * '?' not followed by db=N stays part of the path. */
static int parse_unix(const char *s, const char *rest, struct lw_url *u,
                      char *err, size_t errlen)
{
    const char *slash = strchr(rest, '/'), *q;
    int bad = 0;

    if (slash == NULL || (slash > rest && slash[-1] != '@'))
        return fail(err, errlen, "unix socket path must be absolute", s);
    if (slash > rest &&
        parse_userinfo(rest, (size_t)(slash - 1 - rest), u, &bad) != 0)
        return LW_ENOMEM;
    if (bad)
        return fail(err, errlen, "bad %-escape", s);
    q = strrchr(slash, '?');
    if (q != NULL && strncmp(q, "?db=", 4) == 0) {
        if (parse_int(q + 4, strlen(q + 4), 0, 1000000, &u->db))
            return fail(err, errlen, "database must be a number", s);
    } else {
        q = slash + strlen(slash);
    }
    u->path = strndup(slash, (size_t)(q - slash));
    return u->path ? LW_OK : LW_ENOMEM;
}

/* lw__url_parse(), naming whole (the value it came from) in errors: an
 * element cut out of a list may hold only part of its credentials. */
static int parse_one(const char *s, const char *whole, struct lw_url *u,
                     char *err, size_t errlen)
{
    int rc;

    memset(u, 0, sizeof *u);
    if (s == NULL || *s == '\0')
        return fail(err, errlen, "empty value", "");
    if (strchr(s, ',') != NULL)
        return fail(err, errlen, "one URL expected, found a list", whole);
    if (strncmp(s, "unix://", 7) == 0) {
        rc = parse_unix(whole, s + 7, u, err, errlen);
        if (rc != LW_OK)
            lw__url_free(u);
        return rc;
    }
    u->tls = strncmp(s, "rediss://", 9) == 0;
    if (!u->tls && strncmp(s, "redis://", 8) != 0)
        return fail(err, errlen,
                    "scheme must be redis://, rediss:// or unix://", whole);
    rc = parse_tcp(whole, s + (u->tls ? 9 : 8), u, err, errlen);
    if (rc != LW_OK)
        lw__url_free(u);
    return rc;
}

int lw__url_parse(const char *s, struct lw_url *u, char *err, size_t errlen)
{
    return parse_one(s, s, u, err, errlen);
}

void lw__url_free(struct lw_url *u)
{
    free(u->host);
    free(u->path);
    free(u->user);
    free(u->password);
    memset(u, 0, sizeof *u);
}

void lw__url_describe(const struct lw_url *u, char *buf, size_t len)
{
    const char *user = u->user ? u->user : "";
    const char *at =
        u->password ? (u->user ? ":***@" : "***@") : (u->user ? "@" : "");
    char db[24] = "";

    if (u->role == LW_URL_SENTINEL) {
        /* A sentinel has no database, and its log lines must not read as
         * a data node's. */
        snprintf(buf, len, "sentinel %s://%s%s%s:%d",
                 u->tls ? "rediss" : "redis", user,
                 u->password && !u->user ? ":***@" : at, u->host, u->port);
    } else if (u->path != NULL) {
        if (u->db != 0)
            snprintf(db, sizeof db, "?db=%d", u->db);
        snprintf(buf, len, "unix://%s%s%s%s", user, at, u->path, db);
    } else {
        snprintf(buf, len, "%s://%s%s%s:%d/%d", u->tls ? "rediss" : "redis",
                 user, u->password && !u->user ? ":***@" : at, u->host, u->port,
                 u->db);
    }
}

static char *dup_or_null(const char *s, int *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s != NULL && d == NULL)
        *oom = 1;
    return d;
}

int lw__url_copy(struct lw_url *dst, const struct lw_url *src)
{
    int oom = 0;

    *dst = *src;
    dst->host = dup_or_null(src->host, &oom);
    dst->path = dup_or_null(src->path, &oom);
    dst->user = dup_or_null(src->user, &oom);
    dst->password = dup_or_null(src->password, &oom);
    if (oom) {
        lw__url_free(dst);
        return LW_ENOMEM;
    }
    return LW_OK;
}

/* Parse one comma-separated element [p, p+n); cluster seeds are host:port
 * with optional userinfo, so they are read as URLs of scheme seed (NULL: the
 * element carries its own). */
static int parse_element(const char *s, const char *p, size_t n,
                         const char *seed, struct lw_url *u, char *err,
                         size_t errlen)
{
    char one[1024];
    int rc, cluster = seed != NULL;

    if (n == 0)
        return fail(err, errlen, "empty element in list", s);
    if (n + (cluster ? strlen(seed) : 0) >= sizeof one)
        return fail(err, errlen, "element too long", s);
    snprintf(one, sizeof one, "%s%.*s", cluster ? seed : "", (int)n, p);
    rc = parse_one(one, s, u, err, errlen);
    if (rc == LW_OK && cluster && (u->path != NULL || u->db != 0)) {
        lw__url_free(u);
        return fail(err, errlen,
                    "cluster seeds are host:port (no unix socket, no /db)", s);
    }
    return rc;
}

/* Cluster seeds given without credentials use the first seed's. */
static int inherit_auth(struct lw_endpoints *e)
{
    const struct lw_url *first = &e->urls[0];
    int oom = 0;

    for (int i = 1; i < e->n; i++) {
        struct lw_url *u = &e->urls[i];
        if (u->password != NULL || u->user != NULL)
            continue;
        u->user = dup_or_null(first->user, &oom);
        u->password = dup_or_null(first->password, &oom);
    }
    return oom ? LW_ENOMEM : LW_OK;
}

/* The addresses host resolves to (NULL when it does not resolve now). */
static struct addrinfo *resolve(const char *host)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;

    return getaddrinfo(host, NULL, &hints, &ai) == 0 ? ai : NULL;
}

static int same_address(const struct addrinfo *a, const struct addrinfo *b)
{
    for (; a != NULL; a = a->ai_next)
        for (const struct addrinfo *q = b; q != NULL; q = q->ai_next)
            if (a->ai_family == q->ai_family &&
                a->ai_addrlen == q->ai_addrlen &&
                memcmp(a->ai_addr, q->ai_addr, a->ai_addrlen) == 0)
                return 1;
    return 0;
}

/* Do a and b name one server (and database)?  Host names are compared by
 * what they resolve to ("localhost" is 127.0.0.1), unix sockets by their
 * real path. */
static int same_server(const struct lw_url *a, struct addrinfo *aa,
                       const struct lw_url *b, struct addrinfo *ba)
{
    char ra[PATH_MAX], rb[PATH_MAX];

    if (a->db != b->db || (a->path == NULL) != (b->path == NULL))
        return 0;
    if (a->path != NULL)
        return strcmp(realpath(a->path, ra) ? ra : a->path,
                      realpath(b->path, rb) ? rb : b->path) == 0;
    if (a->port != b->port)
        return 0;
    if (aa != NULL && ba != NULL)
        return same_address(aa, ba);
    return strcasecmp(a->host, b->host) == 0;
}

/* Redlock's safety rests on independent masters: one server named twice
 * would cast several votes, and could make a quorum alone. */
static int distinct_masters(const struct lw_endpoints *e, char *err,
                            size_t errlen)
{
    struct addrinfo *ai[LW_ENDPOINTS_MAX] = {0};
    char one[128], two[128];
    int rc = LW_OK;

    for (int i = 0; i < e->n; i++)
        if (e->urls[i].host != NULL)
            ai[i] = resolve(e->urls[i].host);
    for (int i = 0; i < e->n && rc == LW_OK; i++)
        for (int j = i + 1; j < e->n && rc == LW_OK; j++)
            if (same_server(&e->urls[i], ai[i], &e->urls[j], ai[j])) {
                lw__url_describe(&e->urls[i], one, sizeof one);
                lw__url_describe(&e->urls[j], two, sizeof two);
                snprintf(err, errlen,
                         "Redlock masters must be distinct servers: %s and "
                         "%s are one",
                         one, two);
                rc = LW_ECONFIG;
            }
    for (int i = 0; i < e->n; i++)
        if (ai[i] != NULL)
            freeaddrinfo(ai[i]);
    return rc;
}

/* redis[s]+sentinel://[user:password@]host[:port][,host[:port]...]/NAME
 * [?db=N], rest past the scheme: the credentials (the last '@' before the
 * path ends them, as in redis://), ?db=N and TLS are the data nodes', in
 * e->node; the sentinels go to e->urls. */
static int parse_sentinel(const char *s, const char *rest, int tls,
                          struct lw_endpoints *e, char *err, size_t errlen)
{
    const char *end = rest + strcspn(rest, "/?#"), *at = NULL, *p, *name;
    size_t namelen;
    int bad = 0;

    e->topology = LW_TOPO_SENTINEL;
    e->node.tls = tls;
    e->node.role = LW_URL_MASTER;
    for (const char *q = rest; q < end; q++)
        if (*q == '@')
            at = q;
    if (at != NULL && parse_userinfo(rest, (size_t)(at - rest), &e->node, &bad))
        return LW_ENOMEM;
    if (bad)
        return fail(err, errlen, "bad %-escape", s);
    name = *end == '/' ? end + 1 : end;
    namelen = strcspn(name, "/?#");
    if (namelen == 0)
        return fail(err, errlen,
                    "the master's name is missing (redis+sentinel://host:port"
                    "[,host:port...]/MASTER_NAME)",
                    s);
    if (name[namelen] == '?' && strncmp(name + namelen, "?db=", 4) == 0) {
        const char *db = name + namelen + 4;
        if (parse_int(db, strlen(db), 0, 1000000, &e->node.db))
            return fail(err, errlen, "database must be a number", s);
    } else if (name[namelen] != '\0') {
        return fail(err, errlen,
                    "only ?db=N may follow a Sentinel URL's master name", s);
    }
    e->master_name = dup_decoded(name, namelen, &bad);
    if (e->master_name == NULL)
        return LW_ENOMEM;
    if (bad)
        return fail(err, errlen, "bad %-escape", s);
    for (p = at != NULL ? at + 1 : rest;; p++) {
        size_t n = strcspn(p, ",/?#");
        struct lw_url *u = &e->urls[e->n];
        int rc;
        if (p + n > end)
            n = (size_t)(end - p);
        if (e->n == LW_ENDPOINTS_MAX)
            return fail(err, errlen, "more than 16 endpoints", s);
        if (n == 0)
            return fail(err, errlen, "empty element in list", s);
        rc = parse_hostport(p, n, LW_SENTINEL_PORT, u);
        if (rc == -1)
            return fail(err, errlen, "bad host", s);
        if (rc == -2)
            return fail(err, errlen, "port must be 1..65535", s);
        if (rc == -3)
            return LW_ENOMEM;
        u->tls = tls;
        u->role = LW_URL_SENTINEL;
        e->n++;
        p += n;
        if (p >= end)
            return LW_OK;
    }
}

int lw__endpoints_parse(const char *s, struct lw_endpoints *e, char *err,
                        size_t errlen)
{
    const char *p = s, *seed = NULL;
    int rc = LW_OK, cluster;

    memset(e, 0, sizeof *e);
    if (s == NULL || *s == '\0')
        return fail(err, errlen, "empty value", "");
    if (strncmp(s, "redis+sentinel://", 17) == 0 ||
        strncmp(s, "rediss+sentinel://", 18) == 0) {
        int tls = s[5] == 's';
        e->urls = calloc(LW_ENDPOINTS_MAX, sizeof *e->urls);
        rc = e->urls == NULL
                 ? LW_ENOMEM
                 : parse_sentinel(s, s + (tls ? 18 : 17), tls, e, err, errlen);
        if (rc != LW_OK)
            lw__endpoints_free(e);
        return rc;
    }
    if (strncmp(s, "redis+cluster://", 16) == 0) {
        seed = "redis://";
        p = s + 16;
    } else if (strncmp(s, "rediss+cluster://", 17) == 0) {
        seed = "rediss://";
        p = s + 17;
    }
    cluster = seed != NULL;
    e->topology = cluster          ? LW_TOPO_CLUSTER
                  : strchr(s, ',') ? LW_TOPO_REDLOCK
                                   : LW_TOPO_SINGLE;
    e->urls = calloc(LW_ENDPOINTS_MAX, sizeof *e->urls);
    if (e->urls == NULL)
        return LW_ENOMEM;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (e->n == LW_ENDPOINTS_MAX) {
            rc = fail(err, errlen, "more than 16 endpoints", s);
            break;
        }
        rc = parse_element(s, p, n, seed, &e->urls[e->n], err, errlen);
        if (rc != LW_OK)
            break;
        /* One list, one transport: a plain master beside TLS ones would
         * send the lock's token in the clear to one of them. */
        if (e->n > 0 && e->urls[e->n].tls != e->urls[0].tls) {
            lw__url_free(&e->urls[e->n]);
            rc = fail(err, errlen,
                      "redis:// (or unix://) and rediss:// mixed in one list",
                      s);
            break;
        }
        e->n++;
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    if (rc == LW_OK && cluster)
        rc = inherit_auth(e);
    if (rc == LW_OK && e->topology == LW_TOPO_REDLOCK)
        rc = distinct_masters(e, err, errlen);
    if (rc != LW_OK)
        lw__endpoints_free(e);
    return rc;
}

void lw__endpoints_free(struct lw_endpoints *e)
{
    for (int i = 0; i < e->n; i++)
        lw__url_free(&e->urls[i]);
    free(e->urls);
    lw__url_free(&e->node);
    free(e->master_name);
    memset(e, 0, sizeof *e);
}

/* The LOCKWEAVE_REDIS_URL parser (base/url.c) called directly: every field
 * of accepted URLs, every refusal with its reason, the password kept out of
 * error messages and log descriptions, and lists (Redlock, Cluster seeds).
 * tests/runtime/test_url.c covers the same parser through lw_configure(),
 * where only accepted or refused shows. */
#include <lockweave.h>
#include <string.h>

#include "base/url.h"
#include "check.h"

/* Parse s, which must be accepted, and compare every field.  NULL for a
 * string field: it must be NULL. */
static void ok(const char *s, const char *host, int port, const char *path,
               const char *user, const char *password, int db)
{
    struct lw_url u;
    char err[512] = "";
    int rc = lw__url_parse(s, &u, err, sizeof err);

    CHECK_MSG(rc == LW_OK, "\"%s\" refused (%d): %s", s, rc, err);
    CHECK_STR(u.host, host);
    CHECK_STR(u.path, path);
    CHECK_STR(u.user, user);
    CHECK_STR(u.password, password);
    if (path == NULL)
        CHECK_EQ(u.port, port);
    CHECK_EQ(u.db, db);
    lw__url_free(&u);
    CHECK(u.host == NULL && u.path == NULL && u.user == NULL &&
          u.password == NULL);
}

/* Parse s, which must be refused with LW_ECONFIG and a reason containing
 * why; *u must hold nothing afterwards. */
static void bad(const char *s, const char *why)
{
    struct lw_url u;
    char err[512] = "";
    int rc = lw__url_parse(s, &u, err, sizeof err);

    CHECK_MSG(rc == LW_ECONFIG, "\"%s\": %d, expected LW_ECONFIG", s ? s : "",
              rc);
    CHECK_MSG(strstr(err, why) != NULL,
              "\"%s\": reason \"%s\", expected \"%s\"", s ? s : "", err, why);
    CHECK(u.host == NULL && u.path == NULL && u.user == NULL &&
          u.password == NULL && u.port == 0 && u.db == 0);
}

static void accepted(void)
{
    ok("redis://127.0.0.1", "127.0.0.1", 6379, NULL, NULL, NULL, 0);
    ok("redis://localhost:6380", "localhost", 6380, NULL, NULL, NULL, 0);
    ok("redis://h:1", "h", 1, NULL, NULL, NULL, 0);
    ok("redis://h:65535", "h", 65535, NULL, NULL, NULL, 0);
    ok("redis://h:06379", "h", 6379, NULL, NULL, NULL, 0);
    /* A trailing slash names no database: the default. */
    ok("redis://h:6379/", "h", 6379, NULL, NULL, NULL, 0);
    ok("redis://h/3", "h", 6379, NULL, NULL, NULL, 3);
    ok("redis://h:7/0", "h", 7, NULL, NULL, NULL, 0);
    ok("redis://h:7/1000000", "h", 7, NULL, NULL, NULL, 1000000);
    /* IPv6 literals in brackets, the brackets not part of the host. */
    ok("redis://[::1]:6380", "::1", 6380, NULL, NULL, NULL, 0);
    ok("redis://[::1]", "::1", 6379, NULL, NULL, NULL, 0);
    ok("redis://[2001:db8::7]/2", "2001:db8::7", 6379, NULL, NULL, NULL, 2);

    /* Credentials: a password alone, user and password, an empty user. */
    ok("redis://secret@h", "h", 6379, NULL, NULL, "secret", 0);
    ok("redis://alice:pw@h:1/2", "h", 1, NULL, "alice", "pw", 2);
    ok("redis://:pw@h", "h", 6379, NULL, NULL, "pw", 0);
    ok("redis://alice:pw@[::1]:9", "::1", 9, NULL, "alice", "pw", 0);
    /* %-escapes in either, hex digits of both cases. */
    ok("redis://a%3ab:p%40ss%3Aw%2Fd%25@h", "h", 6379, NULL, "a:b", "p@ss:w/d%",
       0);
    /* The last '@' ends the credentials: an unescaped one stays in the
     * password. */
    ok("redis://:a@b@h:5", "h", 5, NULL, NULL, "a@b", 0);
    ok("redis://u:a:b@h", "h", 6379, NULL, "u", "a:b", 0);

    ok("unix:///tmp/redis.sock", NULL, 0, "/tmp/redis.sock", NULL, NULL, 0);
    ok("unix:///", NULL, 0, "/", NULL, NULL, 0);
}

static void refused(void)
{
    bad(NULL, "empty value");
    bad("", "empty value");

    bad("http://h:6379", "scheme must be");
    bad("h:6379", "scheme must be");
    bad("REDIS://h", "scheme must be");
    bad("redis:/h", "scheme must be");
    bad("redis+cluster://h:1", "scheme must be"); /* a list's, not a URL's */

    bad("redis://", "bad host");
    bad("redis://:6379", "bad host");
    bad("redis:///0", "bad host");
    bad("redis://pw@", "bad host");
    bad("redis://[::1", "bad host");
    bad("redis://[::1]6379", "bad host");
    bad("redis://[]:6379", "bad host");

    bad("redis://h:0", "port must be 1..65535");
    bad("redis://h:65536", "port must be 1..65535");
    bad("redis://h:99999", "port must be 1..65535");
    bad("redis://h:", "port must be 1..65535");
    bad("redis://h:abc", "port must be 1..65535");
    bad("redis://h:-1", "port must be 1..65535");
    bad("redis://h:+1", "port must be 1..65535");
    bad("redis://h:6379 x", "port must be 1..65535");
    bad("redis://h:1234567890", "port must be 1..65535");
    bad("redis://h:4294967297", "port must be 1..65535"); /* 2^32 + 1 */
    bad("redis://[::1]:", "port must be 1..65535");
    bad("redis://[::1]:0", "port must be 1..65535");

    bad("redis://h/x", "database must be a number");
    bad("redis://h/-1", "database must be a number");
    bad("redis://h/1000001", "database must be a number");
    bad("redis://h/1234567890", "database must be a number");
    bad("redis://h:1/0/1", "database must be a number");
    bad("redis://h//", "database must be a number");
    bad("redis://h/1?x=1", "database must be a number");

    bad("redis://h?db=1", "query strings are not supported");
    bad("redis://h:1#frag", "query strings are not supported");

    bad("redis://:%zz@h", "bad %-escape");
    bad("redis://:%4@h", "bad %-escape");
    bad("redis://:ab%@h", "bad %-escape");
    bad("redis://%g0:pw@h", "bad %-escape");

    bad("redis://a:1,redis://b:2", "one URL expected, found a list");
    bad("unix://", "unix socket path must be absolute");
    bad("unix://tmp/redis.sock", "unix socket path must be absolute");
}

/* An error names the URL with everything between the scheme and the last
 * '@' masked: a refused URL must not put its password in the log. */
static void errors_hide_passwords(void)
{
    static const char *const secret_urls[] = {
        "redis://alice:hunter2@h:99999", "redis://hunter2@h/x",
        "redis://:hunter2@h?q",          "redis://:hun@ter2@:1",
        "redis://:hunter2%zz@h",
    };
    char err[512];
    struct lw_url u;

    for (size_t i = 0; i < sizeof secret_urls / sizeof *secret_urls; i++) {
        CHECK_RC(lw__url_parse(secret_urls[i], &u, err, sizeof err),
                 LW_ECONFIG);
        CHECK_MSG(strstr(err, "hunter2") == NULL && strstr(err, "ter2") == NULL,
                  "password in \"%s\"", err);
        CHECK_MSG(strstr(err, "redis://***@") != NULL, "no mask in \"%s\"",
                  err);
    }

    /* A short buffer is truncated, still a string; none at all is fine. */
    memset(err, 'x', sizeof err);
    CHECK_RC(lw__url_parse("redis://h:0", &u, err, 8), LW_ECONFIG);
    CHECK_EQ(strlen(err), 7);
    CHECK_RC(lw__url_parse("redis://h:0", &u, NULL, 0), LW_ECONFIG);
}

static void describe(void)
{
    struct lw_url u;
    char buf[256], err[256], host[] = "h", user[] = "bob", path[] = "/s",
                             password[] = "pw";

    CHECK_RC(lw__url_parse("redis://alice:pw@h:1/2", &u, err, sizeof err),
             LW_OK);
    lw__url_describe(&u, buf, sizeof buf);
    CHECK_STR(buf, "redis://alice:***@h:1/2");
    lw__url_free(&u);

    CHECK_RC(lw__url_parse("redis://pw@h", &u, err, sizeof err), LW_OK);
    lw__url_describe(&u, buf, sizeof buf);
    CHECK_STR(buf, "redis://:***@h:6379/0");
    lw__url_free(&u);

    CHECK_RC(lw__url_parse("redis://h", &u, err, sizeof err), LW_OK);
    lw__url_describe(&u, buf, sizeof buf);
    CHECK_STR(buf, "redis://h:6379/0");
    lw__url_describe(&u, buf, 8);
    CHECK_STR(buf, "redis:/");
    lw__url_free(&u);

    CHECK_RC(lw__url_parse("unix:///tmp/r.sock", &u, err, sizeof err), LW_OK);
    lw__url_describe(&u, buf, sizeof buf);
    CHECK_STR(buf, "unix:///tmp/r.sock");
    lw__url_free(&u);

    /* Shapes the parser does not make, but a struct may hold. */
    memset(&u, 0, sizeof u);
    u.host = host;
    u.port = 1;
    u.user = user;
    lw__url_describe(&u, buf, sizeof buf);
    CHECK_STR(buf, "redis://bob@h:1/0");
    memset(&u, 0, sizeof u);
    u.path = path;
    u.password = password;
    lw__url_describe(&u, buf, sizeof buf);
    CHECK_STR(buf, "unix://***@/s");
}

static void copy(void)
{
    struct lw_url a, b;
    char err[256];

    CHECK_RC(lw__url_parse("redis://alice:pw@h:1/2", &a, err, sizeof err),
             LW_OK);
    CHECK_RC(lw__url_copy(&b, &a), LW_OK);
    CHECK(b.host != a.host && b.user != a.user && b.password != a.password);
    CHECK(b.path == NULL);
    CHECK_STR(b.host, "h");
    CHECK_STR(b.user, "alice");
    CHECK_STR(b.password, "pw");
    CHECK_EQ(b.port, 1);
    CHECK_EQ(b.db, 2);
    lw__url_free(&a);
    CHECK_STR(b.host, "h"); /* owns its strings */
    lw__url_free(&b);

    CHECK_RC(lw__url_parse("unix:///s", &a, err, sizeof err), LW_OK);
    CHECK_RC(lw__url_copy(&b, &a), LW_OK);
    CHECK(b.path != a.path && b.host == NULL && b.password == NULL);
    CHECK_STR(b.path, "/s");
    lw__url_free(&a);
    lw__url_free(&b);
}

static void ep_ok(const char *s, int topology, int n, struct lw_endpoints *e)
{
    char err[512] = "";
    int rc = lw__endpoints_parse(s, e, err, sizeof err);

    CHECK_MSG(rc == LW_OK, "\"%s\" refused (%d): %s", s, rc, err);
    CHECK_EQ(e->topology, topology);
    CHECK_EQ(e->n, n);
}

static void ep_bad(const char *s, const char *why)
{
    struct lw_endpoints e;
    char err[512] = "";
    int rc = lw__endpoints_parse(s, &e, err, sizeof err);

    CHECK_MSG(rc == LW_ECONFIG, "\"%s\": %d, expected LW_ECONFIG", s ? s : "",
              rc);
    CHECK_MSG(strstr(err, why) != NULL,
              "\"%s\": reason \"%s\", expected \"%s\"", s ? s : "", err, why);
    CHECK(e.n == 0 && e.urls == NULL);
}

static void check_url(const struct lw_url *u, const char *host, int port,
                      const char *user, const char *password)
{
    CHECK_STR(u->host, host);
    CHECK_EQ(u->port, port);
    CHECK_STR(u->user, user);
    CHECK_STR(u->password, password);
}

/* "redis+cluster://" followed by count seeds "hI:I" (I from 1), comma
 * separated. */
static void seeds(char *buf, size_t cap, int count)
{
    size_t len = (size_t)snprintf(buf, cap, "redis+cluster://");
    for (int i = 1; i <= count; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%sh%d:%d",
                                i > 1 ? "," : "", i, i);
}

static void endpoints(void)
{
    struct lw_endpoints e;
    char s[2048], err[512];

    ep_ok("redis://a:1/3", LW_TOPO_SINGLE, 1, &e);
    check_url(&e.urls[0], "a", 1, NULL, NULL);
    CHECK_EQ(e.urls[0].db, 3);
    lw__endpoints_free(&e);
    CHECK(e.n == 0 && e.urls == NULL);

    ep_ok("unix:///tmp/s", LW_TOPO_SINGLE, 1, &e);
    CHECK_STR(e.urls[0].path, "/tmp/s");
    lw__endpoints_free(&e);

    /* Redlock: independent masters, each with its own credentials (none
     * inherited) and database, in the order given. */
    ep_ok("redis://:x@a:1,redis://b:2/4,unix:///c", LW_TOPO_REDLOCK, 3, &e);
    check_url(&e.urls[0], "a", 1, NULL, "x");
    check_url(&e.urls[1], "b", 2, NULL, NULL);
    CHECK_EQ(e.urls[1].db, 4);
    CHECK_STR(e.urls[2].path, "/c");
    lw__endpoints_free(&e);

    /* Cluster seeds are host:port; those without credentials take the
     * first seed's, those with their own keep them. */
    ep_ok("redis+cluster://u:pw@a:1,b:2,:other@c:3,[::1]:4", LW_TOPO_CLUSTER, 4,
          &e);
    check_url(&e.urls[0], "a", 1, "u", "pw");
    check_url(&e.urls[1], "b", 2, "u", "pw");
    check_url(&e.urls[2], "c", 3, NULL, "other");
    check_url(&e.urls[3], "::1", 4, "u", "pw");
    CHECK(e.urls[1].password != e.urls[0].password); /* a copy */
    lw__endpoints_free(&e);

    ep_ok("redis+cluster://a", LW_TOPO_CLUSTER, 1, &e);
    check_url(&e.urls[0], "a", 6379, NULL, NULL);
    lw__endpoints_free(&e);
    ep_ok("redis+cluster://a:1/0", LW_TOPO_CLUSTER, 1, &e);
    lw__endpoints_free(&e);

    /* At most LW_ENDPOINTS_MAX. */
    seeds(s, sizeof s, LW_ENDPOINTS_MAX);
    ep_ok(s, LW_TOPO_CLUSTER, LW_ENDPOINTS_MAX, &e);
    check_url(&e.urls[LW_ENDPOINTS_MAX - 1], "h16", 16, NULL, NULL);
    lw__endpoints_free(&e);
    seeds(s, sizeof s, LW_ENDPOINTS_MAX + 1);
    ep_bad(s, "more than 16 endpoints");

    /* An element, with the "redis://" a seed is read with, must fit 1 KiB. */
    memcpy(s, "redis+cluster://", 16);
    memset(s + 16, 'h', 1015);
    s[16 + 1015] = '\0';
    ep_ok(s, LW_TOPO_CLUSTER, 1, &e);
    CHECK_EQ(strlen(e.urls[0].host), 1015);
    lw__endpoints_free(&e);
    memset(s + 16, 'h', 1016);
    s[16 + 1016] = '\0';
    ep_bad(s, "element too long");

    ep_bad(NULL, "empty value");
    ep_bad("", "empty value");
    ep_bad("redis+cluster://", "empty element in list");
    ep_bad("redis+cluster://a:1,", "empty element in list");
    ep_bad("redis+cluster://a:1,,b:2", "empty element in list");
    ep_bad("redis://a,", "empty element in list");
    ep_bad(",redis://a", "empty element in list");
    ep_bad("redis+cluster://a:1/2", "cluster seeds are host:port");
    ep_bad("redis+cluster://a:1,b:2/1", "cluster seeds are host:port");
    ep_bad("redis+cluster://a:0", "port must be 1..65535");
    ep_bad("redis+cluster://redis://a:1", "port must be 1..65535");
    ep_bad("redis://a:1,http://b:2", "scheme must be");
    ep_bad("redis://a:1,redis://b:2/x", "database must be a number");

    /* A refused element's error names the whole value, masked up to its
     * last '@': no password of any element shows. */
    CHECK_RC(lw__endpoints_parse("redis://:pw1@a,redis://:pw2@b:0", &e, err,
                                 sizeof err),
             LW_ECONFIG);
    CHECK_MSG(strstr(err, "pw1") == NULL && strstr(err, "pw2") == NULL,
              "password in \"%s\"", err);
    CHECK_MSG(strstr(err, "port must be") != NULL, "reason: \"%s\"", err);
    CHECK_RC(lw__endpoints_parse("redis+cluster://u:pw1@a:1,b:99999", &e, err,
                                 sizeof err),
             LW_ECONFIG);
    CHECK_MSG(strstr(err, "pw1") == NULL, "password in \"%s\"", err);
}

/* rediss:// marks the endpoint TLS, in every topology; one list is all TLS
 * or none.  unix:// carries credentials and a database too. */
static void tls_and_unix(void)
{
    struct lw_endpoints e;
    char buf[256], err[512] = "";

    ep_ok("rediss://:pw@a:1/2", LW_TOPO_SINGLE, 1, &e);
    check_url(&e.urls[0], "a", 1, NULL, "pw");
    CHECK_EQ(e.urls[0].tls, 1);
    CHECK(lw__endpoints_tls(&e));
    lw__url_describe(&e.urls[0], buf, sizeof buf);
    CHECK_STR(buf, "rediss://:***@a:1/2");
    lw__endpoints_free(&e);
    ep_ok("redis://a:1", LW_TOPO_SINGLE, 1, &e);
    CHECK(!lw__endpoints_tls(&e));
    lw__endpoints_free(&e);
    ep_ok("rediss+cluster://:pw@a:1,b:2", LW_TOPO_CLUSTER, 2, &e);
    CHECK(e.urls[0].tls && e.urls[1].tls);
    check_url(&e.urls[1], "b", 2, NULL, "pw");
    lw__endpoints_free(&e);
    ep_ok("rediss://a:1,rediss://b:2,rediss://c:3", LW_TOPO_REDLOCK, 3, &e);
    CHECK(e.urls[0].tls && e.urls[1].tls && e.urls[2].tls);
    lw__endpoints_free(&e);
    ep_bad("rediss://:secret@a:1,redis://b:2", "mixed");
    ep_bad("redis://a:1,rediss://b:2", "mixed");
    ep_bad("rediss://a:1,unix:///s", "mixed");
    CHECK_RC(lw__endpoints_parse("rediss://:secret@a:1,redis://b:2", &e, err,
                                 sizeof err),
             LW_ECONFIG);
    CHECK_MSG(strstr(err, "secret") == NULL, "\"%s\"", err);

    ok("unix://:pw@/tmp/r.sock", NULL, 0, "/tmp/r.sock", NULL, "pw", 0);
    ok("unix://alice:p%2Fw@/tmp/r.sock?db=3", NULL, 0, "/tmp/r.sock", "alice",
       "p/w", 3);
    ok("unix://pw@/tmp/r.sock", NULL, 0, "/tmp/r.sock", NULL, "pw", 0);
    /* A '?' that is not ?db=N is the path's. */
    ok("unix:///tmp/a?b", NULL, 0, "/tmp/a?b", NULL, NULL, 0);
    bad("unix://pw/tmp/r.sock", "unix socket path must be absolute");
    bad("unix://:pw@/tmp/r.sock?db=x", "database must be a number");
    bad("unix://:p%zz@/tmp/r.sock", "bad %-escape");
    ep_ok("unix://alice:pw@/tmp/r.sock?db=3", LW_TOPO_SINGLE, 1, &e);
    lw__url_describe(&e.urls[0], buf, sizeof buf);
    CHECK_STR(buf, "unix://alice:***@/tmp/r.sock?db=3");
    lw__endpoints_free(&e);
}

/* redis[s]+sentinel://: the sentinels (port 26379 when none is given, no
 * credentials of their own) and the master's name; the URL's credentials,
 * database and TLS are the data nodes'. */
static void sentinel_urls(void)
{
    struct lw_endpoints e;
    char buf[256], err[512] = "";

    ep_ok("redis+sentinel://u:p%40w@a:1,b,[::1]:3/my%20master?db=2",
          LW_TOPO_SENTINEL, 3, &e);
    check_url(&e.urls[0], "a", 1, NULL, NULL);
    check_url(&e.urls[1], "b", LW_SENTINEL_PORT, NULL, NULL);
    check_url(&e.urls[2], "::1", 3, NULL, NULL);
    CHECK_EQ(e.urls[0].role, LW_URL_SENTINEL);
    CHECK_STR(e.master_name, "my master");
    CHECK(e.node.host == NULL);
    CHECK_STR(e.node.user, "u");
    CHECK_STR(e.node.password, "p@w");
    CHECK_EQ(e.node.db, 2);
    CHECK_EQ(e.node.role, LW_URL_MASTER);
    CHECK(!lw__endpoints_tls(&e));
    lw__url_describe(&e.urls[1], buf, sizeof buf);
    CHECK_STR(buf, "sentinel redis://b:26379");
    lw__endpoints_free(&e);
    CHECK(e.n == 0 && e.urls == NULL && e.master_name == NULL);

    ep_ok("rediss+sentinel://h:5/m", LW_TOPO_SENTINEL, 1, &e);
    CHECK(e.urls[0].tls && e.node.tls);
    CHECK(lw__endpoints_tls(&e));
    CHECK_STR(e.master_name, "m");
    lw__endpoints_free(&e);

    ep_bad("redis+sentinel://a:1", "master's name is missing");
    ep_bad("redis+sentinel://a:1/", "master's name is missing");
    ep_bad("redis+sentinel://a:1,/m", "empty element in list");
    ep_bad("redis+sentinel://a:0/m", "port must be 1..65535");
    ep_bad("redis+sentinel://a:1/m?db=x", "database must be a number");
    ep_bad("redis+sentinel://a:1/m/2", "only ?db=N may follow");
    ep_bad("redis+sentinel://a:1/m?timeout=1", "only ?db=N may follow");
    CHECK_RC(lw__endpoints_parse("redis+sentinel://:secret@a:0/m", &e, err,
                                 sizeof err),
             LW_ECONFIG);
    CHECK_MSG(strstr(err, "secret") == NULL, "password in \"%s\"", err);
}

int main(void)
{
    accepted();
    refused();
    errors_hide_passwords();
    describe();
    copy();
    endpoints();
    tls_and_unix();
    sentinel_urls();
    printf("unit_url: ok\n");
    return 0;
}

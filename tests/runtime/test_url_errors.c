/* URLs that cannot work, beyond test_url.c's malformed ones: more malformed
 * shapes, addresses where no Redis answers (a missing unix socket, a
 * non-Redis peer that talks garbage or nothing), and credentials: the
 * password-only form (requirepass), %-escaped passwords, ACL users that are
 * disabled or lack permissions.  Each fails closed with a clear code within
 * the configured timeouts, the body never runs, and a good configuration
 * works again afterwards. */
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNECT_MS 500
#define COMMAND_MS 500
/* "Fails fast": well under a lock's wait, generous for a loaded VM. */
#define BOUND_MS 5000

static rh_server srv;
static int body_runs;

static int configure(const char *url)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = CONNECT_MS;
    cfg.command_timeout_ms = COMMAND_MS;
    return lw_configure(&cfg);
}

/* One guarded call on key with a 3 s wait; the body counts its runs. */
static int call(const char *key, int64_t *took)
{
    lw_guard g;
    int64_t t0 = now_ms();
    int rc = lock_str(&g, key, 5000, 3000);
    *took = now_ms() - t0;
    if (rc == LW_OK) {
        body_runs++;
        rc = lw_guard_leave(&g);
    }
    return rc;
}

/* Configure url, make two calls, each must fail with one of want[]. */
static void fails(const char *what, const char *url, int want1, int want2)
{
    CHECK_MSG(configure(url) == LW_OK, "%s: lw_configure refused %s", what,
              url);
    int before = body_runs;
    for (int i = 0; i < 2; i++) {
        int64_t took;
        int rc = call("url-errors", &took);
        printf("%-36s %s after %lld ms\n", what, lw_strerror(rc),
               (long long)took);
        CHECK_MSG(rc == want1 || rc == want2, "%s: got %s", what,
                  lw_strerror(rc));
        CHECK_RC(lw_last_error(), rc);
        CHECK_RANGE(took, 0, BOUND_MS);
    }
    CHECK_EQ(body_runs, before);
}

static void works(const char *what, const char *url)
{
    CHECK_MSG(configure(url) == LW_OK, "%s: lw_configure refused %s", what,
              url);
    int64_t took;
    int rc = call("url-errors", &took);
    CHECK_MSG(rc == LW_OK, "%s (%s): %s", what, url, lw_strerror(rc));
}

static void more_malformed(void)
{
    char longurl[10000];
    memcpy(longurl, "redis://", 8);
    memset(longurl + 8, 'h', sizeof longurl - 9);
    longurl[sizeof longurl - 1] = '\0';
    char port_url[128];
    snprintf(port_url, sizeof port_url,
             "redis://:p%%40ss%%3Aw%%2Frd%%25@127.0.0.1:%d", srv.port);
    const char *const bad[] = {
        "",                                /* empty */
        "redis://127.0.0.1:6379?db=1",     /* query string */
        "redis://127.0.0.1:6379#frag",     /* fragment */
        "redis://u:p%zz@127.0.0.1:6379",   /* bad %-escape */
        "redis://u:p%4@127.0.0.1:6379",    /* truncated %-escape */
        "unix://relative/redis.sock",      /* relative socket path */
        "redis://[::1",                    /* unclosed IPv6 bracket */
        "redis://[::1]x",                  /* junk after the bracket */
        "redis://:6379",                   /* no host */
        "redis://u:p@:6379",               /* credentials, no host */
        "redis://127.0.0.1:0",             /* port 0 */
        "redis://127.0.0.1:",              /* empty port */
        "redis://127.0.0.1:63 79",         /* space in the port */
        "redis://127.0.0.1:6379/99999999", /* database out of range */
        "rediss://127.0.0.1:6379,redis://127.0.0.2:6379", /* TLS, plain */
        longurl,
    };
    int accepted = 0;
    CHECK_RC(configure(port_url), LW_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = configure(bad[i]);
        if (rc != LW_ECONFIG) {
            fprintf(stderr, "lw_configure(\"%.60s\") returned %s\n", bad[i],
                    lw_strerror(rc));
            accepted++;
            CHECK_RC(configure(port_url), LW_OK);
        }
    }
    CHECK_EQ(accepted, 0);
    /* The good configuration stayed in force through all of them. */
    works("after the malformed URLs", port_url);
}

/* ---- a peer that is not Redis ------------------------------------------ */

struct fake {
    int fd;
    int port;
    int garbage; /* 1: answer with HTTP and close; 0: read and say nothing */
    int stop;
    pthread_t thread;
};

static void *fake_run(void *arg)
{
    struct fake *f = arg;
    int held[16], nheld = 0;
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        int c = accept(f->fd, NULL, NULL);
        if (c < 0)
            break;
        if (f->garbage) {
            static const char http[] =
                "HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
            ssize_t w = write(c, http, sizeof http - 1);
            (void)w;
            close(c);
        } else if (nheld < 16) {
            held[nheld++] = c; /* open, silent */
        } else
            close(c);
    }
    for (int i = 0; i < nheld; i++)
        close(held[i]);
    return NULL;
}

static void fake_start(struct fake *f, int garbage)
{
    memset(f, 0, sizeof *f);
    f->garbage = garbage;
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(f->fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(f->fd, 16), 0);
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(f->fd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
    CHECK_EQ(pthread_create(&f->thread, NULL, fake_run, f), 0);
}

static void fake_stop(struct fake *f)
{
    __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
    shutdown(f->fd, SHUT_RDWR); /* wakes accept() */
    CHECK_EQ(pthread_join(f->thread, NULL), 0);
    close(f->fd);
}

static void not_redis(void)
{
    char url[64];
    struct fake f;

    fake_start(&f, 1);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    fails("HTTP server on the port", url, LW_EREDIS, LW_EREDIS);
    /* Over TLS its answer is no handshake. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", f.port);
    fails("HTTP server on a rediss:// port", url, LW_ETLS, LW_ETLS);
    fake_stop(&f);

    fake_start(&f, 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    fails("silent peer on the port", url, LW_EREDIS, LW_EREDIS);
    /* A handshake that never ends is bounded by the connect timeout. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", f.port);
    fails("silent peer on a rediss:// port", url, LW_EREDIS, LW_EREDIS);
    fake_stop(&f);
}

static void nowhere(void)
{
    char url[256];
    snprintf(url, sizeof url, "unix://%s/no-such.sock", srv.dir);
    fails("missing unix socket", url, LW_EREDIS, LW_EREDIS);
    /* A path that exists but is no socket: the server's log file. */
    snprintf(url, sizeof url, "unix://%s", srv.log_path);
    fails("unix:// to a regular file", url, LW_EREDIS, LW_EREDIS);
}

/* requirepass only (no ACL user): the password-only forms. */
static void password_only(void)
{
    char url[256];
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", srv.port);
    fails("redis://:wrong@", url, LW_EAUTH, LW_EAUTH);
    snprintf(url, sizeof url, "redis://wrong@127.0.0.1:%d", srv.port);
    fails("redis://wrong@ (password alone)", url, LW_EAUTH, LW_EAUTH);
    snprintf(url, sizeof url, "redis://default:wrong@127.0.0.1:%d", srv.port);
    fails("redis://default:wrong@", url, LW_EAUTH, LW_EAUTH);

    /* The password is "p@ss:w/rd%": escaped, and with a bare '@'. */
    snprintf(url, sizeof url, "redis://:p%%40ss%%3Aw%%2Frd%%25@127.0.0.1:%d",
             srv.port);
    works("%-escaped password", url);
    snprintf(url, sizeof url,
             "redis://default:p%%40ss%%3Aw%%2Frd%%25@"
             "127.0.0.1:%d",
             srv.port);
    works("default user, %-escaped password", url);
    /* The '@' inside the password taken literally: the last '@' ends the
     * credentials, so only '/' and '%' need escaping. */
    snprintf(url, sizeof url, "redis://:p@ss:w%%2Frd%%25@127.0.0.1:%d",
             srv.port);
    works("password with a bare '@'", url);
}

/* ACL users that AUTH cannot or may not use. */
static void acl_users(void)
{
    char url[256];
    snprintf(url, sizeof url, "redis://off_user:pw@127.0.0.1:%d", srv.port);
    fails("disabled ACL user", url, LW_EAUTH, LW_EAUTH);
    /* Authenticated, but may not run scripts or touch lock:*: not our
     * key space.  Refused by Redis (NOPERM): LW_EAUTH, never a body run. */
    snprintf(url, sizeof url, "redis://readonly:pw@127.0.0.1:%d", srv.port);
    fails("ACL user without write rights", url, LW_EAUTH, LW_EAUTH);
    snprintf(url, sizeof url, "redis://otherkeys:pw@127.0.0.1:%d", srv.port);
    fails("ACL user limited to other keys", url, LW_EAUTH, LW_EAUTH);
    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d", srv.port);
    works("ACL user with the rights lockweave needs", url);
}

/* unix:// without credentials, against a server that requires a password,
 * fails closed (NOAUTH: LW_EAUTH); with them it gets in, an ACL user and a
 * database too. */
static void unix_socket_with_password(void)
{
    char url[256];
    snprintf(url, sizeof url, "unix://%s", srv.sock_path);
    fails("unix:// to a password-protected server", url, LW_EAUTH, LW_EAUTH);
    snprintf(url, sizeof url, "unix://:wrong@%s", srv.sock_path);
    fails("unix:// with a wrong password", url, LW_EAUTH, LW_EAUTH);
    snprintf(url, sizeof url, "unix://:p%%40ss:w%%2Frd%%25@%s", srv.sock_path);
    works("unix:// with the password", url);
    snprintf(url, sizeof url, "unix://locker:pw@%s?db=3", srv.sock_path);
    works("unix:// as an ACL user, database 3", url);
    redisReply *r = rh_cmd(&srv, "SELECT 3");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS {lockweave}lock:fences"), 1);
    r = rh_cmd(&srv, "SELECT 0");
    freeReplyObject(r);
}

int main(void)
{
    /* The ACL users: one disabled, one read-only, one limited to keys that
     * are not lockweave's, one with what lockweave needs (all keys of its
     * own, scripts, BLPOP on a waiter's mailbox list; no channels). */
    static const char *const acl[] = {
        "--user", "off_user", "off",      ">pw",          "~*",     "&*",
        "+@all",  "--user",   "readonly", "on",           ">pw",    "~*",
        "&*",     "+@read",   "+ping",    "+script|load", "--user", "otherkeys",
        "on",     ">pw",      "~app:*",   "&*",           "+@all",  "--user",
        "locker", "on",       ">pw",      "~*lock:*",     "+@all",  NULL};
    rh_opts o;
    rh_opts_init(&o);
    o.password = "p@ss:w/rd%";
    o.unix_socket = 1;
    o.extra_args = acl;
    CHECK_EQ(rh_start(&srv, &o), 0);

    more_malformed();
    nowhere();
    not_redis();
    password_only();
    acl_users();
    unix_socket_with_password();

    lw_shutdown();
    rh_stop(&srv);
    printf("url_errors: ok\n");
    return 0;
}

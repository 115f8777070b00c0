/* rediss:// against real TLS-only redis-servers, with certificates made at
 * test time: a verified connection (by name, and by address with
 * tls_server_name), and each way verification must fail closed with
 * LW_ETLS and a log line saying why — an untrusted CA, a wrong name, an
 * expired certificate, a missing client certificate — the body never run.
 * Bad TLS files are LW_ECONFIG naming the file; INSECURE connects with a
 * warning; credentials travel inside TLS and stay masked in the log.
 * rediss:// to a plain redis-server is LW_ETLS, said as such. */
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static rh_tls tls;
static rh_server srv;     /* tls-auth-clients optional, DNS:localhost only */
static rh_server expired; /* presents a certificate that ran out in 2020 */
static rh_server mutual;  /* tls-auth-clients yes, requirepass */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char logs[16384];

static void keep_log(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&log_mu);
    size_t n = strlen(logs);
    snprintf(logs + n, sizeof logs - n, "%s\n", msg);
    pthread_mutex_unlock(&log_mu);
}

static void clear_logs(void)
{
    pthread_mutex_lock(&log_mu);
    logs[0] = '\0';
    pthread_mutex_unlock(&log_mu);
}

static int logged(const char *what)
{
    pthread_mutex_lock(&log_mu);
    int found = strstr(logs, what) != NULL;
    pthread_mutex_unlock(&log_mu);
    return found;
}

static int count_logged(const char *what)
{
    int n = 0;
    pthread_mutex_lock(&log_mu);
    for (const char *p = logs; (p = strstr(p, what)) != NULL; p++)
        n++;
    pthread_mutex_unlock(&log_mu);
    return n;
}

struct tls_cfg {
    const char *ca, *ca_dir, *cert, *key, *name;
    int insecure;
};

/* lw_configure() with url and c; returns its code. */
static int configure(const char *url, struct tls_cfg c)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 2000;
    cfg.command_timeout_ms = 2000;
    cfg.tls_ca_file = c.ca;
    cfg.tls_ca_dir = c.ca_dir;
    cfg.tls_cert_file = c.cert;
    cfg.tls_key_file = c.key;
    cfg.tls_server_name = c.name;
    cfg.tls_insecure = c.insecure;
    clear_logs();
    return lw_configure(&cfg);
}

static int body_runs;

/* One guarded section on "tls": the code it ended with. */
static int section(void)
{
    lw_guard g;
    int rc = lock_str(&g, "tls", 5000, 500);
    if (rc != LW_OK)
        return rc;
    body_runs++;
    return lw_guard_leave(&g);
}

static void works(const char *what, const char *url, struct tls_cfg c)
{
    CHECK_RC(configure(url, c), LW_OK);
    int rc = section();
    CHECK_MSG(rc == LW_OK, "%s: %s; log:\n%s", what, lw_strerror(rc), logs);
}

/* The section fails with LW_ETLS without running, and the log says why. */
static void refused(const char *what, const char *url, struct tls_cfg c,
                    const char *why)
{
    int before = body_runs;
    CHECK_RC(configure(url, c), LW_OK);
    int rc = section();
    CHECK_MSG(rc == LW_ETLS, "%s: got %s, not LW_ETLS; log:\n%s", what,
              lw_strerror(rc), logs);
    CHECK_RC(lw_last_error(), LW_ETLS);
    CHECK_EQ(body_runs, before);
    CHECK_MSG(logged(why), "%s: no \"%s\" in the log:\n%s", what, why, logs);
    /* While the connection backs off the call fails fast, and still as
     * LW_ETLS, not as another code. */
    CHECK_RC(section(), LW_ETLS);
}

static void verified(void)
{
    char url[128];
    struct tls_cfg c = {.ca = tls.ca};
    works("verified, by name", srv.url, c);
    CHECK(!logged("TLS"));
    /* The lock key went to the TLS server, and was released there. */
    CHECK_EQ(lock_exists(&srv, "tls"), 0);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS {lockweave}lock:fences"), 1);

    /* By address: the certificate names localhost only... */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", srv.port);
    refused("by address, certificate for a name", url, c,
            "IP address mismatch");
    /* ...which tls_server_name says to check instead. */
    c.name = "localhost";
    works("by address with the server name", url, c);
    c.name = "redis.example.org";
    refused("wrong server name", url, c, "hostname mismatch");
}

static void untrusted(void)
{
    char url[128];
    refused("CA that did not sign it", srv.url,
            (struct tls_cfg){.ca = tls.other_ca},
            "server certificate not trusted: self-signed certificate in "
            "certificate chain");
    /* No CA given: the system trust store, which knows nothing of the
     * test CA (self-signed chain from an unknown root). */
    refused("system trust store", srv.url, (struct tls_cfg){0},
            "server certificate not trusted");
    refused("expired certificate", expired.url, (struct tls_cfg){.ca = tls.ca},
            "certificate has expired");
    /* Plain RESP to a TLS port: not a TLS error, no reply. */
    snprintf(url, sizeof url, "redis://localhost:%d", srv.port);
    CHECK_RC(configure(url, (struct tls_cfg){0}), LW_OK);
    CHECK_RC(section(), LW_EREDIS);
}

static void insecure(void)
{
    /* Not verified: connects to a server no CA here vouches for, and says
     * so once per connection. */
    works("insecure", srv.url,
          (struct tls_cfg){.ca = tls.other_ca, .insecure = 1});
    CHECK_EQ(section(), LW_OK); /* the same connection: no second warning */
    CHECK_EQ(count_logged("TLS without verifying"), 1);
    /* The environment says the same. */
    setenv("LOCKWEAVE_TLS_INSECURE", "1", 1);
    works("insecure from the environment", expired.url, (struct tls_cfg){0});
    unsetenv("LOCKWEAVE_TLS_INSECURE");
    CHECK_EQ(count_logged("TLS without verifying"), 1);
}

static void client_certificates(void)
{
    char url[160];
    snprintf(url, sizeof url, "rediss://:s3cret-pw@localhost:%d", mutual.port);
    /* The server wants a client certificate; TLS 1.3 lets the handshake
     * finish and refuses with an alert on the first read. */
    refused("client certificate missing", url, (struct tls_cfg){.ca = tls.ca},
            "TLS");
    CHECK(!logged("s3cret-pw"));
    works("client certificate given", url,
          (struct tls_cfg){
              .ca = tls.ca, .cert = tls.client, .key = tls.client_key});
    /* A certificate the server's CA did not sign is refused too. */
    refused("client certificate of another CA", url,
            (struct tls_cfg){
                .ca = tls.ca, .cert = tls.stranger, .key = tls.stranger_key},
            "TLS");
    CHECK(!logged("s3cret-pw"));
    /* A wrong password over TLS is still LW_EAUTH, masked. */
    snprintf(url, sizeof url, "rediss://:wrong-pw@localhost:%d", mutual.port);
    CHECK_RC(configure(url, (struct tls_cfg){.ca = tls.ca,
                                             .cert = tls.client,
                                             .key = tls.client_key}),
             LW_OK);
    CHECK_RC(section(), LW_EAUTH);
    CHECK(!logged("wrong-pw"));
}

/* lw_configure() refuses a configuration whose files cannot be used, and
 * names the file. */
static void bad_files(void)
{
    char missing[200];
    snprintf(missing, sizeof missing, "%s/no-such-ca.pem", tls.dir);
    CHECK_RC(configure(srv.url, (struct tls_cfg){.ca = missing}), LW_ECONFIG);
    CHECK(logged(missing));
    CHECK_RC(configure(srv.url, (struct tls_cfg){.ca_dir = missing}),
             LW_ECONFIG);
    CHECK(logged(missing));
    /* A file that is not PEM. */
    snprintf(missing, sizeof missing, "%s/openssl.log", tls.dir);
    CHECK_RC(configure(srv.url, (struct tls_cfg){.ca = missing}), LW_ECONFIG);
    CHECK(logged(missing));
    /* A key that is not the certificate's. */
    CHECK_RC(configure(srv.url, (struct tls_cfg){.ca = tls.ca,
                                                 .cert = tls.client,
                                                 .key = tls.server_key}),
             LW_ECONFIG);
    CHECK_MSG(logged(tls.server_key) && logged("does not match"), "log:\n%s",
              logs);
    /* A certificate without its key. */
    CHECK_RC(
        configure(srv.url, (struct tls_cfg){.ca = tls.ca, .cert = tls.client}),
        LW_ECONFIG);
    CHECK(logged(tls.client));
    /* The same from the environment: the first guarded call reports it. */
    lw_shutdown();
    setenv("LOCKWEAVE_REDIS_URL", srv.url, 1);
    setenv("LOCKWEAVE_TLS_CA_FILE", missing, 1);
    clear_logs();
    CHECK_RC(section(), LW_ECONFIG);
    CHECK(logged(missing));
    /* ...and a good one from the environment works. */
    lw_shutdown();
    setenv("LOCKWEAVE_TLS_CA_FILE", tls.ca, 1);
    CHECK_RC(section(), LW_OK);
    lw_shutdown();
    setenv("LOCKWEAVE_TLS_SERVER_NAME", "localhost", 1);
    char url[128];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", srv.port);
    setenv("LOCKWEAVE_REDIS_URL", url, 1);
    CHECK_RC(section(), LW_OK);
    lw_shutdown();
    unsetenv("LOCKWEAVE_TLS_SERVER_NAME");
    unsetenv("LOCKWEAVE_TLS_CA_FILE");
    setenv("LOCKWEAVE_REDIS_URL", "redis://127.0.0.1:1", 1);
    lw_set_logger(keep_log, NULL, LW_LOG_INFO);
}

/* One list, one transport. */
static void mixed_lists(void)
{
    char url[256];
    snprintf(url, sizeof url, "rediss://localhost:%d,redis://localhost:%d",
             srv.port, expired.port);
    CHECK_RC(configure(url, (struct tls_cfg){.ca = tls.ca}), LW_ECONFIG);
    CHECK(logged("mixed"));
    snprintf(url, sizeof url, "redis://localhost:%d,rediss://localhost:%d",
             srv.port, expired.port);
    CHECK_RC(configure(url, (struct tls_cfg){.ca = tls.ca}), LW_ECONFIG);
    snprintf(url, sizeof url, "rediss://localhost:%d,unix:///tmp/r.sock",
             srv.port);
    CHECK_RC(configure(url, (struct tls_cfg){.ca = tls.ca}), LW_ECONFIG);
}

/* rediss:// to a plain (non-TLS) redis-server: LW_ETLS, saying the port
 * does not speak TLS, within the connect timeout and a quarter more; never
 * LW_EREDIS, as a timeout.  A plain Redis says nothing to most TLS hellos:
 * each try is a fresh hello (a new configuration, no backoff). */
static void plain_server(void)
{
    rh_server plain;
    char url[128];

    CHECK_EQ(rh_start(&plain, NULL), 0);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", plain.port);
    for (int i = 0; i < 4; i++) {
        lw_config cfg;
        int before = body_runs;
        int64_t t0 = now_ms();
        lw_config_init(&cfg);
        cfg.redis_url = url;
        cfg.connect_timeout_ms = 300;
        cfg.tls_ca_file = tls.ca;
        clear_logs();
        CHECK_RC(lw_configure(&cfg), LW_OK);
        int rc = section();
        int64_t took = now_ms() - t0;
        CHECK_MSG(rc == LW_ETLS, "try %d: got %s after %lld ms; log:\n%s", i,
                  lw_strerror(rc), (long long)took, logs);
        CHECK_EQ(body_runs, before);
        CHECK_MSG(logged("does not speak TLS"), "try %d; log:\n%s", i, logs);
        CHECK_RANGE(took, 0, 300 + 75 + 1500);
    }
    rh_stop(&plain);
}

int main(void)
{
    rh_opts o;

    CHECK_EQ(rh_tls_make(&tls), 0);
    rh_opts_init(&o);
    o.tls = &tls;
    CHECK_EQ(rh_start(&srv, &o), 0);
    o.tls_cert = tls.expired;
    o.tls_key = tls.expired_key;
    CHECK_EQ(rh_start(&expired, &o), 0);
    rh_opts_init(&o);
    o.tls = &tls;
    o.tls_auth_clients = "yes";
    o.password = "s3cret-pw";
    CHECK_EQ(rh_start(&mutual, &o), 0);
    lw_set_logger(keep_log, NULL, LW_LOG_INFO);

    verified();
    untrusted();
    insecure();
    client_certificates();
    bad_files();
    mixed_lists();
    plain_server();

    lw_shutdown();
    rh_stop(&mutual);
    rh_stop(&expired);
    rh_stop(&srv);
    rh_tls_remove(&tls);
    printf("tls: %d sections ran\n", body_runs);
    return 0;
}

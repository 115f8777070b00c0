/* The TLS side of a configuration: OpenSSL's one-time set-up and the
 * SSL_CTX every rediss:// connection of the configuration is made from. */
#include "base/tlsctx.h"

#include <lockweave.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_ok;

/* Once per process: OpenSSL 3 would initialise itself on first use too, but
 * racing first uses from several threads is what pthread_once() is for, and
 * a failure is then known before any SSL_CTX is made.  Without the atexit
 * cleanup OpenSSL registers by default: exit() runs its handlers while our
 * threads (the watchdog, a loop's pump and workers, the caller's own) may be
 * in SSL_read(), and the cleanup would free the tables they are reading.
 * The process's end frees that memory anyway. */
static void init_openssl(void)
{
#ifdef OPENSSL_INIT_NO_ATEXIT
    init_ok = OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL) == 1;
#else
    init_ok = OPENSSL_init_ssl(0, NULL) == 1;
#endif
}

void lw__tls_opts_free(struct lw_tls_opts *o)
{
    free(o->ca_file);
    free(o->ca_dir);
    free(o->cert_file);
    free(o->key_file);
    free(o->server_name);
    memset(o, 0, sizeof *o);
}

/* The last OpenSSL error of this thread as text (its queue emptied), or
 * fallback when there is none. */
static const char *ssl_why(char *buf, size_t len, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        snprintf(buf, len, "%s", fallback);
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* A file the configuration names must be readable now: its errno says more
 * than OpenSSL's "system lib". */
static int readable(const char *what, const char *path)
{
    if (access(path, R_OK) == 0)
        return 1;
    lw__log(LW_LOG_ERROR, "TLS %s %s: %s", what, path, strerror(errno));
    return 0;
}

static int load_trust(SSL_CTX *ctx, const struct lw_tls_opts *o)
{
    char why[256];

    if (o->ca_file == NULL && o->ca_dir == NULL) {
        if (SSL_CTX_set_default_verify_paths(ctx) == 1)
            return LW_OK;
        lw__log(LW_LOG_ERROR, "TLS: system trust store: %s",
                ssl_why(why, sizeof why, "not loaded"));
        return LW_ECONFIG;
    }
    if ((o->ca_file != NULL && !readable("CA file", o->ca_file)) ||
        (o->ca_dir != NULL && !readable("CA directory", o->ca_dir)))
        return LW_ECONFIG;
    if (SSL_CTX_load_verify_locations(ctx, o->ca_file, o->ca_dir) != 1) {
        lw__log(LW_LOG_ERROR, "TLS CA %s %s: %s",
                o->ca_file != NULL ? "file" : "directory",
                o->ca_file != NULL ? o->ca_file : o->ca_dir,
                ssl_why(why, sizeof why, "no certificate in it"));
        return LW_ECONFIG;
    }
    return LW_OK;
}

static int load_client_cert(SSL_CTX *ctx, const struct lw_tls_opts *o)
{
    char why[256];

    if (o->cert_file == NULL && o->key_file == NULL)
        return LW_OK;
    if (o->cert_file == NULL || o->key_file == NULL) {
        lw__log(LW_LOG_ERROR,
                "TLS client %s %s given without its %s "
                "(LOCKWEAVE_TLS_CERT_FILE and LOCKWEAVE_TLS_KEY_FILE go "
                "together)",
                o->cert_file != NULL ? "certificate" : "key",
                o->cert_file != NULL ? o->cert_file : o->key_file,
                o->cert_file != NULL ? "key" : "certificate");
        return LW_ECONFIG;
    }
    if (!readable("client certificate", o->cert_file) ||
        !readable("client key", o->key_file))
        return LW_ECONFIG;
    if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
        lw__log(LW_LOG_ERROR, "TLS client certificate %s: %s", o->cert_file,
                ssl_why(why, sizeof why, "not a PEM certificate"));
        return LW_ECONFIG;
    }
    /* Loading the key already checks it against the certificate. */
    if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 &&
        ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
        lw__log(LW_LOG_ERROR, "TLS client key %s: %s", o->key_file,
                ssl_why(why, sizeof why, "not a PEM private key"));
        return LW_ECONFIG;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        lw__log(LW_LOG_ERROR,
                "TLS client key %s does not match the certificate %s: %s",
                o->key_file, o->cert_file,
                ssl_why(why, sizeof why, "mismatch"));
        return LW_ECONFIG;
    }
    return LW_OK;
}

int lw__tlsctx_new(const struct lw_tls_opts *o, struct ssl_ctx_st **out)
{
    SSL_CTX *ctx = NULL;
    int rc = LW_ENOMEM;

    *out = NULL;
    pthread_once(&init_once, init_openssl);
    if (!init_ok)
        goto cleanup;
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        goto cleanup;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* A peer that closes without close_notify (a killed client, a server
     * restart) is a closed connection like any other, not a TLS error. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    /* Connections are long-lived and made again only after a failure: no
     * session cache (nothing resumed across a server restart). */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_verify(ctx, o->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    rc = load_trust(ctx, o);
    if (rc == LW_OK)
        rc = load_client_cert(ctx, o);
    if (rc != LW_OK)
        goto cleanup;
    *out = ctx;
    ctx = NULL;
cleanup:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return rc;
}

void lw__tlsctx_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}

#ifndef LW_TLSCTX_H
#define LW_TLSCTX_H

/* What a configuration says about TLS (rediss://), and the OpenSSL context
 * built from it once, when the configuration is loaded: a bad file fails
 * the configuration (LW_ECONFIG) instead of every connection. */

struct ssl_ctx_st; /* OpenSSL's SSL_CTX, kept out of every includer */

/* Strings owned by the struct (lw__tls_opts_free()); NULL when not set. */
struct lw_tls_opts {
    char *ca_file;
    char *ca_dir;
    char *cert_file;
    char *key_file;
    char *server_name; /* NULL: each URL's host */
    int insecure;      /* do not verify the server's certificate */
};

void lw__tls_opts_free(struct lw_tls_opts *o);

/* The SSL_CTX for o, in *out: the CA files (or the system trust store),
 * the client certificate and key, checked against each other.  LW_OK,
 * LW_ECONFIG (logged, naming the file) or LW_ENOMEM; *out is NULL then. */
int lw__tlsctx_new(const struct lw_tls_opts *o, struct ssl_ctx_st **out);

/* Drop the configuration's reference (connections hold their own). */
void lw__tlsctx_free(struct ssl_ctx_st *ctx);

#endif

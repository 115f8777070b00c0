#ifndef LW_TLS_H
#define LW_TLS_H

#include <stddef.h>

/*
 * TLS over one connection's socket: the transport conn.c uses instead of
 * send()/read() for rediss:// endpoints.  Every call waits with poll() up
 * to the timeout it is given (a read for a reply blocks in recv() under the
 * socket's receive timeout instead), so the connection's timeouts mean
 * what they mean without TLS.
 * Nothing is ever written but what a call is asked to write: freeing a
 * session (in a forked child too) sends no close_notify.
 */
struct lw_tls;
struct lw_tls_opts;
struct ssl_ctx_st;

/* Handshake on the connected socket fd within timeout_ms, verifying the
 * server as host (or opts->server_name) unless opts->insecure.  LW_OK with
 * *out; LW_ETLS (handshake failed, certificate not trusted, expired, wrong
 * name, a plain Redis on the port: why in err), LW_EREDIS (I/O error,
 * timeout, closed) or LW_ENOMEM.  A handshake that heard nothing by then
 * may take up to a quarter of timeout_ms (250 ms at most) more, to tell a
 * plain Redis from a server that hangs. */
int lw__tls_open(struct lw_tls **out, struct ssl_ctx_st *ctx, int fd,
                 const char *host, const struct lw_tls_opts *opts,
                 int timeout_ms, char *err, size_t errlen);

/* Free the session (not the socket, which its owner closes).  NULL: no-op. */
void lw__tls_free(struct lw_tls *t);

/* Write all n bytes, waiting up to timeout_ms whenever the socket is full.
 * 0, or -1 (lw__tls_error() says why). */
int lw__tls_write(struct lw_tls *t, const char *p, size_t n, int timeout_ms);

/* Up to cap bytes of what the server sent.  timeout_ms > 0: wait that long
 * for the first byte; 0: only what has already arrived (after poll() said
 * readable).  Returns the count, 0 when nothing is there yet (timeout_ms 0
 * only), or -1 (lw__tls_error() says why: a timeout reads as EAGAIN's text,
 * like a socket's own receive timeout).  Bytes the session holds are
 * returned by the next call before it waits: poll() cannot see them, so a
 * caller that polls the socket reads with timeout 0 until it gets 0. */
long lw__tls_read(struct lw_tls *t, char *buf, size_t cap, int timeout_ms);

/* Why the last call failed: LW_EREDIS (I/O error, timeout, closed) or
 * LW_ETLS (a TLS alert or protocol error, e.g. a server that requires a
 * client certificate refusing it), with a text in *what. */
int lw__tls_error(const struct lw_tls *t, const char **what);

#endif

/* TLS sessions over lockweave's own sockets (see tls.h), with OpenSSL. */
#include "net/tls.h"

#include <lockweave.h>
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/fork.h"
#include "base/tlsctx.h"

/* What a handshake answered by a plain Redis fails with. */
#define PLAIN_REDIS                                                            \
    "TLS handshake: the server answered in Redis's plain protocol: this port " \
    "does not speak TLS (use redis://, or the server's tls-port)"

struct lw_tls {
    SSL *ssl;
    int fd;
    int block;      /* the next recv() may block (see lw__tls_read()) */
    int asked_cert; /* the server sent a CertificateRequest */
    int got_data;   /* a read returned application data */
    int heard;      /* the server sent a byte (during the handshake) */
    char first;     /* its first byte */
    int timed_out;  /* the last failure was a timeout */
    int rc;         /* the last failure: LW_EREDIS or LW_ETLS */
    char what[256]; /* and what it was */
};

/*
 * The session reads and writes the socket through this BIO rather than
 * OpenSSL's socket BIO, which write()s: a server that hung up must cost an
 * EPIPE, not a SIGPIPE (conn.c's send() rule), so writes go out with
 * MSG_NOSIGNAL.  Every call is MSG_DONTWAIT, and the caller polls, but for
 * a read with t->block set.  The session is the BIO's data; closing the
 * socket is the connection's.
 */
static BIO_METHOD *sock_method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

static int sock_write(BIO *b, const char *p, int n)
{
    const struct lw_tls *t = BIO_get_data(b);
    ssize_t k;

    BIO_clear_retry_flags(b);
    do
        k = send(t->fd, p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_write(b);
    return (int)k;
}

static int sock_read(BIO *b, char *p, int n)
{
    struct lw_tls *t = BIO_get_data(b);
    ssize_t k;

    BIO_clear_retry_flags(b);
    do
        k = recv(t->fd, p, (size_t)n, t->block ? 0 : MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read(b);
    if (k > 0 && !t->heard) {
        t->heard = 1;
        t->first = *p;
    }
    return (int)k;
}

static long sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0; /* writes are never buffered */
}

static int sock_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

/* Made once and kept for the process's life (a BIO_METHOD cannot be
 * unregistered while a session may use it). */
static void make_method(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "lockweave socket");

    if (m != NULL && (BIO_meth_set_write(m, sock_write) != 1 ||
                      BIO_meth_set_read(m, sock_read) != 1 ||
                      BIO_meth_set_ctrl(m, sock_ctrl) != 1 ||
                      BIO_meth_set_create(m, sock_create) != 1)) {
        BIO_meth_free(m);
        m = NULL;
    }
    sock_method = m;
}

static int fail(struct lw_tls *t, int rc, const char *what)
{
    t->rc = rc;
    t->timed_out = 0;
    snprintf(t->what, sizeof t->what, "%s", what);
    return -1;
}

/* Wait until fd is ready for events or deadline_ms passes: 1, 0 (timed
 * out) or -1 (errno). */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int64_t left = deadline_ms - lw__now_ms();
        int n;

        if (left < 0)
            left = 0;
        n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        return n;
    }
}

/* ret from an SSL call that failed for another reason than "not ready":
 * record why.  Called with errno as the call left it. */
static int ssl_failed(struct lw_tls *t, int ret, const char *op)
{
    int e = SSL_get_error(t->ssl, ret), saved = errno;
    unsigned long code = ERR_peek_last_error();
    long v = SSL_get_verify_result(t->ssl);
    char buf[160], why[256];

    if ((e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) && code == 0 &&
        t->asked_cert && !t->got_data && SSL_is_init_finished(t->ssl)) {
        /* TLS 1.3 finishes the client's handshake before the server has
         * checked its certificate; a refusal is an alert, which the reset
         * that follows often destroys (the server closes with our first
         * command unread).  A server that asked for a certificate and then
         * hangs up before any reply has, as far as can be known, refused
         * it. */
        snprintf(why, sizeof why,
                 "TLS: the server asked for a client certificate and hung up "
                 "before any reply (%s): certificate missing or refused",
                 e == SSL_ERROR_SYSCALL && saved != 0 ? strerror(saved)
                                                      : "connection closed");
        t->rc = LW_ETLS;
    } else if (!SSL_is_init_finished(t->ssl) && t->heard &&
               (t->first == '-' || t->first == '+')) {
        /* A TLS record starts with its type, 20 to 24; a RESP reply with
         * '-' or '+': a plain Redis, or a proxy in front of one, answered
         * (see plain_redis() for why Redis itself seldom does). */
        snprintf(why, sizeof why, "%s", PLAIN_REDIS);
        t->rc = LW_ETLS;
    } else if (e == SSL_ERROR_ZERO_RETURN ||
               (e == SSL_ERROR_SYSCALL && code == 0 && saved == 0)) {
        snprintf(why, sizeof why, "connection closed");
        t->rc = LW_EREDIS;
    } else if (e == SSL_ERROR_SYSCALL && code == 0) {
        snprintf(why, sizeof why, "%s", strerror(saved));
        t->rc = LW_EREDIS;
    } else if (v != X509_V_OK && !SSL_is_init_finished(t->ssl) &&
               (SSL_get_verify_mode(t->ssl) & SSL_VERIFY_PEER)) {
        /* The handshake stopped at the certificate: say which check. */
        snprintf(why, sizeof why, "TLS %s: server certificate not trusted: %s",
                 op, X509_verify_cert_error_string(v));
        t->rc = LW_ETLS;
    } else {
        ERR_error_string_n(code, buf, sizeof buf);
        snprintf(why, sizeof why, "TLS %s failed: %s", op,
                 code != 0 ? buf : "protocol error");
        t->rc = LW_ETLS;
    }
    ERR_clear_error();
    return fail(t, t->rc, why);
}

/* Run one SSL call to completion: retried whenever the socket becomes ready
 * for what it wants, until deadline_ms.  >0 as the call returns it; 0 when
 * deadline_ms < 0 (no waiting) and it would have to wait; or -1. */
static int drive(struct lw_tls *t, int (*call)(struct lw_tls *, void *),
                 void *arg, const char *op, int64_t deadline_ms)
{
    for (;;) {
        int ret, e;

        /* SSL_get_error() reads this thread's error queue, which must hold
         * nothing from before the call.  It is almost always empty, and
         * emptying an empty one is not free in OpenSSL 3 (ERR_clear_error()
         * walks and frees every slot: some 800 instructions, twice per
         * round trip), so look first. */
        if (ERR_peek_error() != 0)
            ERR_clear_error();
        errno = 0;
        ret = call(t, arg);
        if (ret > 0)
            return ret;
        e = SSL_get_error(t->ssl, ret);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return ssl_failed(t, ret, op);
        if (deadline_ms < 0)
            return 0; /* only what has already arrived */
        switch (wait_fd(t->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
                        deadline_ms)) {
        case 0: {
            char why[64];
            /* lw__conn_io_error() words EAGAIN as the command timeout. */
            snprintf(why, sizeof why, "TLS %s timed out", op);
            fail(t, LW_EREDIS,
                 strcmp(op, "read") == 0 ? strerror(EAGAIN) : why);
            t->timed_out = 1;
            return -1;
        }
        case -1:
            return fail(t, LW_EREDIS, strerror(errno));
        }
    }
}

/* Notes a CertificateRequest among the server's handshake messages. */
static void on_message(int write_p, int version, int content_type,
                       const void *buf, size_t len, SSL *ssl, void *arg)
{
    struct lw_tls *t = arg;

    (void)version;
    (void)ssl;
    if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
        ((const unsigned char *)buf)[0] == SSL3_MT_CERTIFICATE_REQUEST)
        t->asked_cert = 1;
}

/*
 * Handshake steps run one at a time in the process: OpenSSL 3.0's
 * certificate verification reads names it caches in the SSL_CTX's
 * certificate store without the store's lock, while another handshake
 * writes them under it.  A step never waits for the network (the socket is
 * read and written with MSG_DONTWAIT, and drive() polls outside it), so
 * this costs CPU time only, and only when a connection is made.
 */
static pthread_mutex_t handshake_mu = PTHREAD_MUTEX_INITIALIZER;

static int do_connect(struct lw_tls *t, void *arg)
{
    int ret;

    (void)arg;
    pthread_mutex_lock(&handshake_mu);
    ret = SSL_connect(t->ssl);
    pthread_mutex_unlock(&handshake_mu);
    return ret;
}

/* Check the server's certificate against name: an IP address (connecting
 * by address, no LOCKWEAVE_TLS_SERVER_NAME) must be in it as one; a host
 * name is also sent as SNI. */
static int set_name(SSL *ssl, const char *name, int verify)
{
    unsigned char addr[16];
    int ip = inet_pton(AF_INET, name, addr) == 1 ||
             inet_pton(AF_INET6, name, addr) == 1;

    if (!ip && SSL_set_tlsext_host_name(ssl, name) != 1)
        return -1;
    if (!verify)
        return 0;
    if (ip)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
                   ? 0
                   : -1;
    return SSL_set1_host(ssl, name) == 1 ? 0 : -1;
}

/*
 * A handshake that heard nothing by its deadline: a plain (non-TLS) Redis
 * port, or a server that hangs?  A plain Redis says nothing to a TLS
 * hello: it reads bytes that do not start with '*' as an inline command
 * and looks for its newline with strchr(), which stops at the hello's
 * first zero byte, so it waits for more.  Past 64 KiB it gives up with an
 * error reply ("-ERR Protocol error: too big inline request"): send that
 * much and see, for up to wait_ms more, on a connection that has failed
 * anyway.  1 when a plain Redis answered.
 */
static int plain_redis(int fd, int wait_ms)
{
    static const char filler[64 * 1024 + 1]; /* zeros: never a newline */
    int64_t deadline_ms = lw__now_ms() + wait_ms;
    size_t sent = 0;
    char reply[8];
    ssize_t k;

    while (sent < sizeof filler) {
        k = send(fd, filler + sent, sizeof filler - sent,
                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0)
            sent += (size_t)k;
        else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                 errno != EINTR)
            return 0;
        else if (k < 0 && errno != EINTR &&
                 wait_fd(fd, POLLOUT, deadline_ms) <= 0)
            return 0;
    }
    if (wait_fd(fd, POLLIN, deadline_ms) <= 0)
        return 0;
    do
        k = recv(fd, reply, sizeof reply, MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    return k > 0 && reply[0] == '-';
}

int lw__tls_open(struct lw_tls **out, struct ssl_ctx_st *ctx, int fd,
                 const char *host, const struct lw_tls_opts *opts,
                 int timeout_ms, char *err, size_t errlen)
{
    const char *name = opts->server_name != NULL ? opts->server_name : host;
    struct lw_tls *t = calloc(1, sizeof *t);
    BIO *bio = NULL;
    int rc = LW_ENOMEM;

    *out = NULL;
    snprintf(err, errlen, "out of memory");
    pthread_once(&method_once, make_method);
    lw__fork_register_mutex(&handshake_mu); /* a leaf: OpenSSL's own inside */
    if (t == NULL || sock_method == NULL)
        goto cleanup;
    t->fd = fd;
    ERR_clear_error();
    if ((t->ssl = SSL_new(ctx)) == NULL || (bio = BIO_new(sock_method)) == NULL)
        goto cleanup;
    BIO_set_data(bio, t);
    SSL_set_bio(t->ssl, bio, bio); /* the session owns the BIO from here */
    /* Read whole records, and what follows them, in one recv(): not a
     * header and then a body.  Draining reads until the socket is empty
     * (lw__tls_read() with timeout 0) still leaves nothing buffered. */
    SSL_set_read_ahead(t->ssl, 1);
    SSL_set_msg_callback(t->ssl, on_message);
    SSL_set_msg_callback_arg(t->ssl, t);
    if (set_name(t->ssl, name, !opts->insecure) != 0) {
        snprintf(err, errlen, "TLS: bad server name \"%.64s\"", name);
        rc = LW_ECONFIG;
        goto cleanup;
    }
    if (drive(t, do_connect, NULL, "handshake", lw__now_ms() + timeout_ms) <
        0) {
        if (t->timed_out && !t->heard &&
            plain_redis(fd, timeout_ms / 4 > 250 ? 250 : timeout_ms / 4 + 1))
            fail(t, LW_ETLS, PLAIN_REDIS);
        snprintf(err, errlen, "%s", t->what);
        rc = t->rc;
        goto cleanup;
    }
    /* A CertificateRequest comes only during the handshake (no
     * post-handshake authentication is offered): stop watching, or OpenSSL
     * calls on_message() twice for every record of every section. */
    SSL_set_msg_callback(t->ssl, NULL);
    *out = t;
    t = NULL;
    rc = LW_OK;
cleanup:
    ERR_clear_error();
    lw__tls_free(t);
    return rc;
}

void lw__tls_free(struct lw_tls *t)
{
    if (t == NULL)
        return;
    /* No SSL_shutdown(): its close_notify would be written on a socket
     * that, in a forked child, is the parent's session too. */
    SSL_free(t->ssl);
    free(t);
}

struct span {
    const char *p;
    int n;
};

static int do_write(struct lw_tls *t, void *arg)
{
    struct span *s = arg;
    return SSL_write(t->ssl, s->p, s->n);
}

int lw__tls_write(struct lw_tls *t, const char *p, size_t n, int timeout_ms)
{
    int64_t deadline_ms = lw__now_ms() + timeout_ms;

    /* Without SSL_MODE_ENABLE_PARTIAL_WRITE a write completes whole or is
     * retried with the same arguments, which drive() does. */
    while (n > 0) {
        struct span s = {p, n > (1u << 30) ? 1 << 30 : (int)n};
        if (drive(t, do_write, &s, "write", deadline_ms) < 0)
            return -1;
        p += s.n;
        n -= (size_t)s.n;
    }
    return 0;
}

struct sink {
    char *buf;
    int cap;
};

static int do_read(struct lw_tls *t, void *arg)
{
    struct sink *s = arg;
    int n = SSL_read(t->ssl, s->buf, s->cap);

    t->got_data |= n > 0;
    return n;
}

long lw__tls_read(struct lw_tls *t, char *buf, size_t cap, int timeout_ms)
{
    struct sink s = {buf, cap > INT32_MAX ? INT32_MAX : (int)cap};
    int64_t deadline_ms = timeout_ms > 0 ? lw__now_ms() + timeout_ms : -1;

    long n;

    /* Waiting for a reply with nothing buffered in the session: block in
     * recv() itself, bounded by the socket's receive timeout (the command
     * timeout, which open.c sets), as a plain connection's read() does:
     * one system call per reply, not a recv() that finds nothing, a poll()
     * and another recv().  Otherwise SSL_read() comes first and poll() only
     * when it wants more: bytes the session holds are never left waiting
     * on a socket that is quiet. */
    t->block = deadline_ms >= 0 && !SSL_has_pending(t->ssl);
    n = drive(t, do_read, &s, "read", deadline_ms);
    t->block = 0;
    return n;
}

int lw__tls_error(const struct lw_tls *t, const char **what)
{
    if (what != NULL)
        *what = t->what;
    return t->rc;
}

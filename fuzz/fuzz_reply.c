/*
 * Fuzz how the runtime handles what Redis sends back: every reply the
 * connection code, acquire (the SET/INCR pipeline, the queueing script
 * and the BLPOP on the waiter's mailbox), release and the watchdog's batched
 * renewals make sense of.
 *
 * The seam is the socket, not a function: a fake Redis (a unix socket and a
 * loopback TCP port) answers each connection with bytes from the input, and
 * the runtime is driven through its public API (lw_configure, lw_guard_*,
 * lw_shutdown), on a thread of its own per input.
 * The interpreting code is all static functions in files others keep
 * changing; at the socket the target reaches every one of them, in the
 * order a real run calls them, and needs no edit to the runtime and no
 * knowledge of its internals to keep compiling.  hiredis does the RESP
 * decoding on the way, as in production.
 *
 * Input: two option bytes (see read_plan(): wait, lease, re-entry, body
 * time, whether the server hangs up after its replies, and the topology —
 * one server, three Redlock masters or a Redis Cluster seed), then the byte
 * streams of the connections in the order they are opened (the guarded
 * thread's first; then, as it happens, the other masters', the cluster
 * nodes' and the watchdog's), separated by "|||"; "%PORT%" in them stands
 * for the fake server's TCP port.  Each stream starts with the answers to
 * what every new connection says first (net/handshake.c): CLIENT SETNAME,
 * INFO memory and the ACL check (the seeds answer "+OK", "+" and "*0":
 * named, no policy, nothing refused).  The fake server
 * writes a connection's whole stream at once and half-closes, so the runtime
 * reads replies, then EOF, instead of waiting for a timeout; short timeouts
 * (lw_config) bound the rest.
 *
 * A waiter's wake-up is part of the guarded thread's own stream (in a
 * cluster, its connection to the key's node): with the lock busy, the
 * queueing script's reply ({-1 - TTL, entry score}) is followed by the
 * reply to the BLPOP on the waiter's mailbox: nil (timed out), an error
 * (the rest of the wait polls), or [mailbox, message] with "w" (compete
 * again) or "g<fence> <entry score>" (a hand-off).  A grant names no lock
 * token (random, so out of an input's reach), only the queue entry, and the
 * input chose that in its queueing reply: a grant naming it is taken as it
 * is, with no round trip (seeds mailbox_*).
 *
 * With FUZZ_REPLY_TLS=1 every endpoint is rediss:// (the single server on
 * TCP too) and the fake server speaks TLS (a self-signed certificate made
 * at start; the runtime does not verify it): the same streams then reach
 * hiredis's reader through the TLS read path, written in records of
 * 1 byte to 16 kB, so replies arrive split across records, several in
 * one, and more than one read's worth decrypted at once.
 *
 * Each input runs on a new thread, so no thread-local state (the per-thread
 * connection, acquire's memory of a key it just queued for, which sends the
 * next acquire of that key straight to the queueing script) carries over
 * from one input to the next: an input does the same alone as in a run of
 * the corpus, and a saved crash replays as it was found.
 */
#include <lockweave.h>

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXSEG 8
#define SEP    "|||"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    const uint8_t *seg[MAXSEG];
    size_t seglen[MAXSEG];
    int nseg;
    int accepted;     /* connections of the current input so far */
    int hang_up;      /* see struct conn_arg */
    int active;       /* handler threads still running */
    int listen_fd[4]; /* unix socket, TCP on 127.0.0.1, .2 and .3 (one port:
                         Redlock's masters must be distinct addresses) */
    int tcp_port;
    char dir[64], path[108];
    char url[4][160]; /* per topology, see read_plan() */
    SSL_CTX *tls;     /* FUZZ_REPLY_TLS=1: TCP connections speak TLS */
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

struct conn_arg {
    int fd, index;
    int tls;     /* a TCP connection with fk.tls set */
    int hang_up; /* close at once instead of reading what the client sends */
    uint8_t *bytes;
    size_t len;
};

static int verbose; /* FUZZ_REPLY_VERBOSE=1: log, results, commands seen */

/* What the client sent, one line per read, for writing seeds by hand. */
static void show_sent(int index, const char *p, ssize_t n)
{
    fprintf(stderr, "conn %d <- ", index);
    for (ssize_t i = 0; i < n && i < 300; i++)
        if (p[i] == '\r')
            fputs("\\r", stderr);
        else if (p[i] == '\n')
            fputs("\\n", stderr);
        else
            fputc(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.', stderr);
    fputs(n > 300 ? "...\n" : "\n", stderr);
}

/* serve_conn() over TLS: the stream in records of varying size, then
 * close_notify (EOF) or a hang-up, then whatever the client sends. */
static void serve_tls(struct conn_arg *c)
{
    static const int sizes[] = {1, 3, 17, 512, 16384, 2};
    SSL *ssl = SSL_new(fk.tls);
    char sink[4096];
    size_t off = 0;
    int k = 0, n;

    if (ssl == NULL || SSL_set_fd(ssl, c->fd) != 1 || SSL_accept(ssl) != 1)
        goto done;
    while (off < c->len) {
        size_t chunk = (size_t)sizes[k++ % 6];
        if (chunk > c->len - off)
            chunk = c->len - off;
        if (SSL_write(ssl, c->bytes + off, (int)chunk) <= 0)
            goto done;
        off += chunk;
    }
    if (c->hang_up)
        goto done;
    SSL_shutdown(ssl);
    shutdown(c->fd, SHUT_WR);
    while ((n = SSL_read(ssl, sink, sizeof sink)) > 0)
        if (verbose)
            show_sent(c->index, sink, n);
done:
    SSL_free(ssl);
    close(c->fd);
    c->fd = -1;
    /* This thread's random generators and error queue, freed now: OpenSSL's
     * thread-exit handler would free them only after serve_conn() has told
     * the replay it is done, which may have ended the process by then, and
     * valgrind, which does not scan thread-local blocks, would report them
     * lost. */
    OPENSSL_thread_stop();
}

static void *serve_conn(void *p)
{
    struct conn_arg *c = p;
    char sink[4096];
    size_t off = 0;

    if (c->tls)
        serve_tls(c);

    while (c->fd >= 0 && off < c->len) {
        ssize_t n = send(c->fd, c->bytes + off, c->len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    /* EOF after the scripted replies.  Then either keep reading, so the
     * client's writes succeed, or hang up: its next write finds a closed
     * socket (EPIPE, and SIGPIPE unless the runtime prevents it). */
    if (c->fd >= 0 && c->hang_up) {
        close(c->fd);
        c->fd = -1;
    } else if (c->fd >= 0)
        shutdown(c->fd, SHUT_WR);
    for (ssize_t n; c->fd >= 0 && (n = read(c->fd, sink, sizeof sink)) > 0;)
        if (verbose)
            show_sent(c->index, sink, n);
    if (c->fd >= 0)
        close(c->fd);
    free(c->bytes);
    free(c);
    pthread_mutex_lock(&fk.mu);
    fk.active--;
    pthread_cond_broadcast(&fk.cond);
    pthread_mutex_unlock(&fk.mu);
    return NULL;
}

/* A copy of p[0..n) with every "%PORT%" replaced by the fake server's TCP
 * port: a CLUSTER SLOTS reply can then name it as a node (":%PORT%\r\n"),
 * though the port is only known at run time. */
static uint8_t *with_port(const uint8_t *p, size_t n, size_t *outlen)
{
    static const char tag[] = "%PORT%";
    char port[8];
    int plen = snprintf(port, sizeof port, "%d", fk.tcp_port);
    uint8_t *out = malloc(n + 1), *o = out; /* a port is at most 5 digits */

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n;) {
        if (n - i >= 6 && memcmp(p + i, tag, 6) == 0) {
            memcpy(o, port, (size_t)plen);
            o += plen;
            i += 6;
        } else {
            *o++ = p[i++];
        }
    }
    *outlen = (size_t)(o - out);
    return out;
}

static void *accept_loop(void *arg)
{
    sigset_t pipe;

    (void)arg;
    /* The fake server's threads (this one and the connection threads it
     * starts, which inherit the mask) write to clients that may have hung
     * up, and OpenSSL's socket BIO uses write(): their SIGPIPE stays
     * pending on them and is not a finding.  The runtime's threads do not
     * inherit this mask. */
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    for (;;) {
        struct pollfd pfd[4];
        int which = 0;
        for (int i = 0; i < 4; i++)
            pfd[i] = (struct pollfd){.fd = fk.listen_fd[i], .events = POLLIN};
        if (poll(pfd, 4, -1) < 0)
            continue;
        while (which < 3 && pfd[which].revents == 0)
            which++;
        int fd = accept(fk.listen_fd[which], NULL, NULL);
        if (fd < 0)
            continue; /* EINTR, ECONNABORTED: the client gave up */
        struct conn_arg *c = calloc(1, sizeof *c);
        pthread_t t;
        pthread_mutex_lock(&fk.mu);
        int k = fk.accepted++;
        if (c != NULL && k < fk.nseg && fk.seglen[k] > 0)
            c->bytes = with_port(fk.seg[k], fk.seglen[k], &c->len);
        fk.active++;
        pthread_mutex_unlock(&fk.mu);
        if (c == NULL) {
            close(fd);
            pthread_mutex_lock(&fk.mu);
            fk.active--;
            pthread_mutex_unlock(&fk.mu);
            continue;
        }
        c->fd = fd;
        c->tls = fk.tls != NULL && which > 0;
        c->index = k;
        c->hang_up = fk.hang_up;
        if (pthread_create(&t, NULL, serve_conn, c) != 0)
            abort();
        pthread_detach(t);
    }
}

static void log_line(int level, const char *msg, void *ud)
{
    (void)ud;
    if (verbose)
        fprintf(stderr, "lockweave[%d]: %s\n", level, msg);
}

static void remove_socket(void)
{
    unlink(fk.path);
    rmdir(fk.dir);
}

/* Options from the first two bytes: how the call is made, and the
 * topology: one server (unix socket), three Redlock masters, or a Redis
 * Cluster seed (both over TCP, every endpoint the fake server; what a
 * CLUSTER SLOTS reply names is up to the input). */
struct plan {
    uint32_t expire_ms, wait_ms;
    int32_t max_renew;
    int reenter, use_lock, body_us, wait_replicas, key, topology, hang_up;
};

static struct plan read_plan(uint8_t b0, uint8_t b1)
{
    static const uint32_t waits[] = {0, 0, 2, 6};
    static const uint32_t expires[] = {20, 60, 1000, 30000};
    static const int32_t renews[] = {-1, 0, 1, 3};
    static const int bodies[] = {0, 0, 500, 4000};
    struct plan p = {
        .wait_ms = waits[b0 & 3],
        .reenter = (b0 >> 2) & 1,
        .use_lock = (b0 >> 3) & 1,
        .body_us = bodies[(b0 >> 4) & 3],
        .wait_replicas = (b0 >> 6) & 1,
        .key = b0 >> 7,
        .expire_ms = expires[b1 & 3],
        .max_renew = renews[(b1 >> 2) & 3],
        .topology = (b1 >> 4) & 3,
        .hang_up = (b1 >> 6) & 1,
    };
    return p;
}

/* A server context with a fresh self-signed certificate for localhost;
 * aborts on failure. */
static SSL_CTX *make_server_tls(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();

    if (ctx == NULL || key == NULL || x == NULL ||
        X509_set_version(x, 2) != 1 ||
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1) != 1 ||
        X509_gmtime_adj(X509_getm_notBefore(x), 0) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(x), 86400) == NULL ||
        X509_set_pubkey(x, key) != 1 ||
        X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                   (const unsigned char *)"localhost", -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
        X509_sign(x, key, EVP_sha256()) == 0 ||
        SSL_CTX_use_certificate(ctx, x) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, key) != 1)
        abort();
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

static void on_sigpipe(int sig)
{
    (void)sig;
    static const char msg[] = "fuzz_reply: SIGPIPE reached the program\n";
    (void)!write(2, msg, sizeof msg - 1);
    abort();
}

/* The public API's documented contract, checked on every input: hostile
 * replies may make a call fail, never make it lie. */
static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_reply: contract broken: %s\n", what);
        abort();
    }
}

static void run_plan(const struct plan *p)
{
    static const char *const keys[] = {"fz", "fz:{tag}:1"};
    lw_lock_opts o = {.expire_ms = p->expire_ms,
                      .wait_ms = p->wait_ms,
                      .max_renew = p->max_renew};
    lw_guard g, inner;
    lw_config cfg;
    const char *key = keys[p->key];

    lw_config_init(&cfg);
    cfg.redis_url = fk.url[p->topology];
    /* Short: a slot map may name hosts that never answer. */
    cfg.connect_timeout_ms = 100;
    cfg.command_timeout_ms = 50;
    cfg.wait_replicas = p->wait_replicas;
    cfg.wait_timeout_ms = 5;
    cfg.tls_insecure = 1; /* the fake server's certificate is its own */
    if (lw_configure(&cfg) != LW_OK)
        abort();

    int rc, lrc;
    if (p->use_lock) {
        rc = lw_lock(&g, key, strlen(key), &o);
    } else {
        lw_guard_init(&g, &o);
        lw_guard_key_str(&g, key);
        rc = lw_guard_enter(&g);
    }
    if (rc != LW_OK) {
        expect(rc < 0, "enter returns LW_OK or a negative code");
        expect(lw_last_error() == rc,
               "a failed enter's code is lw_last_error()");
        expect(lw_fence() == 0, "no fence after a failed enter");
    } else {
        uint64_t fence = lw_fence();
        /* Redlock's masters share no order: its fence is always 0. */
        expect(p->topology == 2 ? fence == 0 : fence > 0,
               "a held lock has a fence (0 with Redlock)");
        if (p->reenter) {
            lw_guard_init(&inner, &o);
            lw_guard_key_bytes(&inner, key, strlen(key));
            if (lw_guard_enter(&inner) == LW_OK) {
                expect(lw_fence() == fence,
                       "a re-entered lock keeps its fence");
                lrc = lw_guard_leave(&inner);
                expect(lrc == LW_OK || lrc == LW_ELOST,
                       "leave returns LW_OK or LW_ELOST");
                expect(lw_last_error() == lrc, "leave records its code");
                expect(lw_fence() == fence, "the outer lock's fence is back");
            }
        }
        if (p->body_us) {
            struct timespec ts = {0, p->body_us * 1000L};
            nanosleep(&ts, NULL);
        }
        (void)lw_still_held();
        lrc = lw_guard_leave(&g);
        expect(lrc == LW_OK || lrc == LW_ELOST,
               "leave returns LW_OK or LW_ELOST");
        expect(lw_last_error() == lrc, "leave records its code");
        expect(lw_fence() == 0, "no fence outside a section");
    }
    if (verbose)
        fprintf(stderr, "fuzz_reply: enter %s, last error %s\n",
                lw_strerror(rc), lw_strerror(lw_last_error()));
    lw_shutdown();
}

static void *plan_thread(void *p)
{
    run_plan(p);
    return NULL;
}

/* Run one input: hand out its streams, make the call, wait until every
 * connection it opened is closed again (lw_shutdown closes them all), so
 * the next input starts from the same state. */
static void run_input(const struct plan *p, const uint8_t *d, size_t n)
{
    pthread_mutex_lock(&fk.mu);
    fk.nseg = 0;
    fk.accepted = 0;
    fk.hang_up = p->hang_up;
    while (fk.nseg < MAXSEG) {
        const uint8_t *s = memmem(d, n, SEP, 3);
        size_t len = s ? (size_t)(s - d) : n;
        fk.seg[fk.nseg] = d;
        fk.seglen[fk.nseg] = len;
        fk.nseg++;
        if (s == NULL)
            break;
        d += len + 3;
        n -= len + 3;
    }
    pthread_mutex_unlock(&fk.mu);

    /* On a new thread: see the top of the file. */
    struct plan copy = *p;
    pthread_t t;
    if (pthread_create(&t, NULL, plan_thread, &copy) != 0 ||
        pthread_join(t, NULL) != 0)
        abort();

    pthread_mutex_lock(&fk.mu);
    while (fk.active > 0)
        pthread_cond_wait(&fk.cond, &fk.mu);
    fk.nseg = 0;
    pthread_mutex_unlock(&fk.mu);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    pthread_t t;

    /* The runtime must never raise SIGPIPE in the program (a server that
     * hung up would kill it): make one a finding, input saved. */
    signal(SIGPIPE, on_sigpipe);
    verbose = getenv("FUZZ_REPLY_VERBOSE") != NULL;
    lw_set_logger(log_line, NULL, verbose ? LW_LOG_DEBUG : LW_LOG_OFF);
    snprintf(fk.dir, sizeof fk.dir, "/tmp/lw-fuzz-reply-XXXXXX");
    if (mkdtemp(fk.dir) == NULL)
        abort();
    snprintf(fk.path, sizeof fk.path, "%s/redis.sock", fk.dir);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", fk.path);
    fk.listen_fd[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fk.listen_fd[0] < 0 ||
        bind(fk.listen_fd[0], (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fk.listen_fd[0], 64) != 0)
        abort();
    struct sockaddr_in in = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t inlen = sizeof in;
    fk.listen_fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fk.listen_fd[1] < 0 ||
        bind(fk.listen_fd[1], (struct sockaddr *)&in, sizeof in) != 0 ||
        listen(fk.listen_fd[1], 64) != 0 ||
        getsockname(fk.listen_fd[1], (struct sockaddr *)&in, &inlen) != 0)
        abort();
    fk.tcp_port = ntohs(in.sin_port);
    for (int i = 2; i < 4; i++) {
        in.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)i - 1);
        fk.listen_fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fk.listen_fd[i] < 0 ||
            bind(fk.listen_fd[i], (struct sockaddr *)&in, sizeof in) != 0 ||
            listen(fk.listen_fd[i], 64) != 0)
            abort();
    }
    /* One server on the unix socket, or over TLS on TCP (no TLS there). */
    if (getenv("FUZZ_REPLY_TLS") != NULL)
        fk.tls = make_server_tls();
    const char *s = fk.tls ? "s" : "";
    if (fk.tls)
        snprintf(fk.url[0], sizeof fk.url[0], "rediss://127.0.0.1:%d",
                 fk.tcp_port);
    else
        snprintf(fk.url[0], sizeof fk.url[0], "unix://%s", fk.path);
    snprintf(fk.url[1], sizeof fk.url[1], "%s", fk.url[0]);
    snprintf(fk.url[2], sizeof fk.url[2],
             "redis%s://127.0.0.1:%d,redis%s://127.0.0.2:%d,"
             "redis%s://127.0.0.3:%d",
             s, fk.tcp_port, s, fk.tcp_port, s, fk.tcp_port);
    snprintf(fk.url[3], sizeof fk.url[3], "redis%s+cluster://127.0.0.1:%d", s,
             fk.tcp_port);
    atexit(remove_socket);
    if (pthread_create(&t, NULL, accept_loop, NULL) != 0)
        abort();
    pthread_detach(t);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 1 << 16)
        return 0;
    struct plan p = read_plan(data[0], data[1]);
    run_input(&p, data + 2, size - 2);
    return 0;
}

/* getaddrinfo-free connect and MSG_NOSIGNAL are POSIX/Linux, not C11. */
#define _GNU_SOURCE

#include "httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define RESP_MAX (1u << 20) /* a reply larger than this is not ours */

void httpc_init(struct httpc *c, const char *host, int port, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
}

void httpc_close(struct httpc *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

static void drop_connection(struct httpc *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->len = 0;
}

static int connect_to(struct httpc *c)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    if (inet_pton(AF_INET, c->host, &sa.sin_addr) != 1) {
        snprintf(c->err, sizeof c->err, "bad IPv4 address %s", c->host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(c->err, sizeof c->err, "socket: %s", strerror(errno));
        return -1;
    }
    struct timeval tv = {c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    /* Small request, small reply, one at a time: Nagle would only add
     * latency. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        snprintf(c->err, sizeof c->err, "connect %s:%d: %s", c->host, c->port,
                 strerror(errno));
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->len = 0;
    return 0;
}

static int send_all(struct httpc *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(c->err, sizeof c->err, "send: %s",
                     w < 0 ? strerror(errno) : "connection closed");
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read more bytes into buf; 0, or -1 on error/EOF/timeout. */
static int recv_more(struct httpc *c)
{
    if (c->len + 4096 + 1 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8192;
        if (cap > RESP_MAX + 4096 + 1) {
            snprintf(c->err, sizeof c->err, "reply too large");
            return -1;
        }
        char *b = realloc(c->buf, cap);
        if (!b) {
            snprintf(c->err, sizeof c->err, "out of memory");
            return -1;
        }
        c->buf = b;
        c->cap = cap;
    }
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(c->err, sizeof c->err, "receive: %s",
                     r == 0 ? "connection closed by the server"
                     : (errno == EAGAIN || errno == EWOULDBLOCK)
                         ? "timed out"
                         : strerror(errno));
            return -1;
        }
        c->len += (size_t)r;
        c->buf[c->len] = '\0';
        return 0;
    }
}

/* Value of header name in the header block [hdr, end), or NULL. */
static const char *find_header(const char *hdr, const char *end,
                               const char *name, size_t *vlen)
{
    size_t n = strlen(name);
    const char *line = strstr(hdr, "\r\n");
    while (line && line + 2 < end) {
        line += 2;
        const char *eol = strstr(line, "\r\n");
        if (!eol || eol > end)
            break;
        if ((size_t)(eol - line) > n && line[n] == ':' &&
            strncasecmp(line, name, n) == 0) {
            const char *v = line + n + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            *vlen = (size_t)(eol - v);
            return v;
        }
        line = eol;
    }
    return NULL;
}

int httpc_request(struct httpc *c, const char *method, const char *target,
                  const char *body, size_t body_len, struct httpc_resp *r)
{
    return httpc_request_headers(c, method, target, NULL, body, body_len, r);
}

int httpc_reply_header(const struct httpc *c, const char *name, char *out,
                       size_t outlen)
{
    size_t vlen = 0;
    const char *v = c->buf && c->head_len
                        ? find_header(c->buf, c->buf + c->head_len, name, &vlen)
                        : NULL;
    if (!v)
        return 0;
    snprintf(out, outlen, "%.*s", (int)vlen, v);
    return 1;
}

int httpc_request_headers(struct httpc *c, const char *method,
                          const char *target, const char *headers,
                          const char *body, size_t body_len,
                          struct httpc_resp *r)
{
    char head[1024];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: %s:%d\r\n"
                      "Content-Length: %zu\r\n%s%s\r\n",
                      method, target, c->host, c->port, body_len,
                      body_len ? "Content-Type: application/json\r\n" : "",
                      headers ? headers : "");
    if (hn < 0 || (size_t)hn >= sizeof head) {
        snprintf(c->err, sizeof c->err, "request target or headers too long");
        return -1;
    }
    if (c->fd < 0 && connect_to(c) != 0)
        return -1;
    c->len = 0;
    c->head_len = 0;
    if (c->buf)
        c->buf[0] = '\0'; /* the last reply's text must not be parsed again */
    if (send_all(c, head, (size_t)hn) != 0 ||
        (body_len && send_all(c, body, body_len) != 0))
        goto fail;

    char *hend;
    while (!c->buf || !(hend = strstr(c->buf, "\r\n\r\n")))
        if (recv_more(c) != 0)
            goto fail;
    hend += 2; /* keep the last header's CRLF inside the block */

    int status = 0;
    if (sscanf(c->buf, "HTTP/1.%*d %d", &status) != 1 || status < 100) {
        snprintf(c->err, sizeof c->err, "bad status line");
        goto fail;
    }
    size_t vlen = 0;
    size_t clen = 0;
    const char *v = find_header(c->buf, hend, "Content-Length", &vlen);
    if (v)
        clen = (size_t)strtoul(v, NULL, 10);
    else if (find_header(c->buf, hend, "Transfer-Encoding", &vlen)) {
        snprintf(c->err, sizeof c->err, "chunked replies are not supported");
        goto fail;
    }
    if (strcmp(method, "HEAD") == 0)
        clen = 0;
    if (clen > RESP_MAX) {
        snprintf(c->err, sizeof c->err, "reply too large");
        goto fail;
    }
    size_t body_off = (size_t)(hend + 2 - c->buf);
    int closing = 0;
    v = find_header(c->buf, hend, "Connection", &vlen);
    if (v && vlen == 5 && strncasecmp(v, "close", 5) == 0)
        closing = 1;
    while (c->len < body_off + clen)
        if (recv_more(c) != 0)
            goto fail;
    c->buf[body_off + clen] = '\0';
    c->head_len = (size_t)(hend - c->buf);
    r->status = status;
    r->body = c->buf + body_off;
    r->body_len = clen;
    if (closing) {
        /* The reply stays readable in buf; only the socket goes. */
        close(c->fd);
        c->fd = -1;
    }
    return 0;
fail:
    drop_connection(c);
    return -1;
}

int httpc_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
        return -1;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (int)p;
    return 0;
}

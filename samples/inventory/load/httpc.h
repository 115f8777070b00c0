/*
 * A minimal HTTP/1.1 client over one keep-alive TCP connection: enough to
 * drive the inventory service (Content-Length bodies, no chunking, no TLS).
 * One client per thread.
 */
#ifndef INV_HTTPC_H
#define INV_HTTPC_H

#include <stddef.h>

struct httpc {
    int fd; /* -1 until the first request */
    char host[64];
    int port;
    int timeout_ms; /* per send/receive */
    char *buf;      /* received bytes: headers, then body */
    size_t len, cap;
    size_t head_len; /* the last reply's status line and headers in buf */
    char err[160];   /* why the last request failed */
};

struct httpc_resp {
    int status;
    const char *body; /* NUL-terminated, valid until the next request */
    size_t body_len;
};

/* Prepare a client for host:port (IPv4 literal).  No I/O yet. */
void httpc_init(struct httpc *c, const char *host, int port, int timeout_ms);

/* Send one request and read its reply, (re)connecting when needed.  0 on an
 * HTTP reply of any status; -1 on a connection or protocol error (c->err).
 * The request is never retried: a deduction is not idempotent. */
int httpc_request(struct httpc *c, const char *method, const char *target,
                  const char *body, size_t body_len, struct httpc_resp *r);

/* httpc_request() with more request headers: "Name: value\r\n" lines, or
 * NULL. */
int httpc_request_headers(struct httpc *c, const char *method,
                          const char *target, const char *headers,
                          const char *body, size_t body_len,
                          struct httpc_resp *r);

/* A header of the last reply (name case-insensitive): 1 and its value
 * copied to out (NUL-terminated, cut to outlen), or 0 when it has none. */
int httpc_reply_header(const struct httpc *c, const char *name, char *out,
                       size_t outlen);

void httpc_close(struct httpc *c);

/* Parse "host:port" into host (size hostlen) and *port.  0 or -1. */
int httpc_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

#endif /* INV_HTTPC_H */

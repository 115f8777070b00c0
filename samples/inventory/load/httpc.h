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
    char err[160]; /* why the last request failed */
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

void httpc_close(struct httpc *c);

/* Parse "host:port" into host (size hostlen) and *port.  0 or -1. */
int httpc_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

#endif /* INV_HTTPC_H */

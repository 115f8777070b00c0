/* The HTTP server: libmicrohttpd, one thread per connection (a deduction may
 * wait seconds for the lock; it must not hold up other connections). */
#ifndef INV_HTTP_H
#define INV_HTTP_H

struct inv_service;
struct inv_http;

/* Listen on addr:port (IPv4 dotted; port 0 picks a free one).  NULL on
 * failure (printed).  svc must outlive the server. */
struct inv_http *inv_http_start(const struct inv_service *svc, const char *addr,
                                int port);

/* The port actually bound. */
int inv_http_port(const struct inv_http *h);

/* Close every connection, wait for their threads, free. */
void inv_http_stop(struct inv_http *h);

#endif /* INV_HTTP_H */

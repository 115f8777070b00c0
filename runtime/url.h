#ifndef LW_URL_H
#define LW_URL_H

#include <stddef.h>

/* One Redis endpoint, parsed from LOCKWEAVE_REDIS_URL.  Strings are owned by
 * the struct and freed by lw__url_free(). */
struct lw_url {
    char *host;     /* TCP host (NULL for unix sockets) */
    int port;       /* TCP port */
    char *path;     /* unix socket path (NULL for TCP) */
    char *user;     /* ACL user or NULL */
    char *password; /* NULL when no AUTH is wanted */
    int db;         /* SELECT index, 0 by default */
};

/* Parse s into *u.  Returns LW_OK, LW_ECONFIG (with a reason in err) or
 * LW_ENOMEM.  On error *u holds nothing to free. */
int lw__url_parse(const char *s, struct lw_url *u, char *err, size_t errlen);
void lw__url_free(struct lw_url *u);

/* The URL with its password masked, for log lines. */
void lw__url_describe(const struct lw_url *u, char *buf, size_t len);

#endif

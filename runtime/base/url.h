#ifndef LW_URL_H
#define LW_URL_H

#include <stddef.h>

/* What an endpoint is to lockweave, which decides what a new connection
 * to it says first (net/handshake.c). */
enum lw_url_role {
    LW_URL_DATA,     /* a Redis server that holds locks */
    LW_URL_SENTINEL, /* a Redis Sentinel: asked where the master is, and
                        authenticated (the sentinels' own credentials),
                        nothing else */
    LW_URL_MASTER    /* the master a sentinel named: ROLE is checked at
                        connect, a replica refused */
};

/* One Redis endpoint, parsed from LOCKWEAVE_REDIS_URL.  Strings are owned by
 * the struct and freed by lw__url_free(). */
struct lw_url {
    char *host;     /* TCP host (NULL for unix sockets) */
    int port;       /* TCP port */
    char *path;     /* unix socket path (NULL for TCP) */
    char *user;     /* ACL user or NULL */
    char *password; /* NULL when no AUTH is wanted */
    int db;         /* SELECT index, 0 by default */
    int tls;        /* 1: rediss:// (TLS over the TCP connection) */
    int role;       /* enum lw_url_role */
};

/* Parse s into *u.  Returns LW_OK, LW_ECONFIG (with a reason in err) or
 * LW_ENOMEM.  On error *u holds nothing to free. */
int lw__url_parse(const char *s, struct lw_url *u, char *err, size_t errlen);
void lw__url_free(struct lw_url *u);

/* The URL with its password masked, for log lines. */
void lw__url_describe(const struct lw_url *u, char *buf, size_t len);

/* Deep copy of src into *dst: LW_OK or LW_ENOMEM (then *dst holds nothing). */
int lw__url_copy(struct lw_url *dst, const struct lw_url *src);

/* How the endpoints of LOCKWEAVE_REDIS_URL are used. */
enum lw_topology {
    LW_TOPO_SINGLE,  /* redis[s]://… or unix://…: one server */
    LW_TOPO_CLUSTER, /* redis[s]+cluster://h:p[,h:p…]: seeds of a cluster */
    LW_TOPO_REDLOCK, /* redis[s]://…,redis[s]://…: independent masters */
    LW_TOPO_SENTINEL /* redis[s]+sentinel://h:p[,h:p…]/NAME: the master that
                        the sentinels name NAME (topology/sentinel.c) */
};

#define LW_ENDPOINTS_MAX 16

/* The port a sentinel listens on when its address names none. */
#define LW_SENTINEL_PORT 26379

/* Every endpoint LOCKWEAVE_REDIS_URL names, in the order given. */
struct lw_endpoints {
    int topology;
    int n;
    struct lw_url *urls; /* n of them, owned; LW_TOPO_SENTINEL: the
                            sentinels (role LW_URL_SENTINEL, no
                            credentials: the configuration adds theirs) */
    /* LW_TOPO_SENTINEL only: the master's name (owned, percent-decoded),
     * and what its address is completed with: the URL's credentials,
     * database and TLS (host NULL, role LW_URL_MASTER). */
    char *master_name;
    struct lw_url node;
};

/* Parse a whole LOCKWEAVE_REDIS_URL value.  Cluster seeds without
 * credentials take the first seed's user, password and database.  A
 * Sentinel URL's credentials and ?db=N go to e->node, its sentinels
 * (port LW_SENTINEL_PORT when not given) to e->urls.  Every
 * endpoint of a list is TLS or none is (a list that mixes them is refused,
 * as is unix:// among rediss://).  LW_OK,
 * LW_ECONFIG (reason in err) or LW_ENOMEM; on error *e holds nothing. */
int lw__endpoints_parse(const char *s, struct lw_endpoints *e, char *err,
                        size_t errlen);
void lw__endpoints_free(struct lw_endpoints *e);

/* 1 when the endpoints are reached over TLS (all of them, or none are). */
static inline int lw__endpoints_tls(const struct lw_endpoints *e)
{
    return e->n > 0 && e->urls[0].tls;
}

#endif

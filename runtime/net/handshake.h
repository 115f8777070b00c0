#ifndef LW_HANDSHAKE_H
#define LW_HANDSHAKE_H

struct lw_conn;
struct lw_url;

/*
 * What is said on c's new connection to u before any request: AUTH (with
 * u's user and password), SELECT (u's database), then INFO memory, to warn
 * once per server whose maxmemory-policy may evict a held lock.  LW_OK;
 * else c has failed (lw__conn_fail(): logged, closed, backing off) with
 * LW_EAUTH (refused), LW_EREDIS or LW_ETLS (no reply).
 */
int lw__handshake(struct lw_conn *c, const struct lw_url *u);

#endif

#ifndef LW_HANDSHAKE_H
#define LW_HANDSHAKE_H

#include <stddef.h>

struct lw_conn;
struct lw_url;

/*
 * What is said on c's new connection to u before any request, in one
 * round trip: AUTH (with u's user and password), SELECT (u's database),
 * CLIENT SETNAME (see lw__client_name_parse()), INFO memory (to warn once
 * per server whose maxmemory-policy may evict a held lock), and, unless
 * turned off, the ACL check: whether the user may run every command a lock
 * sends, so that a user who may not is refused here, before any guarded
 * body runs, with a line naming the command.  LW_OK; else c has failed
 * (lw__conn_fail(): logged, closed, backing off) with LW_EAUTH (AUTH
 * refused, a password wanted, a right missing), LW_ECONFIG (a database the
 * server does not have), LW_EREDIS or LW_ETLS (no reply), or LW_ENOMEM.
 */
int lw__handshake(struct lw_conn *c, const struct lw_url *u);

/* Whether connections opened from now on make the ACL check (on by
 * default).  Off for a process that only looks at locks (lockweave-ctl),
 * which must not be refused for rights it never uses. */
void lw__handshake_acl_check(int on);

/* 1 when the ACL check asks about command cmd (lower case), else 0: for
 * the test that every command the scripts call is asked about. */
int lw__handshake_needs(const char *cmd);

/* Who a connection is, from the name it gave itself at connect:
 * "lockweave:<host>:<pid>:<thread id>:<tag>", the tag the first 16 hex
 * digits of every token the connection's thread mints (core/token.c). */
struct lw_client_name {
    char host[65]; /* as gethostname() said, cut to 64 bytes */
    long pid, tid; /* the process, and the thread (its Linux id) */
    char tag[17];  /* NUL-terminated */
};

/* Read name s (n bytes, as CLIENT LIST shows it) into *out: 1, or 0 when
 * it is not a lockweave connection's name. */
int lw__client_name_parse(const char *s, size_t n, struct lw_client_name *out);

#endif

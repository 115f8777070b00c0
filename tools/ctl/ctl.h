/*
 * lockweave-ctl: look at and break lockweave's locks in Redis, through the
 * runtime's own code for the URL, the key names, the routing and the
 * release script.  One file per job: cli.c (command line, main), servers.c
 * (configuration and where commands go), inspect.c, list.c, unlock.c, and
 * out.c (escaping, JSON).
 */
#ifndef LW_CTL_H
#define LW_CTL_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "out.h"

/* Exit statuses (the man page and --help list them). */
enum {
    CTL_OK = 0,       /* done; inspect: held; list: something listed */
    CTL_NONE = 1,     /* inspect, unlock: not held; list: nothing matched */
    CTL_USAGE = 2,    /* bad command line */
    CTL_REDIS = 3,    /* Redis unreachable, refused or answered an error */
    CTL_CONFIG = 4,   /* bad LOCKWEAVE_REDIS_URL */
    CTL_DECLINED = 5, /* unlock: not confirmed (declined, or no terminal) */
    CTL_SHARED = 7,   /* unlock: a read lock or a semaphore, which unlock
                         --force does not break */
    CTL_CHANGED = 6   /* unlock: the lock changed hands before the release:
                         left alone */
};

struct lw_settings;
struct lw_url;

struct ctl {
    int json;           /* --json */
    int raw;            /* --raw: KEY and PATTERN name whole Redis keys */
    int escaped;        /* --escaped: KEY and PATTERN in out_text() form */
    int yes;            /* --yes */
    int force;          /* --force */
    long scan_count;    /* --scan-count: SCAN's COUNT */
    const char *prefix; /* --prefix, or NULL: the library's */
    const struct lw_settings *s; /* after ctl_setup() */
    struct out_json j;           /* with json */
};

/* A lock key as Redis names it. */
struct ctl_key {
    char *key; /* owned */
    size_t len;
    size_t prefix_len; /* the prefix's bytes at the start of key; 0 when a
                          --raw key does not start with it */
    int prefixed;      /* key starts with the configured prefix */
};

/* servers.c */

/* Read LOCKWEAVE_REDIS_URL and the prefix into c->s as the library would,
 * saying what is wrong on stderr.  CTL_OK or CTL_CONFIG. */
int ctl_setup(struct ctl *c);

/* Free what the runtime holds (connections, maps). */
void ctl_teardown(void);

/* The Redis key for arg (the user's key, or with --raw the whole key).
 * CTL_OK, CTL_USAGE (bad escape, empty) or CTL_REDIS (out of memory). */
int ctl_key_make(const struct ctl *c, const char *arg, struct ctl_key *k);
void ctl_key_free(struct ctl_key *k);

/* What a key is shown as: without the prefix, unless --raw. */
void ctl_key_shown(const struct ctl *c, const char *key, size_t len,
                   const char **p, size_t *n);

/* A key as it is shown: in JSON "key" (as ctl_key_shown() says) and
 * "redis_key"; for people the shown key, quoted and escaped. */
void ctl_put_key(struct ctl *c, const char *key, size_t len);

/* u, its password masked: the JSON member name, or for people escaped. */
void ctl_put_url(struct ctl *c, const char *name, const struct lw_url *u);

/* Run a command on the key arg names: one(), or redlock() under Redlock.
 * Returns its exit status. */
typedef int ctl_key_fn(struct ctl *c, const struct ctl_key *k);
int ctl_key_run(struct ctl *c, const char *arg, ctl_key_fn *one,
                ctl_key_fn *redlock);

/* The exit status for a runtime result (LW_E...). */
int ctl_exit_for(int lw_rc);

/* Send a pipeline of plain commands about key to the server that has it
 * (the one server, or in a Cluster its slot's master, following
 * redirections), as the runtime sends its own.  replies[0..ncmds) are set
 * (the caller frees them); an error reply comes back as it is.  LW_OK or a
 * negative LW_E... code (logged). */
struct lw_cmd;
int ctl_send_key(const struct ctl *c, const char *key, size_t keylen,
                 const struct lw_cmd *cmds, int ncmds, redisReply **replies);

/* The same to one server, on connection *conn (opened on first use; free
 * it with ctl_conn_free()). */
struct lw_conn;
int ctl_send_to(const struct lw_url *u, struct lw_conn **conn,
                const struct lw_cmd *cmds, int ncmds, redisReply **replies);
void ctl_conn_free(struct lw_conn *conn);

/* Any request (a script) to one server that way; error replies are the
 * request's flags' business. */
struct lw_request;
int ctl_request_to(const struct lw_url *u, struct lw_conn **conn,
                   const struct lw_request *q, redisReply **replies);

/* The masters that hold keys: the one server, Redlock's masters, or a
 * Cluster's masters by its slot map (learnt now).  *out points into the
 * runtime's state; LW_OK or why the map could not be had. */
int ctl_masters(const struct ctl *c, const struct lw_url **out, int *n);

/* u as text, its password masked. */
void ctl_describe(const struct lw_url *u, char *buf, size_t len);

/* Whether a reply is the integer or string it should be. */
int ctl_reply_int(const redisReply *r, long long *v);

/* Say what went wrong on stderr (never raw bytes): "lockweave-ctl: " and
 * the message. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* redlock.c: one key on every master of a Redlock configuration. */
enum {
    CTL_M_HELD,  /* holds the token most masters hold */
    CTL_M_OTHER, /* holds another token */
    CTL_M_FREE,  /* does not have the key */
    CTL_M_DOWN,  /* could not be reached (the runtime logged why) */
    CTL_M_ERROR  /* answered with an error */
};
struct ctl_master {
    const struct lw_url *url;
    int state;         /* CTL_M_... */
    long long ttl;     /* PTTL, when it has the key */
    redisReply *token; /* the key's value, when it has it */
    redisReply *error; /* the error reply */
};

/* GET and PTTL of k on every master (conns[i]: master i's connection,
 * opened on first use), into m[0..n); *holders: how many hold the token
 * most of them hold.  Returns how many could tell (held, other or free). */
int ctl_redlock_read(const struct ctl *c, const struct ctl_key *k,
                     struct lw_conn **conns, struct ctl_master *m,
                     int *holders);
/* Free m's replies and the connections. */
void ctl_redlock_free(struct ctl_master *m, struct lw_conn **conns, int n);
const char *ctl_master_state(int state);

/* Which of tok[0..n) (NULL: none) most are equal to: its index in *best
 * (-1: none), and how many. */
int ctl_majority(const char *const *tok, const size_t *len, int n, int *best);

/* The commands. */
int ctl_inspect(struct ctl *c, const char *arg);
int ctl_list(struct ctl *c, const char *pattern);
int ctl_unlock(struct ctl *c, const char *arg);

#endif

/*
 * lockweave-ctl: look at and break lockweave's locks in Redis, through the
 * runtime's own code for the URL, the key names, the routing and the
 * release script, lent by its admin.h.  One file per job: cli.c (command
 * line, main), servers.c (configuration, keys, what Redis answered),
 * kinds.c (who holds a lock several may hold), inspect.c, list.c,
 * unlock.c, redlock.c (one key on every Redlock master) and out.c
 * (escaping, JSON).
 */
#ifndef LW_CTL_H
#define LW_CTL_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "admin.h" /* runtime/tool/admin.h: the runtime's one header here */
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

struct ctl {
    int json;           /* --json */
    int raw;            /* --raw: KEY and PATTERN name whole Redis keys */
    int escaped;        /* --escaped: KEY and PATTERN in out_text() form */
    int yes;            /* --yes */
    int force;          /* --force */
    long scan_count;    /* --scan-count: SCAN's COUNT */
    const char *prefix; /* --prefix, or NULL: the library's */
    struct lw_admin_config cfg; /* after ctl_setup() */
    struct out_json j;          /* with json */
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

/* Read LOCKWEAVE_REDIS_URL and the prefix into c->cfg as the library would,
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

/* Say "Redis answered: ..." for the first error reply among r[0..n) (NULL
 * entries skipped).  LW_OK when there is none, else LW_EREDIS. */
int ctl_reply_errors(redisReply *const *r, int n);

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
    struct lw_conn *conn; /* opened on first use */
    int state;            /* CTL_M_... */
    long long ttl;        /* PTTL, when it has the key */
    redisReply *token;    /* the key's value, when it has it */
    redisReply *error;    /* the error reply */
    redisReply *clients;  /* its CLIENT LIST (an error reply when refused) */
};

/* One key on every master. */
struct ctl_redlock {
    int n;       /* masters */
    int quorum;  /* more than half of them */
    int holders; /* how many hold the token most of them hold */
    int told;    /* how many could tell: held, other or free */
    struct ctl_master m[LW_ADMIN_MASTERS_MAX];
};

/* GET, PTTL and CLIENT LIST of k on every master, into rl (free it with
 * ctl_redlock_free() whatever this returns).  LW_OK or LW_ENOMEM. */
int ctl_redlock_read(const struct ctl *c, const struct ctl_key *k,
                     struct ctl_redlock *rl);
/* Free rl's replies and connections. */
void ctl_redlock_free(struct ctl_redlock *rl);
const char *ctl_master_state(int state);

/* Which of tok[0..n) (NULL: none) most are equal to: its index in *best
 * (-1: none), and how many. */
int ctl_majority(const char *const *tok, const size_t *len, int n, int *best);

/* kinds.c: the holders of a lock of a kind several hold at once
 * (LW_ADMIN_KIND_SHARED), counted in its readers' set (LW_ADMIN_KIND_READERS)
 * or in its key, a sorted set whose member "n:<N>" says N
 * (LW_ADMIN_KIND_PERMITS).  The commands point into the struct itself and
 * into the key and names given: none may move or go before the replies
 * are read. */
struct ctl_count {
    const char *count[4], *tag[4];
    size_t clens[4], tlens[4];
    struct lw_admin_cmd cmds[2];
    int ncmds;
};
void ctl_count_init(struct ctl_count *q, const struct lw_admin_kind *kind,
                    const char *key, size_t keylen,
                    const struct lw_admin_names *names);
/* From its replies r[0..q->ncmds): *holders, how many hold it now, and
 * *permits, N (else -1).  LW_OK, or LW_EREDIS when Redis did not count:
 * the key is not a lock of that kind. */
int ctl_count_read(const struct ctl_count *q, redisReply *const *r,
                   long long *holders, long long *permits);

/* The commands. */
/* What a done run-once mark's run returned (lw__admin_once()'s result),
 * for people: "42", "0.5", "none (a void function)". */
void ctl_once_result(FILE *f, const char *r, size_t n);

int ctl_inspect(struct ctl *c, const char *arg);
int ctl_list(struct ctl *c, const char *pattern);
int ctl_unlock(struct ctl *c, const char *arg);

#endif

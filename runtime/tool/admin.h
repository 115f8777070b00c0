#ifndef LW_ADMIN_H
#define LW_ADMIN_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/*
 * What the runtime lends an operator's tool (lockweave-ctl, tools/ctl):
 * the configuration as the library reads it, requests sent where the
 * library sends its own, the names of a lock's keys, which kind of lock a
 * key holds, and the releases a forced unlock sends.  The tool includes
 * this header and no other of the runtime's, so what it relies on is all
 * said here: a change inside the runtime keeps these promises or changes
 * this file, where the tool's build and tests see it.
 *
 * Functions return LW_OK or a negative LW_E... code (lockweave.h).  The
 * runtime's structs stay opaque: a tool holds pointers to them and hands
 * them back.  Nothing here is thread-safe beyond what the library is: the
 * tool calls it from one thread.
 */
struct lw_settings; /* a configuration snapshot (base/config.h) */
struct lw_url;      /* one server of it (base/url.h) */
struct lw_conn;     /* a connection to one server (net/conn.h) */
struct lw_names;    /* a lock key's companion names (core/keynames.h) */

/* How the servers of LOCKWEAVE_REDIS_URL are used. */
enum {
    LW_ADMIN_SINGLE,  /* one server; behind Sentinel, the master it names */
    LW_ADMIN_CLUSTER, /* a Redis Cluster, reached through its seeds */
    LW_ADMIN_REDLOCK  /* independent masters, a quorum of them holding */
};

/* The most masters a Redlock configuration names. */
#define LW_ADMIN_MASTERS_MAX 16

/* The configuration in force. */
struct lw_admin_config {
    const struct lw_settings *s; /* handed back to the calls below */
    const char *prefix;          /* the key prefix, NUL-terminated */
    size_t prefix_len;
    int topology; /* LW_ADMIN_... */
};

/* Whether url, a LOCKWEAVE_REDIS_URL value, can be used: LW_OK, LW_ECONFIG
 * with the reason in err (which may quote the value, its password masked:
 * escape it before showing it), or LW_ENOMEM. */
int lw__admin_url_check(const char *url, char *err, size_t errlen);

/* Fill c from the configuration lw_configure() set last (the environment's
 * until then).  LW_OK, or the error that makes it unusable. */
int lw__admin_config(struct lw_admin_config *c);

/* This process looks at locks and breaks them, and takes none: the
 * connections it opens from now on skip the check a locking process's make
 * at connect, that the ACL user may run every command a lock needs, so a
 * user allowed only what the tool sends is not refused.  Call it before
 * the first request. */
void lw__admin_no_acl_check(void);

/* The masters that hold keys: the one server (behind Sentinel the master
 * the sentinels name, asked of them now if not known), Redlock's masters,
 * or a Cluster's masters by its slot map (learnt now).  LW_OK with *out n
 * pointers, an array the caller free()s; the servers are the runtime's,
 * valid until lw_shutdown().  Else why the map could not be had. */
int lw__admin_masters(const struct lw_admin_config *c,
                      const struct lw_url ***out, int *n);

/* u as text, its password masked (never escaped: it may hold any byte of
 * the URL), into buf (len bytes, NUL-terminated, cut short to fit). */
void lw__admin_describe(const struct lw_url *u, char *buf, size_t len);

/* One plain command of a pipeline: argc arguments, binary-safe.  Nothing
 * is copied: the arrays must outlive the call they are sent by. */
struct lw_admin_cmd {
    int argc;
    const char **argv;
    const size_t *lens;
};

/* Send cmds[0..ncmds) about key to the server that has it: the one
 * server, or in a Cluster its slot's master, following redirections (a
 * pipeline met by a slot migration's ASK is sent once more after the map
 * is learnt again).  LW_OK with replies[0..ncmds) set, error replies
 * among them as Redis sent them; the caller frees them with
 * lw__admin_replies_free().  Else a negative code, logged. */
int lw__admin_send_key(const struct lw_admin_config *c, const char *key,
                       size_t keylen, const struct lw_admin_cmd *cmds,
                       int ncmds, redisReply **replies);

/* The same to server u, on *conn: opened on first use (*conn NULL), kept
 * for the next call; free it with lw__admin_conn_free().  No redirection
 * is followed: for a Redlock master, or a Cluster master's own keys. */
int lw__admin_send_to(const struct lw_url *u, struct lw_conn **conn,
                      const struct lw_admin_cmd *cmds, int ncmds,
                      redisReply **replies);

/* Close and free conn (NULL: nothing). */
void lw__admin_conn_free(struct lw_conn *conn);

/* Free r[0..n) and set them to NULL (NULL entries are skipped). */
void lw__admin_replies_free(redisReply **r, int n);

/* The names that go with a lock key: its waiters' queue, the fence
 * counter it draws from, the prefix of its waiters' alive keys (a
 * waiter's is the prefix then its token), and its readers' set.  All sit
 * in the key's Cluster slot.  Not NUL-terminated: use the lengths. */
struct lw_admin_names {
    const char *queue, *fence, *alive, *readers;
    size_t queuelen, fencelen, alivelen, readerslen;
    struct lw_names *own; /* the runtime's, behind the pointers above */
};

/* Fill n for key (len bytes), whose first prefix_len bytes are the key
 * prefix (0: none, when it does not start with it), as the library names
 * them under c.  LW_OK or LW_ENOMEM; free with lw__admin_names_free(). */
int lw__admin_names(const struct lw_admin_config *c, const char *key,
                    size_t len, size_t prefix_len, struct lw_admin_names *n);
void lw__admin_names_free(struct lw_admin_names *n);

/* Whether name is a companion of some lock key under prefix (a queue, a
 * fence counter, a readers' set, a waiter's alive key, mailbox or
 * receipt) rather than a lock key: for walking the keyspace.  1 or 0;
 * LW_ENOMEM. */
int lw__admin_companion(const char *name, size_t len, const char *prefix,
                        size_t prefix_len);

/* A kind of lock, as a tool shows it. */
struct lw_admin_kind {
    const char *name; /* "mutex", "read", "semaphore"; static */
    const char *noun; /* for messages: "a mutex", ...; static */
    unsigned flags;   /* LW_ADMIN_KIND_... */
};

/* Its holders are counted in its readers' set (else in its key). */
#define LW_ADMIN_KIND_READERS 0x02u
/* Its key is a sorted set of its holders, scored by their leases' ends,
 * and a member "n:<N>" scored +inf says N, how many may hold it. */
#define LW_ADMIN_KIND_PERMITS 0x04u
/* Several hold it at once: no one holder's release ends it. */
#define LW_ADMIN_KIND_SHARED 0x08u

/* Which kind a lock key whose GET was answered get belongs to: 1 with *k
 * set, or 0 when no kind claims it (nothing there), *k then the mutex's,
 * the kind every other builds on. */
int lw__admin_kind_of(const redisReply *get, struct lw_admin_kind *k);

/* A run-once mark (kind "once"), from its key's GET: LW_ADMIN_ONCE_RUNNING
 * (a run holds it), LW_ADMIN_ONCE_DONE with what the run returned in
 * *result (*len bytes, inside get: "i:<int64>", "u:<uint64>", "d:<double
 * as %.17g>", or "v" for none), or 0 when it is not a mark. */
#define LW_ADMIN_ONCE_RUNNING 1
#define LW_ADMIN_ONCE_DONE    2
int lw__admin_once(const redisReply *get, const char **result, size_t *len);

/* A mutex's release with token, for one its holder did not send: the key
 * deleted if it still holds token, the next waiter handed it or told, and
 * no receipt left (the holder's own release then finds its lock lost).
 * n: the key's names.  LW_OK with *r an integer reply the caller frees: 1
 * released, 2 released by its holder meanwhile, 0 gone, -1 another
 * token's; *replayed set when it may have run twice (a connection broke).
 * Else a negative code, *r NULL. */
int lw__admin_release(const struct lw_admin_config *c, const char *key,
                      size_t keylen, const char *token, size_t toklen,
                      const struct lw_admin_names *n, redisReply **r,
                      int *replayed);

/*
 * Who holds a lock.  Every connection of the library names itself at
 * connect (CLIENT SETNAME) with its host, process and thread, and the
 * first 16 hex digits of every token that thread mints: a lock's token
 * finds the connection, in the client list of the server the lock is on,
 * of the thread that took it from Redis (a lock handed from thread to
 * thread of a process keeps its first token, so its process is right and
 * its thread the one that took it).  Found only while that connection is
 * open: not once its process has died, nor while it reconnects.
 */
struct lw_admin_holder {
    int found;        /* 1: the connection is open; the rest is set */
    char host[65];    /* as the holder's gethostname() said */
    long pid, tid;    /* its process, and its thread's Linux id */
    char addr[64];    /* the connection's address, as the server sees
                         it ("ip:port") */
    long long age_s;  /* how long it has been open */
    long long idle_s; /* since its last command */
};

/* The command to add to a pipeline about the lock's key (no round trip of
 * its own) for lw__admin_holder(): CLIENT LIST TYPE normal. */
extern const struct lw_admin_cmd lw__admin_client_list;

/* From list, the server's answer to lw__admin_client_list, the connection
 * of token's thread (token: toklen bytes, a lock key's value or a holder's
 * member) into *h.  LW_OK (h->found says whether it is open), or
 * LW_EREDIS when list is no client list (an error reply: the ACL user may
 * not run CLIENT LIST). */
int lw__admin_holder(const redisReply *list, const char *token, size_t toklen,
                     struct lw_admin_holder *h);

/* A Redlock master's release of key if it holds token (the key alone: no
 * queue there), on *conn as lw__admin_send_to().  LW_OK with *r an integer
 * reply the caller frees: 1 deleted, 0 gone, -1 another token's. */
int lw__admin_release_one(const struct lw_url *u, struct lw_conn **conn,
                          const char *key, size_t keylen, const char *token,
                          size_t toklen, redisReply **r);

#endif

/*
 * A real redis-server for one test process: started on a free loopback port in
 * a private temporary directory, stopped by its PID.  Tests never share a
 * server and never reach for a system-wide one, so they can run in parallel
 * and a leftover server from a crashed run cannot change their outcome.
 *
 * A missing redis-server makes rh_start() fail with a message saying so: the
 * caller CHECKs the result, so a machine without Redis fails the test instead
 * of skipping it.
 *
 * With LW_TEST_TLS=1 in the environment every server serves TLS only (as
 * with opts.tls, with a certificate for localhost and 127.0.0.1 from one
 * CA made for the process) and LOCKWEAVE_TLS_CA_FILE names that CA: a test
 * that reaches its servers through their url runs over TLS unchanged.
 *
 * Start servers from the main thread: the server is told to die with the
 * thread that forked it (so a test killed by ctest's TIMEOUT leaves nothing
 * behind), and Linux ties that to the forking thread, not the process.
 */
#ifndef LW_REDIS_HARNESS_H
#define LW_REDIS_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rh_tls;

/* How to run the server.  rh_opts_init() gives: no persistence, TCP only. */
typedef struct rh_opts {
    int aof;              /* 1: appendonly yes + appendfsync always, so keys
                             survive rh_restart() and a SIGKILL */
    int unix_socket;      /* 1: also listen on <dir>/redis.sock */
    const char *password; /* requirepass for the default user; the harness's
                             own client authenticates with it */
    /* NULL-terminated extra command-line words, appended as they are, e.g.
     * {"--user", "alice", "on", ">secret", "~*", "&*", "+@all", NULL}.
     * The array must outlive the server (rh_restart() reuses it). */
    const char *const *extra_args;
    /* Non-NULL: serve TLS only, with these files from rh_tls_make()
     * (--port 0 --tls-port <port>).  The harness's own client then talks
     * to the server over its unix socket, which this turns on. */
    const struct rh_tls *tls;
    const char *tls_auth_clients;   /* "no", "optional" or "yes"; NULL:
                                       "optional" */
    const char *tls_cert, *tls_key; /* the server's; NULL: tls->server */
    /* Non-NULL: run Redis Sentinel (redis-sentinel, else redis-server
     * --sentinel) with this text as its configuration file, written to
     * <dir>/sentinel.conf at rh_start(), which Sentinel rewrites as it
     * learns (rh_restart() keeps what it wrote).  See rh_sentinel.h. */
    const char *sentinel_conf;
} rh_opts;

/*
 * Throwaway certificates made with the openssl CLI at test time, in a
 * private temporary directory (nothing checked in): paths to PEM files.
 */
#define RH_TLS_PATH 160 /* each path's size */
typedef struct rh_tls {
    char dir[128];
    /* the CA that signs all but the stranger */
    char ca[RH_TLS_PATH], ca_key[RH_TLS_PATH];
    /* servers: DNS:localhost; the node's also IP:127.0.0.1; the expired
     * one's was valid in 2020 */
    char server[RH_TLS_PATH], server_key[RH_TLS_PATH];
    char node[RH_TLS_PATH], node_key[RH_TLS_PATH];
    char expired[RH_TLS_PATH], expired_key[RH_TLS_PATH];
    /* a client certificate */
    char client[RH_TLS_PATH], client_key[RH_TLS_PATH];
    /* another CA, and a client certificate it signed */
    char other_ca[RH_TLS_PATH];
    char stranger[RH_TLS_PATH], stranger_key[RH_TLS_PATH];
} rh_tls;

/* Make the files above.  0, or -1 after printing why (openssl's output is
 * in <dir>/openssl.log, printed too). */
int rh_tls_make(rh_tls *t);

/* Remove the directory. */
void rh_tls_remove(rh_tls *t);

typedef struct rh_server {
    pid_t pid;           /* 0 when not running */
    pid_t owner;         /* the process that started it: only it stops it */
    int port;            /* loopback TCP port */
    int paused;          /* 1 between rh_pause() and rh_resume() */
    rh_opts opts;        /* copy of the options (pointers are the caller's) */
    char dir[128];       /* private working directory */
    char sock_path[160]; /* <dir>/redis.sock when opts.unix_socket */
    char log_path[160];  /* <dir>/redis.log: the server's stdout/stderr */
    char url[64];        /* redis://127.0.0.1:<port>; with opts.tls
                            rediss://localhost:<port> */
    redisContext *raw;   /* the harness's own client (rh_cmd); lazily opened */
    pid_t raw_pid;       /* process that opened raw: a forked child opens its
                            own instead of talking on the parent's socket */
} rh_server;

void rh_opts_init(rh_opts *o);

/* Start a server (opts NULL: defaults) and wait until it answers PING.
 * Returns 0, or -1 after printing why to stderr (redis-server missing, did not
 * start or answer within 10 s; its log is printed). */
int rh_start(rh_server *s, const rh_opts *opts);

/* SIGTERM, wait for it to exit (SIGKILL after 5 s), remove its directory.
 * Returns 0, or -1 if it had to be killed.  Safe on a stopped server. */
int rh_stop(rh_server *s);

/* SIGKILL now (a crash: no shutdown work), keeping the directory so that
 * rh_restart() can bring it back with its AOF. */
int rh_kill(rh_server *s);

/* Freeze / thaw the server with SIGSTOP / SIGCONT: connections stay open but
 * nothing answers, as with a hung or partitioned server. */
int rh_pause(rh_server *s);
int rh_resume(rh_server *s);

/* Stop the server (SIGTERM, keeping its directory and AOF) if it runs, then
 * start it again on the same port with the same options.  Retries for a few
 * seconds if the port is briefly taken.  Returns 0 or -1 (printed). */
int rh_restart(rh_server *s);

/* Only the starting step of rh_restart(), for a server stopped by
 * rh_stop_keep() or rh_kill(). */
int rh_start_again(rh_server *s);

/* SIGTERM and wait like rh_stop(), but keep the directory for a restart. */
int rh_stop_keep(rh_server *s);

/* A raw command on the harness's own connection (printf-style, as
 * redisCommand): to inspect, create or delete keys behind lockweave's back.
 * Reconnects after a restart, and in a forked child.  Returns the reply (free
 * it with freeReplyObject) or NULL after printing the I/O error.  Not
 * thread-safe: other threads use rh_connect(). */
redisReply *rh_cmd(rh_server *s, const char *fmt, ...);

/* Binary-safe form of rh_cmd(). */
redisReply *rh_cmd_argv(rh_server *s, int argc, const char **argv,
                        const size_t *argvlen);

/* rh_cmd() expecting an integer reply: returns it, or LLONG_MIN (after
 * printing the reply) for anything else. */
long long rh_cmd_int(rh_server *s, const char *fmt, ...);

/* 0 if r is a reply and not an error, else -1 after printing what (the
 * command's name) and why on stderr; frees r either way. */
int rh_ok(redisReply *r, const char *what);

/* A new connection of the caller's own (authenticated if opts.password), for
 * a thread or a forked child.  NULL on failure (printed).  redisFree() it. */
redisContext *rh_connect(const rh_server *s);

/* A free loopback TCP port right now (bind port 0, read it back), or -1. */
int rh_free_port(void);

/* Remove a directory tree (a server's private dir, a test's scratch dir);
 * nothing for NULL or "". */
void rh_remove_tree(const char *dir);

/* Path of the redis-server executable ($LW_REDIS_SERVER, then $PATH, then
 * the usual directories), or NULL if there is none. */
const char *rh_server_path(void);

/* Path of redis-sentinel (Debian's redis-sentinel package: next to
 * redis-server, or in /usr/bin), or NULL if there is none. */
const char *rh_sentinel_path(void);

#ifdef __cplusplus
}
#endif

#endif /* LW_REDIS_HARNESS_H */

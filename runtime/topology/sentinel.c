/*
 * Redis Sentinel (see sentinel.h).  The master learnt is one immutable
 * record the process shares, swapped for another when the sentinels name
 * another; records are kept until lw_shutdown(), so a thread's connection
 * points at one (net/threadconn.c) without counting references, and a
 * request's only cost is loading the pointer.  One thread at a time asks
 * the sentinels, on connections the process keeps for that; a thread of
 * the process's own listens to one sentinel for +switch-master.
 */
#include "topology/sentinel.h"

#include <errno.h>
#include <lockweave.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/log.h"
#include "base/result.h"
#include "base/thread.h"

#define RETRY_MIN_US 10000
#define RETRY_MAX_US 200000
/* The sentinels are asked at most this often by the process, however many
 * threads find the master gone at once. */
#define ASK_MIN_MS 50
/* A master name no sentinel knew fails every call at once for this long
 * before they are asked again. */
#define UNKNOWN_RECHECK_MS 1000
#define HOST_MAX           256

struct master {
    struct lw_url url; /* role LW_URL_MASTER, with the URL's credentials,
                          database and TLS */
    unsigned cfg_gen;  /* lw_settings.gen it was learnt under */
    int stale;         /* atomic: 1 once it failed; the sentinels are asked
                          before it is used again */
    int told;          /* atomic: its first failure was logged */
    struct master *older;
};

static struct master *current; /* atomic; the newest of the chain */
static pthread_mutex_t publish_mu = PTHREAD_MUTEX_INITIALIZER;

/* Held (1) by the thread asking the sentinels; the rest below is its. */
static int asking;
static int64_t asked_ms;   /* when they were last asked */
static int first;          /* the sentinel that answered last: asked first */
static int failing;        /* no sentinel answered last time */
static unsigned conns_gen; /* lw_settings.gen of conns */
static struct lw_conn *conns[LW_ENDPOINTS_MAX];

/* The configuration whose master name no sentinel knew, and until when
 * to believe it without asking again. */
static unsigned unknown_gen;
static int64_t unknown_until_ms;

/* The +switch-master listener's thread (see listen_main()). */
enum { LISTEN_NONE, LISTEN_RUNNING, LISTEN_EXITED };
static pthread_mutex_t listen_mu = PTHREAD_MUTEX_INITIALIZER;
static int listen_state;        /* atomic; LISTEN_RUNNING set, and
                                   LISTEN_EXITED cleared, under listen_mu */
static int listen_stop;         /* atomic: lw_shutdown() wants it gone */
static int64_t listen_retry_ms; /* no new thread before (one failed) */
static pthread_t listen_thread;

/* A child forked while a thread of the parent was asking, or listening,
 * has no such thread: no one would ever let go, or listen. */
static void fork_child(void)
{
    asking = 0;
    __atomic_store_n(&listen_state, LISTEN_NONE, __ATOMIC_RELAXED);
}

static const struct lw_fork_hooks fork_hooks = {.child = fork_child};

static void register_fork(void)
{
    lw__fork_register(&fork_hooks);
    lw__fork_register_mutex(&publish_mu);
    lw__fork_register_mutex(&listen_mu);
}

static void init_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, register_fork);
}

static struct master *load_current(void)
{
    return __atomic_load_n(&current, __ATOMIC_ACQUIRE);
}

/* m is what s's requests go to, as far as anyone knows. */
static int usable(const struct master *m, const struct lw_settings *s)
{
    return m != NULL && m->cfg_gen == s->gen &&
           !__atomic_load_n(&m->stale, __ATOMIC_RELAXED);
}

/* Mark m failed (why: for the log): the next request asks the sentinels
 * first.  Until they name another, each attempt on m may fail again: only
 * the first failure is worth a line above debug. */
static void suspect(struct master *m, const struct lw_settings *s,
                    const char *why)
{
    int level = __atomic_exchange_n(&m->told, 1, __ATOMIC_RELAXED)
                    ? LW_LOG_DEBUG
                    : LW_LOG_INFO;

    if (__atomic_exchange_n(&m->stale, 1, __ATOMIC_RELAXED) == 0)
        lw__log(level,
                "Redis Sentinel: master %s at %s:%d %s; asking the sentinels",
                s->ep.master_name, m->url.host, m->url.port, why);
}

static void close_conns(void)
{
    for (int i = 0; i < LW_ENDPOINTS_MAX; i++) {
        lw__conn_free(conns[i]);
        conns[i] = NULL;
    }
}

/* Ask sentinel i of s where the master is: LW_OK with *known 1 and the
 * address in host (cap bytes) and *port, or *known 0 when the sentinel
 * monitors no master of that name; else why it did not answer: LW_EAUTH
 * (it wants other credentials), LW_EREDIS, LW_ENOMEM, as logged. */
static int ask_one(const struct lw_settings *s, int i, char *host, size_t cap,
                   int *port, int *known)
{
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name",
                          s->ep.master_name};
    size_t lens[] = {8, 23, strlen(s->ep.master_name)};
    struct lw_cmd cmd = {3, argv, lens};
    struct lw_request q = {
        .cmds = &cmd, .ncmds = 1, .flags = LW_REQ_RAW_ERRORS};
    const struct lw_url *u = &s->ep.urls[i];
    char where[300], shown[256];
    redisReply *r;
    int replayed, rc;

    *known = 0;
    if (conns[i] == NULL && (conns[i] = lw__conn_new_to(u)) == NULL)
        return LW_ENOMEM;
    rc = lw__conn_run(conns[i], &q, &r, &replayed);
    if (rc != LW_OK)
        return rc; /* net/ logged it */
    lw__url_describe(u, where, sizeof where);
    if (r->type == REDIS_REPLY_NIL) {
        rc = LW_OK;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               r->element[0]->len > 0 && r->element[0]->len < cap) {
        char *end;
        long p = strtol(r->element[1]->str, &end, 10);
        if (*end == '\0' && p > 0 && p <= 65535) {
            memcpy(host, r->element[0]->str, r->element[0]->len + 1);
            *port = (int)p;
            *known = 1;
            rc = LW_OK;
        } else {
            rc = LW_EREDIS;
        }
    } else if (r->type == REDIS_REPLY_ERROR &&
               (strncmp(r->str, "NOAUTH", 6) == 0 ||
                strncmp(r->str, "WRONGPASS", 9) == 0 ||
                strncmp(r->str, "NOPERM", 6) == 0)) {
        lw__log_mask_tokens(r->str, shown, sizeof shown);
        lw__log(LW_LOG_ERROR,
                "Redis %s refused: %s (a sentinel's credentials are "
                "LOCKWEAVE_SENTINEL_USER and LOCKWEAVE_SENTINEL_PASSWORD; "
                "the URL's are the data nodes')",
                where, shown);
        rc = LW_EAUTH;
    } else {
        rc = LW_EREDIS;
    }
    if (rc == LW_EREDIS) {
        if (r->type == REDIS_REPLY_ERROR)
            lw__log_mask_tokens(r->str, shown, sizeof shown);
        else
            snprintf(shown, sizeof shown, "a reply of type %d", r->type);
        lw__log(LW_LOG_WARN,
                "Redis %s: SENTINEL get-master-addr-by-name answered "
                "%s (is it a sentinel?)",
                where, shown);
    }
    freeReplyObject(r);
    return rc;
}

/* Sentinel i said host:port is master: make it the current master for s,
 * or confirm the current one.  Unless announced (+switch-master), only
 * while the current record is still seen, the one there when the
 * sentinels were asked: an answer that raced an announcement may be from
 * before the failover.  LW_OK or LW_ENOMEM. */
static int publish(const struct lw_settings *s, const char *host, int port,
                   int i, const struct master *seen, int announced)
{
    struct master *m, *was;
    char where[300];
    int rc = LW_OK, level = LW_LOG_INFO;

    lw__url_describe(&s->ep.urls[i], where, sizeof where);
    pthread_mutex_lock(&publish_mu);
    was = current;
    if (!announced && was != seen) {
        pthread_mutex_unlock(&publish_mu);
        return LW_OK;
    }
    if (was != NULL && was->cfg_gen == s->gen && was->url.port == port &&
        strcmp(was->url.host, host) == 0) {
        __atomic_store_n(&was->stale, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&publish_mu);
        lw__log(LW_LOG_DEBUG, "Redis Sentinel: master %s is still %s:%d (%s)",
                s->ep.master_name, host, port, where);
        return LW_OK;
    }
    m = calloc(1, sizeof *m);
    if (m == NULL || lw__url_copy(&m->url, &s->ep.node) != LW_OK ||
        (m->url.host = strdup(host)) == NULL) {
        if (m != NULL)
            lw__url_free(&m->url);
        free(m);
        rc = LW_ENOMEM;
    } else {
        m->url.port = port;
        m->cfg_gen = s->gen;
        m->older = was;
        __atomic_store_n(&current, m, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&publish_mu);
    if (rc != LW_OK)
        return rc;
    if (was != NULL && was->cfg_gen == s->gen) {
        level = LW_LOG_WARN;
        lw__log(level,
                "Redis Sentinel: failover noticed: master %s is now %s:%d, "
                "was %s:%d (%s%s)",
                s->ep.master_name, host, port, was->url.host, was->url.port,
                announced ? "+switch-master from " : "", where);
    } else {
        lw__log(level, "Redis Sentinel: master %s is %s:%d (%s)",
                s->ep.master_name, host, port, where);
    }
    return LW_OK;
}

static int known_unknown(const struct lw_settings *s)
{
    return __atomic_load_n(&unknown_gen, __ATOMIC_RELAXED) == s->gen &&
           lw__now_ms() < __atomic_load_n(&unknown_until_ms, __ATOMIC_RELAXED);
}

/* No sentinel that answered knows the name: a configuration error. */
static int name_unknown(const struct lw_settings *s, int answered)
{
    if (__atomic_exchange_n(&unknown_gen, s->gen, __ATOMIC_RELAXED) != s->gen)
        lw__log(LW_LOG_ERROR,
                "Redis Sentinel: no sentinel knows a master named \"%s\" "
                "(%d of %d answered): check the name after the hosts in "
                "LOCKWEAVE_REDIS_URL against the sentinels' \"sentinel "
                "monitor\" lines",
                s->ep.master_name, answered, s->ep.n);
    __atomic_store_n(&unknown_until_ms, lw__now_ms() + UNKNOWN_RECHECK_MS,
                     __ATOMIC_RELAXED);
    return LW_ECONFIG;
}

/* Ask the sentinels, each in turn from the one that answered last, until
 * one names the master (no later than deadline_us, past the first).
 * seen: the record the caller found failed (NULL: none).  LW_OK when the
 * current record is s's and usable; LW_R_BUSY when another thread is
 * asking or has just asked (pause, then look again); LW_ECONFIG (no
 * sentinel knows the name), LW_EAUTH (they refused our credentials),
 * LW_ETLS (their certificates failed verification), LW_EREDIS (none
 * answered), LW_ENOMEM. */
static int discover(const struct lw_settings *s, const struct master *seen,
                    int64_t deadline_us)
{
    const struct master *m = load_current();
    int rc = LW_EREDIS, answered = 0, refused = 0, untrusted = 0;
    int port = 0, known = 0;
    int n = s->ep.n, at = -1;
    char host[HOST_MAX];

    if (usable(m, s) && m != seen)
        return LW_OK; /* another thread asked meanwhile */
    init_once();
    if (__atomic_exchange_n(&asking, 1, __ATOMIC_ACQUIRE) != 0)
        return LW_R_BUSY;
    m = load_current();
    if (usable(m, s) && m != seen) {
        rc = LW_OK;
        goto done;
    }
    seen = m;
    if (lw__now_ms() - asked_ms < ASK_MIN_MS) {
        rc = LW_R_BUSY;
        goto done;
    }
    if (conns_gen != s->gen) {
        close_conns();
        conns_gen = s->gen;
        first = 0;
    }
    for (int k = 0; k < n && at < 0; k++) {
        int i = (first + k) % n, r;
        if (k > 0 && lw__now_us() >= deadline_us)
            break;
        r = ask_one(s, i, host, sizeof host, &port, &known);
        if (r == LW_ENOMEM) {
            rc = r;
            break;
        }
        answered += r == LW_OK;
        refused += r == LW_EAUTH;
        untrusted += r == LW_ETLS;
        if (r == LW_OK && known)
            at = i;
    }
    asked_ms = lw__now_ms();
    if (at >= 0) {
        first = at;
        failing = 0;
        rc = publish(s, host, port, at, seen, 0);
    } else if (rc != LW_ENOMEM && answered > 0) {
        rc = name_unknown(s, answered);
    } else if (rc != LW_ENOMEM) {
        /* Refused credentials or certificates stay refused: the call
         * fails at once, as with one server, not at its deadline. */
        rc = refused > 0 ? LW_EAUTH : untrusted > 0 ? LW_ETLS : LW_EREDIS;
        lw__log(failing ? LW_LOG_DEBUG : LW_LOG_WARN,
                "Redis Sentinel: none of %d sentinels said where master %s "
                "is (%s)%s",
                n, s->ep.master_name, lw_strerror(rc),
                refused > 0 ? "; the sentinels' own credentials are "
                              "LOCKWEAVE_SENTINEL_USER and "
                              "LOCKWEAVE_SENTINEL_PASSWORD"
                            : "");
        failing = 1;
    }
done:
    __atomic_store_n(&asking, 0, __ATOMIC_RELEASE);
    return rc;
}

/* ---- +switch-master ------------------------------------------------------
 *
 * A failover is learnt the moment a sentinel announces it, not when a
 * request first fails on the old master.  That matters most in a
 * switchover (SENTINEL FAILOVER): the old master stays up, and keeps
 * granting locks until the sentinels make it a replica, four hello periods
 * after the switch (8 s by default), while other processes lock on the new
 * one.  One thread per process listens, on one sentinel at a time (the
 * next when it fails), for as long as the configuration is a Sentinel one;
 * what it hears is published as discovery's answers are.
 */
#define LISTEN_POLL_MS 200
#define LISTEN_MIN_MS  100
#define LISTEN_MAX_MS  2000

/* SUBSCRIBE +switch-master on sentinel k of s, on *c (made if NULL, kept
 * either way: its reconnect backoff, and whether its failure was logged
 * already, carry over to the next try).  LW_OK, or why not (logged by
 * net/, or here for a refusal). */
static int subscribe(const struct lw_settings *s, int k, struct lw_conn **c)
{
    static const char *const argv[] = {"SUBSCRIBE", "+switch-master"};
    static const size_t lens[] = {9, 14};
    struct lw_cmd cmd = {2, (const char **)argv, lens};
    struct lw_request q = {
        .cmds = &cmd, .ncmds = 1, .flags = LW_REQ_RAW_ERRORS};
    redisReply *r = NULL;
    int replayed, rc;

    if (*c == NULL && (*c = lw__conn_new_to(&s->ep.urls[k])) == NULL)
        return LW_ENOMEM;
    rc = lw__conn_run(*c, &q, &r, &replayed);
    if (rc == LW_OK && r->type == REDIS_REPLY_ERROR) {
        char where[300];
        lw__url_describe(&s->ep.urls[k], where, sizeof where);
        lw__log(LW_LOG_WARN, "Redis %s: SUBSCRIBE +switch-master refused: %s",
                where, r->str);
        rc = LW_EREDIS;
    }
    freeReplyObject(r);
    if (rc != LW_OK)
        lw__conn_drop(*c);
    return rc;
}

/* A message r of the subscription, from sentinel k: "<name> <old ip> <old
 * port> <new ip> <new port>" on +switch-master. */
static void heard(const struct lw_settings *s, int k, const redisReply *r)
{
    char name[256], host[HOST_MAX];
    int port;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING ||
        sscanf(r->element[2]->str, "%255s %*s %*s %255s %d", name, host,
               &port) != 3 ||
        strcmp(name, s->ep.master_name) != 0 || port <= 0 || port > 65535)
        return;
    publish(s, host, port, k, NULL, 1);
}

/* Wait up to LISTEN_POLL_MS for what c's sentinel (k) sends, and take it
 * all in.  LW_OK; else c failed (logged, closed). */
static int listen_once(const struct lw_settings *s, int k, struct lw_conn *c)
{
    struct pollfd p = {c->ctx->fd, POLLIN, 0};
    void *r;
    int n = poll(&p, 1, LISTEN_POLL_MS);

    if (n == 0 || (n < 0 && errno == EINTR))
        return LW_OK;
    if (n < 0 || lw__conn_read_ready(c, &r) != REDIS_OK) {
        lw__conn_fail(c, LW_EREDIS,
                      n < 0 ? "poll failed" : lw__conn_io_error(c));
        return LW_EREDIS;
    }
    /* Several messages may have come in one read. */
    while (r != NULL) {
        heard(s, k, r);
        freeReplyObject(r);
        if (redisGetReplyFromReader(c->ctx, &r) != REDIS_OK) {
            lw__conn_fail(c, LW_EREDIS, "protocol error");
            return LW_EREDIS;
        }
    }
    return LW_OK;
}

static void close_all(struct lw_conn **c, int n)
{
    for (int k = 0; k < n; k++) {
        lw__conn_free(c[k]);
        c[k] = NULL;
    }
}

static void *listen_main(void *unused)
{
    struct lw_backoff backoff = {LISTEN_MIN_MS, LISTEN_MAX_MS};
    const struct lw_settings *on = NULL;
    struct lw_conn *c[LW_ENDPOINTS_MAX] = {NULL};
    int k = 0, subscribed = 0;

    (void)unused;
    while (!__atomic_load_n(&listen_stop, __ATOMIC_ACQUIRE)) {
        const struct lw_settings *s = lw__settings();
        if (s->error != LW_OK || s->ep.topology != LW_TOPO_SENTINEL)
            break;     /* the next Sentinel configuration starts another */
        if (s != on) { /* what was learnt was of another configuration */
            close_all(c, LW_ENDPOINTS_MAX);
            on = s;
            k = 0;
            subscribed = 0;
        }
        if (!subscribed && subscribe(s, k, &c[k]) != LW_OK) {
            k = (k + 1) % s->ep.n;
            lw__gate_sleep_us(lw__backoff_step(&backoff) * 1000);
            continue;
        }
        subscribed = 1;
        backoff = (struct lw_backoff){LISTEN_MIN_MS, LISTEN_MAX_MS};
        if (listen_once(s, k, c[k]) != LW_OK) {
            subscribed = 0;
            k = (k + 1) % s->ep.n;
        }
    }
    close_all(c, LW_ENDPOINTS_MAX);
    /* Not under listen_mu: listen_end() holds it while it joins us. */
    __atomic_store_n(&listen_state, LISTEN_EXITED, __ATOMIC_RELEASE);
    return NULL;
}

/* Start the listener unless it runs: called on the way to a master, so a
 * forked child, which has none, starts its own. */
static void listen_start(void)
{
    if (__atomic_load_n(&listen_state, __ATOMIC_ACQUIRE) == LISTEN_RUNNING)
        return;
    init_once();
    pthread_mutex_lock(&listen_mu);
    if (__atomic_load_n(&listen_state, __ATOMIC_ACQUIRE) == LISTEN_EXITED) {
        pthread_join(listen_thread, NULL);
        __atomic_store_n(&listen_state, LISTEN_NONE, __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&listen_state, __ATOMIC_ACQUIRE) == LISTEN_NONE &&
        !__atomic_load_n(&listen_stop, __ATOMIC_RELAXED) &&
        lw__now_ms() >= listen_retry_ms) {
        if (lw__thread_spawn(&listen_thread, listen_main, NULL) == 0) {
            __atomic_store_n(&listen_state, LISTEN_RUNNING, __ATOMIC_RELEASE);
        } else {
            lw__log(LW_LOG_WARN, "Redis Sentinel: no thread to listen for "
                                 "+switch-master: a failover is learnt "
                                 "when a request fails");
            listen_retry_ms = lw__now_ms() + LISTEN_MAX_MS;
        }
    }
    pthread_mutex_unlock(&listen_mu);
}

static void listen_end(void)
{
    __atomic_store_n(&listen_stop, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&listen_mu);
    if (__atomic_load_n(&listen_state, __ATOMIC_ACQUIRE) != LISTEN_NONE)
        pthread_join(listen_thread, NULL);
    __atomic_store_n(&listen_state, LISTEN_NONE, __ATOMIC_RELAXED);
    listen_retry_ms = 0;
    pthread_mutex_unlock(&listen_mu);
    __atomic_store_n(&listen_stop, 0, __ATOMIC_RELEASE);
}

/* The master for s's next request in *out: the current one while it has
 * not failed, else the one the sentinels name now.  While no sentinel
 * answers, the last one known is still tried: its ROLE is checked when
 * connecting, and a demoted one refuses writes.  LW_OK; LW_R_BUSY (pause,
 * then ask again); or discover()'s error. */
static int master_for(const struct lw_settings *s, int64_t deadline_us,
                      struct master **out)
{
    struct master *m = load_current();
    int rc;

    listen_start();
    if (usable(m, s)) {
        *out = m;
        return LW_OK;
    }
    if (known_unknown(s))
        return LW_ECONFIG;
    rc = discover(s, m, deadline_us);
    m = load_current();
    if (m == NULL || m->cfg_gen != s->gen)
        return rc == LW_OK ? LW_EREDIS : rc;
    if (rc == LW_OK || rc == LW_EREDIS) {
        *out = m;
        return LW_OK;
    }
    return rc;
}

int lw__sentinel_master(const struct lw_settings *s, int64_t deadline_us,
                        const struct lw_url **out)
{
    struct lw_backoff backoff = {RETRY_MIN_US, RETRY_MAX_US};
    struct master *m;
    int rc;

    for (;;) {
        rc = master_for(s, deadline_us, &m);
        if (rc == LW_OK) {
            *out = &m->url;
            return LW_OK;
        }
        if (rc != LW_R_BUSY || lw__now_us() >= deadline_us ||
            lw__gate_sleep_us(lw__backoff_step(&backoff)))
            return rc == LW_R_BUSY ? LW_EREDIS : rc;
    }
}

/* What an error reply from the master means for the request. */
enum verdict {
    ANSWERED, /* the replies are the request's */
    ELSEWHERE /* not run: the master is not one now (or not yet): ask the
                 sentinels, and send it again */
};

/* The first error among out[0..n) that says the server cannot take the
 * request as master, in *why (for the log); else ANSWERED. */
static enum verdict classify(redisReply **out, int n, const char **why)
{
    static const struct {
        const char *prefix, *why;
    } moved[] = {
        {"READONLY", "answered READONLY (a replica now)"},
        {"NOREPLICAS", "answered NOREPLICAS (too few replicas to write)"},
        {"MASTERDOWN", "answered MASTERDOWN"},
        {"LOADING", "is loading its data"},
        {"UNBLOCKED", "unblocked a waiting read (its role changed)"},
    };

    for (int i = 0; i < n; i++) {
        if (out[i]->type != REDIS_REPLY_ERROR)
            continue;
        for (size_t k = 0; k < sizeof moved / sizeof moved[0]; k++)
            if (strncmp(out[i]->str, moved[k].prefix,
                        strlen(moved[k].prefix)) == 0) {
                *why = moved[k].why;
                return ELSEWHERE;
            }
    }
    return ANSWERED;
}

/* The earlier of two write times (0: none). */
static int64_t earlier(int64_t a, int64_t b)
{
    return a == 0 || (b != 0 && b < a) ? b : a;
}

int lw__sentinel_run(const struct lw_settings *s, const struct lw_request *q,
                     redisReply **out, int *replayed, int64_t *sent_us,
                     int64_t deadline_us)
{
    int n = lw__request_nreplies(q), rc;
    struct lw_request sent = *q;
    struct lw_backoff backoff = {RETRY_MIN_US, RETRY_MAX_US};

    *replayed = 0;
    *sent_us = 0;
    if (deadline_us == 0)
        deadline_us = lw__now_us() + (int64_t)s->command_timeout_ms * 1000;
    /* Error replies are read here first: some send the request elsewhere. */
    sent.flags |= LW_REQ_RAW_ERRORS;
    for (;;) {
        struct master *m;
        struct lw_conn *c;
        const char *why;
        int rep = 0;

        rc = master_for(s, deadline_us, &m);
        if (rc != LW_OK && rc != LW_R_BUSY)
            return rc;
        if (rc == LW_R_BUSY) {
            rc = LW_EREDIS;
            goto retry;
        }
        rc = lw__conn_thread_to(&m->url, &c);
        if (rc == LW_OK) {
            rc = lw__conn_run(c, &sent, out, &rep);
            /* What was answered ran when it was written; what was lost
             * with its connection may have. */
            *replayed |= rep || (rc == LW_EREDIS && c->sent_us != 0);
            if (rc == LW_OK || *replayed)
                *sent_us = earlier(*sent_us, c->sent_us);
        }
        if (rc == LW_EREDIS) {
            suspect(m, s, "cannot be reached");
            goto retry;
        }
        if (rc != LW_OK)
            return rc; /* LW_EAUTH, LW_ETLS, LW_ECONFIG: asking again
                          changes nothing */
        if (classify(out, n, &why) == ELSEWHERE) {
            lw__replies_free(out, n);
            /* A replica stays one: its connection is closed, and the next
             * one checks ROLE. */
            lw__conn_drop(c);
            suspect(m, s, why);
            rc = LW_EREDIS;
            goto retry;
        }
        if (q->flags & LW_REQ_RAW_ERRORS)
            return LW_OK; /* the caller's to read, and to log */
        for (int i = 0; i < n; i++)
            if (out[i]->type == REDIS_REPLY_ERROR) {
                int e = lw__conn_error_rc(out[i]);
                rc = rc == LW_OK ? e : rc;
            }
        if (rc != LW_OK)
            lw__replies_free(out, n);
        return rc;
    retry:
        if (lw__backoff_pause(&backoff, deadline_us) != 0)
            return rc; /* out of time, or lw_shutdown() */
    }
}

void lw__sentinel_shutdown(void)
{
    struct master *m;

    listen_end();
    pthread_mutex_lock(&publish_mu);
    m = current;
    current = NULL;
    pthread_mutex_unlock(&publish_mu);
    while (m != NULL) {
        struct master *older = m->older;
        lw__url_free(&m->url);
        free(m);
        m = older;
    }
    /* No thread asks now: lw_shutdown() runs with the gate closed. */
    close_conns();
    conns_gen = 0;
    asked_ms = 0;
    failing = 0;
    __atomic_store_n(&unknown_gen, 0, __ATOMIC_RELAXED);
}

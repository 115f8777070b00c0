/*
 * Redis Cluster routing (see route.h).  Each thread keeps one connection per
 * node it talks to, found by host and port, so no hiredis context is shared
 * and a reply always answers the request sent on it.
 */
#include "topology/route.h"

#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "topology/slotmap.h"
#include "base/stats.h"
#include "base/thread.h"

#define REFRESH_MIN_MS 100 /* CLUSTER SLOTS at most this often */
#define RETRY_MIN_US   10000
#define RETRY_MAX_US   200000
#define HOST_MAX       256
/* Redirections followed at once, one after another; past this, nodes that
 * send each other's clients back and forth (a slot both think the other
 * serves, for a moment) are asked again after a pause, not in a loop. */
#define REDIRECTS_MAX 8

/* This thread's connections to cluster nodes. */
struct lw_nodeconns {
    int n, cap;
    struct nodeconn {
        struct lw_url url; /* owned: the connection points at it */
        struct lw_conn *conn;
    } * v;
};

static int64_t last_refresh_ms;

static void nodes_free(void *p)
{
    struct lw_nodeconns *t = p;

    if (t == NULL)
        return;
    for (int i = 0; i < t->n; i++) {
        lw__conn_free(t->v[i].conn);
        lw__url_free(&t->v[i].url);
    }
    free(t->v);
    free(t);
}

void lw__route_thread_drop(void)
{
    struct lw_nodeconns *t = lw__thread()->res[LW_RES_NODES];

    for (int i = 0; t != NULL && i < t->n; i++)
        lw__conn_drop(t->v[i].conn);
}

/* This thread's connection to u (host and port), created on first use. */
static struct lw_conn *conn_to(const struct lw_url *u)
{
    struct lw_nodeconns *t = lw__thread()->res[LW_RES_NODES];
    struct nodeconn *nc;

    if (t == NULL) {
        if ((t = calloc(1, sizeof *t)) == NULL)
            return NULL;
        lw__thread_keep(LW_RES_NODES, t, nodes_free);
    }
    for (int i = 0; i < t->n; i++)
        if (t->v[i].url.port == u->port &&
            strcmp(t->v[i].url.host, u->host) == 0)
            return t->v[i].conn;
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 8;
        struct nodeconn *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return NULL;
        t->v = v;
        t->cap = cap;
    }
    nc = &t->v[t->n];
    if (lw__url_copy(&nc->url, u) != LW_OK)
        return NULL;
    nc->conn = lw__conn_new_to(&nc->url);
    if (nc->conn == NULL) {
        lw__url_free(&nc->url);
        return NULL;
    }
    /* The url moves with realloc; connections are re-pointed there. */
    t->n++;
    for (int i = 0; i < t->n; i++)
        t->v[i].conn->url = &t->v[i].url;
    return nc->conn;
}

/* The configuration (lw_settings.gen) whose seed said it is no cluster
 * node, and until when to believe it without asking again: every call then
 * fails at once with LW_ECONFIG instead of retrying for its whole wait. */
static unsigned not_cluster_gen;
static int64_t not_cluster_until_ms;
#define NOT_CLUSTER_RECHECK_MS 1000

static int not_a_cluster(const struct lw_settings *s, const struct lw_url *u,
                         const redisReply *r)
{
    char where[256];

    if (__atomic_exchange_n(&not_cluster_gen, s->gen, __ATOMIC_RELAXED) !=
        s->gen) {
        lw__url_describe(u, where, sizeof where);
        lw__log(LW_LOG_ERROR,
                "LOCKWEAVE_REDIS_URL is redis+cluster:// but %s is not a "
                "Redis Cluster node (%s): use redis:// for one server",
                where, r->str);
    }
    __atomic_store_n(&not_cluster_until_ms,
                     lw__now_ms() + NOT_CLUSTER_RECHECK_MS, __ATOMIC_RELAXED);
    return LW_ECONFIG;
}

static int known_not_cluster(const struct lw_settings *s)
{
    return __atomic_load_n(&not_cluster_gen, __ATOMIC_RELAXED) == s->gen &&
           lw__now_ms() <
               __atomic_load_n(&not_cluster_until_ms, __ATOMIC_RELAXED);
}

/* Ask node u for CLUSTER SLOTS and publish the map.  LW_OK or why not. */
static int learn_from(const struct lw_settings *s, const struct lw_url *u)
{
    static const char *argv[] = {"CLUSTER", "SLOTS"};
    static const size_t lens[] = {7, 5};
    struct lw_cmd cmd = {2, argv, lens};
    struct lw_request q = {
        .cmds = &cmd, .ncmds = 1, .flags = LW_REQ_RAW_ERRORS};
    struct lw_conn *c = conn_to(u);
    struct lw_slotmap *m;
    redisReply *r;
    int rc, replayed;

    if (c == NULL)
        return LW_ENOMEM;
    rc = lw__conn_run(c, &q, &r, &replayed);
    if (rc != LW_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) {
        rc = strstr(r->str, "cluster support disabled") != NULL
                 ? not_a_cluster(s, u, r)
                 : LW_EREDIS;
        if (rc != LW_ECONFIG)
            lw__conn_log_error(r);
        freeReplyObject(r);
        return rc;
    }
    rc = lw__slotmap_parse(r, u, &s->ep.urls[0], s->gen, &m);
    freeReplyObject(r);
    if (rc == LW_OK)
        lw__slotmap_publish(m);
    return rc;
}

/* Try every known master, then every seed, until one answers. */
static int learn(const struct lw_settings *s)
{
    const struct lw_slotmap *m = lw__slotmap_current();
    int rc = LW_EREDIS;

    if (m != NULL && m->cfg_gen == s->gen)
        for (int i = 0; i < m->nnodes && rc != LW_OK && rc != LW_ENOMEM; i++)
            rc = learn_from(s, &m->nodes[i]);
    for (int i = 0;
         i < s->ep.n && rc != LW_OK && rc != LW_ENOMEM && rc != LW_ECONFIG; i++)
        rc = learn_from(s, &s->ep.urls[i]);
    if (rc != LW_OK && rc != LW_ECONFIG)
        lw__log(LW_LOG_WARN, "Redis Cluster: no node told the slot map (%s)",
                lw_strerror(rc));
    return rc;
}

int lw__route_refresh(const struct lw_settings *s)
{
    const struct lw_slotmap *before = lw__slotmap_current();
    int64_t now = lw__now_ms();
    int64_t last = __atomic_load_n(&last_refresh_ms, __ATOMIC_RELAXED);

    /* One thread refreshes per period; the others use what it learns. */
    if (before != NULL && before->cfg_gen == s->gen &&
        (now - last < REFRESH_MIN_MS ||
         !__atomic_compare_exchange_n(&last_refresh_ms, &last, now, 0,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)))
        return lw__slotmap_current() != before ? LW_OK : LW_EREDIS;
    __atomic_store_n(&last_refresh_ms, now, __ATOMIC_RELAXED);
    return learn(s);
}

/* The current map for s, learnt first if there is none for it. */
static const struct lw_slotmap *map_for(const struct lw_settings *s)
{
    const struct lw_slotmap *m = lw__slotmap_current();

    if (m == NULL || m->cfg_gen != s->gen) {
        lw__route_refresh(s);
        m = lw__slotmap_current();
    }
    return m != NULL && m->cfg_gen == s->gen ? m : NULL;
}

/* What a request's replies tell the router to do. */
enum reply_kind {
    REPLY_OK,
    REPLY_ERROR,
    REPLY_MOVED,
    REPLY_ASK,
    REPLY_RETRY,
    REPLY_SPLIT /* TRYAGAIN: a script's keys are split by a migration */
};

/* What the replies say; for MOVED and ASK, the node they name in *to (host
 * in hostbuf, credentials of the seeds). */
static enum reply_kind classify(redisReply **out, int n,
                                const struct lw_url *from, struct lw_url *to,
                                char *hostbuf)
{
    for (int i = 0; i < n; i++) {
        const char *e = out[i]->str, *sp, *colon;
        int moved;
        if (out[i]->type != REDIS_REPLY_ERROR)
            continue;
        lw__log(LW_LOG_DEBUG, "Redis Cluster: %s", e);
        if (strncmp(e, "TRYAGAIN", 8) == 0)
            return REPLY_SPLIT;
        if (strncmp(e, "CLUSTERDOWN", 11) == 0 ||
            strncmp(e, "LOADING", 7) == 0 || strncmp(e, "MASTERDOWN", 10) == 0)
            return REPLY_RETRY;
        moved = strncmp(e, "MOVED ", 6) == 0;
        if (!moved && strncmp(e, "ASK ", 4) != 0)
            return REPLY_ERROR;
        /* "MOVED <slot> <host>:<port>"; an empty host is the one asked. */
        sp = strchr(e + (moved ? 6 : 4), ' ');
        colon = sp ? strrchr(sp, ':') : NULL;
        if (colon == NULL || colon - sp - 1 >= HOST_MAX) {
            lw__conn_log_error(out[i]);
            return REPLY_ERROR;
        }
        *to = *from;
        to->host = hostbuf;
        if (colon > sp + 1) {
            memcpy(hostbuf, sp + 1, (size_t)(colon - sp - 1));
            hostbuf[colon - sp - 1] = '\0';
        } else if (from->host != hostbuf) {
            snprintf(hostbuf, HOST_MAX, "%s", from->host);
        }
        to->port = atoi(colon + 1);
        return moved ? REPLY_MOVED : REPLY_ASK;
    }
    return REPLY_OK;
}

/* The earlier of two write times (0: none). */
static int64_t earlier(int64_t a, int64_t b)
{
    return a == 0 || (b != 0 && b < a) ? b : a;
}

/* One more redirection in a row: past REDIRECTS_MAX, the request fails
 * this round (*rc), to be retried after the backoff's pause. */
static int too_many_redirects(int *redirects, int slot, int *rc)
{
    if (++*redirects <= REDIRECTS_MAX)
        return 0;
    lw__log(LW_LOG_INFO,
            "Redis Cluster: slot %d redirected %d times in a row; asking "
            "again after a pause",
            slot, REDIRECTS_MAX);
    *redirects = 0;
    *rc = LW_EREDIS;
    return 1;
}

int lw__route_run(const struct lw_settings *s, int slot,
                  const struct lw_request *q, redisReply **out, int *replayed,
                  int64_t *sent_us, int64_t deadline_us)
{
    int n = lw__request_nreplies(q);
    struct lw_request sent = *q;
    int asking = 0, rc = LW_EREDIS;
    struct lw_backoff backoff = {RETRY_MIN_US, RETRY_MAX_US};
    struct lw_url to, target;
    char hostbuf[HOST_MAX];
    int redirected = 0, redirects = 0;

    *replayed = 0;
    *sent_us = 0;
    if (known_not_cluster(s))
        return LW_ECONFIG;
    if (deadline_us == 0)
        deadline_us = lw__now_us() + (int64_t)s->command_timeout_ms * 1000;
    for (;;) {
        const struct lw_slotmap *m = redirected ? NULL : map_for(s);
        struct lw_conn *c;
        int rep = 0;
        if (known_not_cluster(s))
            return LW_ECONFIG;
        if (!redirected) {
            if (m == NULL || m->owner[slot] == LW_SLOT_UNSERVED) {
                rc = LW_EREDIS; /* no map, or a failover in progress */
                goto retry;
            }
            target = m->nodes[m->owner[slot]];
        }
        redirected = 0;
        c = conn_to(&target);
        if (c == NULL)
            return LW_ENOMEM;
        /* Redirections are read here: error replies come back raw. */
        sent.flags =
            q->flags | LW_REQ_RAW_ERRORS | (asking ? LW_REQ_ASKING : 0);
        rc = lw__conn_run(c, &sent, out, &rep);
        asking = 0;
        *replayed |= rep;
        /* What was answered ran when it was written; what was lost with
         * its connection may have.  Redirections and TRYAGAIN did not. */
        if (rep || rc == LW_EREDIS)
            *sent_us = earlier(*sent_us, c->sent_us);
        if (rc == LW_EREDIS) {
            /* Unreachable node (a killed master?): the map may be stale, and
             * the request may have run there before the link broke. */
            *replayed = 1;
            lw__route_refresh(s);
            goto retry;
        }
        if (rc != LW_OK)
            return rc;
        switch (classify(out, n, &target, &to, hostbuf)) {
        case REPLY_OK:
            *sent_us = earlier(*sent_us, c->sent_us);
            return LW_OK;
        case REPLY_ERROR:
            *sent_us = earlier(*sent_us, c->sent_us);
            if (q->flags & LW_REQ_RAW_ERRORS)
                return LW_OK; /* the caller's to read, and to log */
            rc = LW_OK;
            for (int i = 0; i < n; i++)
                if (out[i]->type == REDIS_REPLY_ERROR) {
                    int e = lw__conn_error_rc(out[i]);
                    rc = rc == LW_OK ? e : rc;
                }
            lw__replies_free(out, n);
            return rc;
        case REPLY_MOVED:
            lw__replies_free(out, n);
            lw__route_refresh(s);
            if (too_many_redirects(&redirects, slot, &rc))
                break;
            target = to;
            redirected = 1;
            continue; /* the slot is served elsewhere: go there now */
        case REPLY_ASK:
            lw__replies_free(out, n);
            if (q->script == NULL)
                return LW_R_ASKED;
            if (too_many_redirects(&redirects, slot, &rc))
                break;
            target = to;
            redirected = 1;
            asking = 1;
            continue;
        case REPLY_SPLIT:
            lw__replies_free(out, n);
            /* Until the migration ends, a script whose keys do not all
             * exist on one node is refused; one that can be sent a key at
             * a time need not wait for that. */
            if (q->flags & LW_REQ_SPLIT_OK)
                return LW_R_SPLIT;
            rc = LW_EREDIS;
            break;
        case REPLY_RETRY:
            lw__replies_free(out, n);
            rc = LW_EREDIS;
            break;
        }
    retry:
        if (lw__backoff_pause(&backoff, deadline_us) != 0)
            return rc; /* out of time, or lw_shutdown() */
    }
}

void lw__route_shutdown(void)
{
    lw__slotmap_free_all();
    __atomic_store_n(&last_refresh_ms, 0, __ATOMIC_RELAXED);
}

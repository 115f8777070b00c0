/* What the runtime lends an operator's tool (admin.h): each call is the
 * runtime's own, behind types the tool can hold without seeing inside. */
#include "tool/admin.h"

#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/url.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/queue.h"
#include "core/scripts.h"
#include "core/send.h"
#include "net/conn.h"
#include "net/handshake.h"
#include "topology/route.h"
#include "topology/sentinel.h"
#include "topology/slotmap.h"

/* admin.h repeats these numbers so that a tool needs no other header. */
_Static_assert((int)LW_ADMIN_SINGLE == (int)LW_TOPO_SINGLE &&
                   (int)LW_ADMIN_CLUSTER == (int)LW_TOPO_CLUSTER &&
                   (int)LW_ADMIN_REDLOCK == (int)LW_TOPO_REDLOCK,
               "admin.h's topologies are base/url.h's");
_Static_assert(LW_ADMIN_MASTERS_MAX == LW_ENDPOINTS_MAX,
               "admin.h's most masters are base/url.h's");
_Static_assert(LW_ADMIN_KIND_READERS == LW_KIND_READERS &&
                   LW_ADMIN_KIND_PERMITS == LW_KIND_PERMITS &&
                   LW_ADMIN_KIND_SHARED == LW_KIND_SHARED,
               "admin.h's kind flags are core/kind.h's");

#define ADMIN_KIND_FLAGS                                                       \
    (LW_ADMIN_KIND_READERS | LW_ADMIN_KIND_PERMITS | LW_ADMIN_KIND_SHARED)

int lw__admin_url_check(const char *url, char *err, size_t errlen)
{
    struct lw_endpoints ep;
    int rc = lw__endpoints_parse(url, &ep, err, errlen);

    if (rc == LW_OK)
        lw__endpoints_free(&ep);
    return rc;
}

int lw__admin_config(struct lw_admin_config *c)
{
    const struct lw_settings *s = lw__settings();

    if (s->error != LW_OK)
        return s->error;
    c->s = s;
    c->prefix = s->prefix;
    c->prefix_len = s->prefix_len;
    /* Behind Sentinel the locks are on one server at a time, the master;
     * lw__admin_masters() names it and requests follow it. */
    c->topology =
        s->ep.topology == LW_TOPO_SENTINEL ? LW_ADMIN_SINGLE : s->ep.topology;
    return LW_OK;
}

void lw__admin_no_acl_check(void)
{
    lw__handshake_acl_check(0);
}

/* A Cluster's masters, from the slot map learnt again now: into *urls. */
static int cluster_masters(const struct lw_settings *s,
                           const struct lw_url **urls, int *n)
{
    int rc = lw__route_refresh(s);
    const struct lw_slotmap *m = lw__slotmap_current();

    if (m == NULL || m->cfg_gen != s->gen)
        return rc != LW_OK ? rc : LW_EREDIS;
    *urls = m->nodes;
    *n = m->nnodes;
    return LW_OK;
}

int lw__admin_masters(const struct lw_admin_config *c,
                      const struct lw_url ***out, int *n)
{
    const struct lw_settings *s = c->s;
    const struct lw_url *urls = s->ep.urls;
    int rc = LW_OK;

    *out = NULL;
    *n = s->ep.topology == LW_TOPO_REDLOCK ? s->ep.n : 1;
    if (s->ep.topology == LW_TOPO_CLUSTER)
        rc = cluster_masters(s, &urls, n);
    if (s->ep.topology == LW_TOPO_SENTINEL)
        rc = lw__sentinel_master(
            s, lw__now_us() + (int64_t)s->command_timeout_ms * 1000, &urls);
    if (rc != LW_OK)
        return rc;
    *out = malloc((size_t)*n * sizeof **out);
    if (*out == NULL)
        return LW_ENOMEM;
    for (int i = 0; i < *n; i++)
        (*out)[i] = &urls[i];
    return LW_OK;
}

void lw__admin_describe(const struct lw_url *u, char *buf, size_t len)
{
    lw__url_describe(u, buf, len);
}

/* A pipeline as net/ sends it: a copy of cmds, which the caller frees
 * (NULL on out-of-memory). */
static struct lw_cmd *cmds_in(const struct lw_admin_cmd *cmds, int n)
{
    struct lw_cmd *v = calloc((size_t)n + 1, sizeof *v);

    for (int i = 0; v != NULL && i < n; i++)
        v[i] = (struct lw_cmd){cmds[i].argc, cmds[i].argv, cmds[i].lens};
    return v;
}

int lw__admin_send_key(const struct lw_admin_config *c, const char *key,
                       size_t keylen, const struct lw_admin_cmd *cmds,
                       int ncmds, redisReply **replies)
{
    struct lw_cmd *v = cmds_in(cmds, ncmds);
    struct lw_request q = {
        .cmds = v, .ncmds = ncmds, .flags = LW_REQ_RAW_ERRORS};
    struct lw_target t;
    int replayed = 0, rc;

    if (v == NULL)
        return LW_ENOMEM;
    rc = lw__target_for(&t, c->s, key, keylen);
    if (rc == LW_OK)
        rc = lw__send(&t, &q, 0, replies, &replayed);
    /* A pipeline met by ASK (its slot migrating): read-only, so the map is
     * refreshed and it is sent once more. */
    if (rc > 0 && lw__route_refresh(c->s) == LW_OK)
        rc = lw__send(&t, &q, 0, replies, &replayed);
    free(v);
    return rc > 0 ? LW_EREDIS : rc;
}

/* q to server u on *conn, opened on first use. */
static int run_to(const struct lw_url *u, struct lw_conn **conn,
                  const struct lw_request *q, redisReply **replies)
{
    int replayed = 0;

    if (*conn == NULL && (*conn = lw__conn_new_to(u)) == NULL)
        return LW_ENOMEM;
    return lw__conn_run(*conn, q, replies, &replayed);
}

int lw__admin_send_to(const struct lw_url *u, struct lw_conn **conn,
                      const struct lw_admin_cmd *cmds, int ncmds,
                      redisReply **replies)
{
    struct lw_cmd *v = cmds_in(cmds, ncmds);
    struct lw_request q = {
        .cmds = v, .ncmds = ncmds, .flags = LW_REQ_RAW_ERRORS};
    int rc;

    if (v == NULL)
        return LW_ENOMEM;
    rc = run_to(u, conn, &q, replies);
    free(v);
    return rc;
}

void lw__admin_conn_free(struct lw_conn *conn)
{
    if (conn != NULL)
        lw__conn_free(conn);
}

void lw__admin_replies_free(redisReply **r, int n)
{
    lw__replies_free(r, n);
}

int lw__admin_names(const struct lw_admin_config *c, const char *key,
                    size_t len, size_t prefix_len, struct lw_admin_names *n)
{
    struct lw_names *own = malloc(sizeof *own);
    int rc;

    n->own = NULL;
    if (own == NULL)
        return LW_ENOMEM;
    rc = lw__names_init(own, key, len, prefix_len,
                        c->s->ep.topology == LW_TOPO_CLUSTER);
    if (rc != LW_OK) {
        free(own);
        return rc;
    }
    n->queue = own->queue, n->queuelen = own->queuelen;
    n->fence = own->fence, n->fencelen = own->fencelen;
    n->alive = own->alive, n->alivelen = own->alivelen;
    n->readers = own->readers, n->readerslen = own->readerslen;
    n->own = own;
    return LW_OK;
}

void lw__admin_names_free(struct lw_admin_names *n)
{
    if (n->own != NULL) {
        lw__names_free(n->own);
        free(n->own);
        n->own = NULL;
    }
}

int lw__admin_companion(const char *name, size_t len, const char *prefix,
                        size_t prefix_len)
{
    return lw__names_companion(name, len, prefix, prefix_len);
}

int lw__admin_kind_of(const redisReply *get, struct lw_admin_kind *k)
{
    const struct lw_kind *kind = lw__kind_of(get);
    const struct lw_kind *shown = kind != NULL ? kind : &lw__kind_mutex;

    k->name = shown->name;
    k->noun = shown->noun;
    k->flags = shown->flags & ADMIN_KIND_FLAGS;
    return kind != NULL;
}

int lw__admin_once(const redisReply *get, const char **result, size_t *len)
{
    int m;

    *result = NULL;
    *len = 0;
    if (get == NULL || get->type != REDIS_REPLY_STRING)
        return 0;
    m = lw__once_mark(get->str, get->len, result, len);
    return m == LW_ONCE_DONE      ? LW_ADMIN_ONCE_DONE
           : m == LW_ONCE_RUNNING ? LW_ADMIN_ONCE_RUNNING
                                  : 0;
}

int lw__admin_release(const struct lw_admin_config *c, const char *key,
                      size_t keylen, const char *token, size_t toklen,
                      const struct lw_admin_names *n, redisReply **r,
                      int *replayed)
{
    *r = NULL;
    return lw__release_send(c->s, key, keylen, token, toklen, n->own,
                            LW_RELEASE_NO_RECEIPT, 0, r, replayed);
}

int lw__admin_release_one(const struct lw_url *u, struct lw_conn **conn,
                          const char *key, size_t keylen, const char *token,
                          size_t toklen, redisReply **r)
{
    const char *argv[] = {key, token};
    size_t lens[] = {keylen, toklen};
    struct lw_request q = {.script = &lw__script_onekey,
                           .nkeys = 1,
                           .nargs = 1,
                           .argv = argv,
                           .lens = lens};

    *r = NULL;
    return run_to(u, conn, &q, r);
}

static const char *client_list_argv[] = {"CLIENT", "LIST", "TYPE", "normal"};
static const size_t client_list_lens[] = {6, 4, 4, 6};
const struct lw_admin_cmd lw__admin_client_list = {4, client_list_argv,
                                                   client_list_lens};

/* Field name's value in line (CLIENT LIST's "k=v" words, space-separated;
 * a name holds no space) into out, cap bytes; 1 when there. */
static int client_field(const char *line, size_t n, const char *name, char *out,
                        size_t cap)
{
    size_t nl = strlen(name);

    for (const char *p = line, *end = line + n; p < end;) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        size_t w = sp != NULL ? (size_t)(sp - p) : (size_t)(end - p);
        if (w > nl && memcmp(p, name, nl) == 0 && p[nl] == '=') {
            size_t v = w - nl - 1 < cap - 1 ? w - nl - 1 : cap - 1;
            memcpy(out, p + nl + 1, v);
            out[v] = '\0';
            return 1;
        }
        p += w + 1;
    }
    return 0;
}

int lw__admin_holder(const redisReply *list, const char *token, size_t toklen,
                     struct lw_admin_holder *h)
{
    struct lw_client_name cn;
    char name[256], num[32];
    const char *p, *end;

    memset(h, 0, sizeof *h);
    if (list->type != REDIS_REPLY_STRING)
        return LW_EREDIS;
    if (toklen < sizeof cn.tag - 1)
        return LW_OK;
    for (p = list->str, end = list->str + list->len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        if (client_field(p, n, "name", name, sizeof name) &&
            lw__client_name_parse(name, strlen(name), &cn) &&
            memcmp(cn.tag, token, sizeof cn.tag - 1) == 0) {
            h->found = 1;
            snprintf(h->host, sizeof h->host, "%s", cn.host);
            h->pid = cn.pid;
            h->tid = cn.tid;
            client_field(p, n, "addr", h->addr, sizeof h->addr);
            if (client_field(p, n, "age", num, sizeof num))
                h->age_s = strtoll(num, NULL, 10);
            if (client_field(p, n, "idle", num, sizeof num))
                h->idle_s = strtoll(num, NULL, 10);
            return LW_OK;
        }
        p += n + 1;
    }
    return LW_OK;
}

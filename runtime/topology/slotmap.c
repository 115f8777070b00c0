/* The process-wide slot map: built from CLUSTER SLOTS, swapped in whole. */
#include "topology/slotmap.h"

#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#define NODES_MAX 1024

static struct lw_slotmap *current;
static uint64_t last_version;

static void slotmap_free(struct lw_slotmap *m)
{
    for (int i = 0; i < m->nnodes; i++)
        lw__url_free(&m->nodes[i]);
    free(m->nodes);
    free(m);
}

/* Index of host:port in m, added with cred's AUTH if new; -1 on OOM. */
static int node_index(struct lw_slotmap *m, const char *host, size_t hostlen,
                      int port, const struct lw_url *cred)
{
    struct lw_url *u;

    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port == port && strlen(m->nodes[i].host) == hostlen &&
            memcmp(m->nodes[i].host, host, hostlen) == 0)
            return i;
    if (m->nnodes == NODES_MAX)
        return -1;
    u = &m->nodes[m->nnodes];
    memset(u, 0, sizeof *u);
    u->port = port;
    u->tls = cred->tls; /* every node of a rediss+cluster:// is TLS */
    u->host = strndup(host, hostlen);
    u->user = cred->user ? strdup(cred->user) : NULL;
    u->password = cred->password ? strdup(cred->password) : NULL;
    if (u->host == NULL || (cred->user && u->user == NULL) ||
        (cred->password && u->password == NULL)) {
        lw__url_free(u);
        return -1;
    }
    return m->nnodes++;
}

/* One CLUSTER SLOTS entry: [start, end, [host, port, id...], replicas...].
 * LW_OK, LW_EREDIS or LW_ENOMEM. */
static int add_range(struct lw_slotmap *m, const redisReply *e,
                     const struct lw_url *asked, const struct lw_url *cred)
{
    const redisReply *master;
    const char *host;
    size_t hostlen;
    int idx;

    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[0]->type != REDIS_REPLY_INTEGER ||
        e->element[1]->type != REDIS_REPLY_INTEGER ||
        e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
        return LW_EREDIS;
    master = e->element[2];
    if (master->element[0]->type != REDIS_REPLY_STRING ||
        master->element[1]->type != REDIS_REPLY_INTEGER)
        return LW_EREDIS;
    host = master->element[0]->str;
    hostlen = master->element[0]->len;
    /* An empty or "?" host means "the address you reached me on". */
    if (hostlen == 0 || (hostlen == 1 && host[0] == '?')) {
        host = asked->host;
        hostlen = strlen(asked->host);
    }
    idx = node_index(m, host, hostlen, (int)master->element[1]->integer, cred);
    if (idx < 0)
        return LW_ENOMEM;
    for (long long s = e->element[0]->integer;
         s <= e->element[1]->integer && s < LW_SLOTS; s++)
        if (s >= 0)
            m->owner[s] = (uint16_t)idx;
    return LW_OK;
}

int lw__slotmap_parse(const redisReply *r, const struct lw_url *asked,
                      const struct lw_url *cred, unsigned cfg_gen,
                      struct lw_slotmap **out)
{
    struct lw_slotmap *m;
    int rc = LW_OK;

    *out = NULL;
    if (r->type != REDIS_REPLY_ARRAY)
        return LW_EREDIS;
    m = calloc(1, sizeof *m);
    if (m == NULL || (m->nodes = calloc(NODES_MAX, sizeof *m->nodes)) == NULL) {
        free(m);
        return LW_ENOMEM;
    }
    m->cfg_gen = cfg_gen;
    for (int s = 0; s < LW_SLOTS; s++)
        m->owner[s] = LW_SLOT_UNSERVED;
    for (size_t i = 0; rc == LW_OK && i < r->elements; i++)
        rc = add_range(m, r->element[i], asked, cred);
    if (rc != LW_OK) {
        slotmap_free(m);
        return rc;
    }
    *out = m;
    return LW_OK;
}

const struct lw_slotmap *lw__slotmap_current(void)
{
    return __atomic_load_n(&current, __ATOMIC_ACQUIRE);
}

/* Lock-free, so a fork() at any moment leaves the child a usable map. */
void lw__slotmap_publish(struct lw_slotmap *m)
{
    struct lw_slotmap *old = __atomic_load_n(&current, __ATOMIC_ACQUIRE);

    m->version = __atomic_add_fetch(&last_version, 1, __ATOMIC_RELAXED);
    do
        m->older = old;
    while (!__atomic_compare_exchange_n(&current, &old, m, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
}

void lw__slotmap_free_all(void)
{
    struct lw_slotmap *m =
        __atomic_exchange_n(&current, NULL, __ATOMIC_ACQ_REL);

    while (m != NULL) {
        struct lw_slotmap *older = m->older;
        slotmap_free(m);
        m = older;
    }
}

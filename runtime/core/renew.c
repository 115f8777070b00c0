/* The queue backend's renewals: many leases per script call, one call per
 * configuration, kind and server (per slot in a cluster: a script's keys
 * must share one); a kind without a batch script renews each lease alone.
 * Runs on the watchdog thread; what one round needs lives in a struct on
 * its stack. */
#include <lockweave.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "core/kind.h"
#include "core/queue.h"
#include "core/send.h"
#include "core/watchdog.h"
#include "topology/slot.h"

/* One lease of the round, and where its result goes. */
struct item {
    struct lw_hold *l;
    int i;    /* its index in the round's v and results */
    int slot; /* its key's slot in a cluster, -1 with one server */
};

/* A round: its leases sorted into groups, and one call's arguments. */
struct round {
    struct item items[LW_WATCHDOG_BATCH_MAX];
    const char *argv[3 * LW_WATCHDOG_BATCH_MAX];
    size_t lens[3 * LW_WATCHDOG_BATCH_MAX];
};

/* Renew the m leases at it (one cfg, kind, server or slot) in one call of
 * their kind's batch script: results LW_OK, LW_ELOST, or left alone when no
 * usable answer came. */
static void renew_group(struct round *rd, const struct item *it, int m,
                        int *results)
{
    const struct lw_hold *first = it[0].l;
    struct lw_request q = {.script = first->kind->renew,
                           .nkeys = m,
                           .nargs = 2 * m,
                           .argv = rd->argv,
                           .lens = rd->lens,
                           .flags = m > 1 ? LW_REQ_SPLIT_OK : 0};
    struct lw_target to;
    redisReply *r = NULL;
    int replayed, rc;

    for (int j = 0; j < m; j++) {
        const struct lw_hold *l = it[j].l;
        rd->argv[j] = l->key;
        rd->lens[j] = l->keylen;
        rd->argv[m + j] = l->token;
        rd->lens[m + j] = (size_t)l->toklen;
        rd->argv[2 * m + j] = l->expire_str;
        rd->lens[2 * m + j] = (size_t)l->expire_len;
    }
    /* On the watchdog thread, the thread's connection is the watchdog's
     * own: a renewal never waits behind a guarded thread's BLPOP. */
    rc = lw__target_for(&to, first->cfg, first->key, first->keylen);
    if (rc == LW_OK)
        rc = lw__send(&to, &q, lw__now_us() + LW_RENEW_TRY_MS * 1000, &r,
                      &replayed);
    if (rc == LW_R_SPLIT) {
        /* A migration has moved some of these keys and not others: each
         * alone is always on one node. */
        for (int j = 0; j < m; j++)
            renew_group(rd, it + j, 1, results);
        return;
    }
    if (rc != LW_OK)
        return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)m)
        for (int j = 0; j < m; j++)
            if (r->element[j]->type == REDIS_REPLY_INTEGER)
                results[it[j].i] =
                    r->element[j]->integer == 1 ? LW_OK : LW_ELOST;
    freeReplyObject(r);
}

/* Leases of one call together: by configuration, kind, then slot. */
static int by_group(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;

    if (a->l->cfg != b->l->cfg)
        return a->l->cfg < b->l->cfg ? -1 : 1;
    if (a->l->kind != b->l->kind)
        return a->l->kind < b->l->kind ? -1 : 1;
    return a->slot - b->slot;
}

static int same_group(const struct item *a, const struct item *b)
{
    return by_group(a, b) == 0;
}

void lw__queue_renew(struct lw_hold *const *v, int n, int *results)
{
    struct round rd;

    for (int i = 0; i < n; i++) {
        results[i] = LW_EREDIS;
        rd.items[i] =
            (struct item){.l = v[i],
                          .i = i,
                          .slot = v[i]->cfg->ep.topology == LW_TOPO_CLUSTER
                                      ? lw__key_slot(v[i]->key, v[i]->keylen)
                                      : -1};
    }
    qsort(rd.items, (size_t)n, sizeof *rd.items, by_group);
    for (int j = 0; j < n;) {
        int k = j + 1;
        if (rd.items[j].l->kind->renew == NULL) {
            results[rd.items[j].i] =
                rd.items[j].l->kind->renew_one(rd.items[j].l);
            j = k;
            continue;
        }
        while (k < n && same_group(&rd.items[k], &rd.items[j]))
            k++;
        renew_group(&rd, rd.items + j, k - j, results);
        j = k;
    }
}

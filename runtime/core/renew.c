/* The queue backend's renewals: many leases per script call, one call per
 * configuration and server (per slot in a cluster: a script's keys must
 * share one).  Runs on the watchdog thread only, which owns the static
 * buffers below. */
#include <lockweave.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/queue.h"
#include "core/scripts.h"
#include "core/send.h"
#include "core/watchdog.h"
#include "topology/slot.h"

#define RENEW_TRY_MS                                                           \
    250 /* one call's cluster redirects and retries, at most                   \
         */

static struct lw_lease *const *sort_v;
static int slot_of[LW_WATCHDOG_BATCH_MAX];

/* Renew v[pos[0..m)] (one cfg, one server or slot) in one script call:
 * results LW_OK, LW_ELOST, or left alone when no usable answer came. */
static void renew_group(struct lw_lease *const *v, const int *pos, int m,
                        int *results)
{
    static const char *argv[3 * LW_WATCHDOG_BATCH_MAX];
    static size_t lens[3 * LW_WATCHDOG_BATCH_MAX];
    const struct lw_lease *first = v[pos[0]];
    struct lw_request q = {.script = first->permits > 0 ? &lw__script_sem_renew
                                                        : &lw__script_renew,
                           .nkeys = m,
                           .nargs = 2 * m,
                           .argv = argv,
                           .lens = lens,
                           .flags = m > 1 ? LW_REQ_SPLIT_OK : 0};
    struct lw_target to;
    redisReply *r = NULL;
    int replayed, rc;

    for (int j = 0; j < m; j++) {
        const struct lw_lease *l = v[pos[j]];
        argv[j] = l->key;
        lens[j] = l->keylen;
        argv[m + j] = l->token;
        lens[m + j] = (size_t)l->toklen;
        argv[2 * m + j] = l->expire_str;
        lens[2 * m + j] = (size_t)l->expire_len;
    }
    /* On the watchdog thread, the thread's connection is the watchdog's
     * own: a renewal never waits behind a guarded thread's BLPOP. */
    rc = lw__target_for(&to, first->cfg, first->key, first->keylen);
    if (rc == LW_OK)
        rc = lw__send(&to, &q, lw__now_us() + RENEW_TRY_MS * 1000, &r,
                      &replayed);
    if (rc == LW_R_SPLIT) {
        /* A migration has moved some of these keys and not others: each
         * alone is always on one node. */
        for (int j = 0; j < m; j++)
            renew_group(v, pos + j, 1, results);
        return;
    }
    if (rc != LW_OK)
        return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)m)
        for (int j = 0; j < m; j++)
            if (r->element[j]->type == REDIS_REPLY_INTEGER)
                results[pos[j]] =
                    r->element[j]->integer == 1 ? LW_OK : LW_ELOST;
    freeReplyObject(r);
}

/* A script about one lease (KEYS then ARGV in argv), to the node of
 * argv[0]'s slot: LW_OK with *v its integer reply, LW_R_SPLIT (flags
 * LW_REQ_SPLIT_OK), or LW_EREDIS when no usable answer came. */
static int renew_one(const struct lw_lease *l, struct lw_script *script,
                     int nkeys, int nargs, const char *const *argv,
                     const size_t *lens, int flags, long long *v)
{
    struct lw_target to;
    redisReply *r = NULL;
    int replayed, rc;

    rc = lw__target_for(&to, l->cfg, argv[0], lens[0]);
    if (rc == LW_OK)
        rc = lw__send(&to,
                      &(struct lw_request){.script = script,
                                           .nkeys = nkeys,
                                           .nargs = nargs,
                                           .argv = argv,
                                           .lens = lens,
                                           .flags = flags},
                      lw__now_us() + RENEW_TRY_MS * 1000, &r, &replayed);
    if (rc == LW_R_SPLIT)
        return rc;
    if (rc != LW_OK)
        return LW_EREDIS;
    rc = r->type == REDIS_REPLY_INTEGER ? LW_OK : LW_EREDIS;
    *v = r->integer;
    freeReplyObject(r);
    return rc;
}

/* A read lock, alone: its readers' set is a second key.  LW_OK, LW_ELOST,
 * or LW_EREDIS when no usable answer came. */
static int renew_reader(const struct lw_lease *l)
{
    struct lw_names n;
    long long v = 0;
    int rc;

    rc = lw__names_init(&n, l->key, l->keylen, l->prefix_len,
                        l->cfg->ep.topology == LW_TOPO_CLUSTER);
    if (rc != LW_OK)
        return rc;
    const char *argv[] = {l->key, n.readers, l->token, l->expire_str};
    size_t lens[] = {l->keylen, n.readerslen, (size_t)l->toklen,
                     (size_t)l->expire_len};
    rc = renew_one(l, &lw__script_rw_renew, 2, 2, argv, lens, LW_REQ_SPLIT_OK,
                   &v);
    if (rc == LW_R_SPLIT) {
        /* A slot migration has put the key and the set on two nodes, until
         * it moves the other one too, which may outlast the lease: one at
         * a time, the key first.  If it holds the readers' mark and our
         * entry is still in the set after that, the mark is the one we
         * were admitted under (a new mark empties the set). */
        const char *key[] = {l->key, n.readers, l->expire_str};
        size_t key_lens[] = {l->keylen, n.readerslen, (size_t)l->expire_len};
        const char *set[] = {n.readers, l->token, n.alive, l->expire_str};
        size_t set_lens[] = {n.readerslen, (size_t)l->toklen, n.alivelen,
                             (size_t)l->expire_len};
        rc = renew_one(l, &lw__script_rw_mark, 1, 2, key, key_lens, 0, &v);
        if (rc == LW_OK && v == 1)
            rc = renew_one(l, &lw__script_rw_leave, 1, 3, set, set_lens, 0, &v);
    }
    lw__names_free(&n);
    if (rc != LW_OK)
        return LW_EREDIS;
    return v == 1 ? LW_OK : LW_ELOST;
}

static int by_cfg_then_slot(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    const struct lw_settings *ca = sort_v[a]->cfg, *cb = sort_v[b]->cfg;

    /* Readers last of all, semaphores apart: each renewal is another
     * script. */
    if (sort_v[a]->reader != sort_v[b]->reader)
        return sort_v[a]->reader ? 1 : -1;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    if ((sort_v[a]->permits > 0) != (sort_v[b]->permits > 0))
        return sort_v[a]->permits > 0 ? 1 : -1;
    return slot_of[a] - slot_of[b];
}

void lw__queue_renew(struct lw_lease *const *v, int n, int *results)
{
    static int pos[LW_WATCHDOG_BATCH_MAX];

    /* By configuration, then slot (one server: all in slot -1), so that
     * each group is a run. */
    for (int i = 0; i < n; i++) {
        results[i] = LW_EREDIS;
        pos[i] = i;
        slot_of[i] = v[i]->cfg->ep.topology == LW_TOPO_CLUSTER
                         ? lw__key_slot(v[i]->key, v[i]->keylen)
                         : -1;
    }
    sort_v = v;
    qsort(pos, (size_t)n, sizeof *pos, by_cfg_then_slot);
    /* Readers sort last (see by_cfg_then_slot), one call each. */
    while (n > 0 && v[pos[n - 1]]->reader) {
        n--;
        results[pos[n]] = renew_reader(v[pos[n]]);
    }
    for (int j = 0; j < n;) {
        int k = j + 1;
        while (k < n && v[pos[k]]->cfg == v[pos[j]]->cfg &&
               (v[pos[k]]->permits > 0) == (v[pos[j]]->permits > 0) &&
               slot_of[pos[k]] == slot_of[pos[j]])
            k++;
        renew_group(v, pos + j, k - j, results);
        j = k;
    }
}

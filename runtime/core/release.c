/* Release: the lease's kind gives it back (kind_*.c: compare our token,
 * delete or keep the key, tell the next waiter, in one script) and this
 * file reads what Redis said.  The guard has stopped the lease's renewal
 * before: a PEXPIRE in flight after our DEL could otherwise extend a key
 * someone else just created. */
#include <lockweave.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/queue.h"
#include "core/release.h"
#include "core/send.h"

/*
 * What the release script's answer says of the section.  A release sent
 * again after its reply was lost (conn.c replays at once) reads its own
 * first attempt's work as the script's 2 (a receipt) or, with nobody
 * queued, as "gone": a key removed behind our back reads the same, so "gone"
 * is LW_ELOST whether replayed or not.  ran_out: the lease's end had passed
 * by our clock when we sent the release.  The key may still have been ours
 * in Redis (its TTL started when the SET ran, a little after we sent it),
 * but the body was already told lw_still_held() == 0, and with max_renew
 * used up the watchdog would have declared it lost at that moment had it
 * had its turn: the same answer whichever thread gets there first.
 */
static int release_verdict(struct lw_hold *l, long long result, int ran_out)
{
    const char *why;

    if (lw__hold_lost(l))
        return LW_ELOST; /* the watchdog said so, and logged it */
    if (result == 1 || result == 2) {
        if (!ran_out)
            return LW_OK;
        result = 0; /* ran out by our clock: as if it had expired */
    }
    why = result == 0 ? "the key was gone (expired, removed or evicted)"
                      : "another owner holds it";
    return lw__hold_lose(l, LW_LOST_GONE, why);
}

/* The verdict on l's release, whose script's round trip gave rc and r
 * (freed here; an answer that is no integer is no answer): the release
 * sent alone (lw__queue_release()) and the one in a pipeline
 * (lw__queue_give_reply()) both end here, one policy. */
static int release_outcome(struct lw_hold *l, int rc, redisReply *r,
                           int ran_out)
{
    if (rc == LW_OK && (r == NULL || r->type != REDIS_REPLY_INTEGER))
        rc = LW_EREDIS;
    if (rc == LW_OK) {
        rc = release_verdict(l, r->integer, ran_out);
    } else {
        /* Nothing says the key still held our token when the section
         * ended, and LW_OK promises that it did.  The key ends by its TTL,
         * so waiters are delayed, not endangered. */
        char why[96];
        snprintf(why, sizeof why,
                 "Redis did not confirm the release (%s); the key ends by its "
                 "TTL",
                 lw_strerror(rc ? rc : LW_EREDIS));
        rc = lw__hold_lose(l, LW_LOST_NO_REPLY, why);
    }
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

/* How long a release's receipt lasts: past the retry of a release whose
 * reply was lost (replayed at once, after at most a reconnect and a
 * timeout). */
static uint64_t receipt_ms(const struct lw_settings *s)
{
    return 2 * (uint64_t)(s->connect_timeout_ms + s->command_timeout_ms);
}

void lw__release_args(struct lw_release_args *a, const struct lw_settings *s,
                      const char *key, size_t keylen, const char *token,
                      size_t toklen, const struct lw_names *n, int readers,
                      int no_receipt, int64_t hold_ms)
{
    int i = 0;

    lw__fmt_dec(a->handoff, (uint64_t)s->handoff_ms);
    /* "0" tells the script to leave no receipt. */
    lw__fmt_dec(a->receipt, no_receipt ? 0 : receipt_ms(s));
#define ARG(p, len) (a->argv[i] = (p), a->lens[i++] = (len))
    ARG(key, keylen);
    ARG(n->queue, n->queuelen);
    ARG(n->fence, n->fencelen);
    if (readers)
        ARG(n->readers, n->readerslen);
    a->nkeys = i;
    ARG(token, toklen);
    ARG(LW_WAITER_KEYS_MS, sizeof LW_WAITER_KEYS_MS - 1);
    ARG(a->handoff, strlen(a->handoff));
    ARG(n->alive, n->alivelen);
    ARG(a->receipt, strlen(a->receipt));
    if (hold_ms >= 0) {
        lw__fmt_dec(a->hold, (uint64_t)hold_ms);
        ARG(a->hold, strlen(a->hold));
    }
#undef ARG
    a->nargs = i - a->nkeys;
}

int lw__release_with(const struct lw_hold *l, const struct lw_names *n,
                     int64_t hold_ms, struct lw_script *script, int readers,
                     lw_split_fn split, int64_t deadline_us, redisReply **r,
                     int *replayed)
{
    struct lw_release_args a;
    int rc;

    lw__release_args(&a, l->cfg, l->key, l->keylen, l->token, (size_t)l->toklen,
                     n, readers, 0, hold_ms);
    /* Until the migration of its slot ends, Redis refuses a script whose
     * keys do not all exist on one node (the queue, most often, exists
     * nowhere), which may outlast the lease: fewer keys instead. */
    rc = lw__send_script(l->cfg, script, a.nkeys, a.nargs, a.argv, a.lens,
                         LW_REQ_SPLIT_OK, deadline_us, r, replayed);
    if (rc == LW_R_SPLIT)
        rc = split(l, n, a.hold, deadline_us, r, replayed);
    return rc;
}

int lw__queue_release_script(const struct lw_hold *l, const struct lw_names *n,
                             int64_t deadline_us, redisReply **r, int *replayed)
{
    return l->kind->release(l, n, 0, deadline_us, r, replayed);
}

int lw__queue_release(struct lw_hold *l)
{
    struct lw_names names;
    redisReply *r = NULL;
    int rc, replayed = 0;
    /* Read after the watchdog stopped renewing l (the guard's, or the
     * pump's, first step): nothing extends the lease from here. */
    int ran_out =
        lw__now_ms() >= __atomic_load_n(&l->valid_until_ms, __ATOMIC_RELAXED);
    int64_t hold_ms = ran_out ? 0 : lw__hold_left_ms(l);

    rc = lw__names_init(&names, l->key, l->keylen, l->prefix_len,
                        l->cfg->ep.topology == LW_TOPO_CLUSTER);
    if (rc == LW_OK) {
        /* In a cluster, follow redirections and failovers while the lease
         * may still be ours. */
        int64_t deadline_us = l->valid_until_ms * 1000;
        int64_t t = lw__now_us() + (int64_t)l->cfg->command_timeout_ms * 1000;
        deadline_us = deadline_us > t ? deadline_us : t;
        rc = l->kind->release(l, &names, hold_ms, deadline_us, &r, &replayed);
        lw__names_free(&names);
    }
    return release_outcome(l, rc, r, ran_out);
}

int lw__queue_give_request(struct lw_give *g, struct lw_hold *l)
{
    g->l = l;
    g->q.script = NULL; /* nothing to free yet */
    g->ran_out =
        lw__now_ms() >= __atomic_load_n(&l->valid_until_ms, __ATOMIC_RELAXED);
    /* A minimum hold, or a kind whose release takes more (kind.h), goes
     * by lw__queue_release(). */
    if (l->kind->release_script == NULL || l->hold_ms > 0)
        return LW_EINVAL;
    if (lw__names_init(&g->names, l->key, l->keylen, l->prefix_len,
                       l->cfg->ep.topology == LW_TOPO_CLUSTER) != LW_OK)
        return LW_ENOMEM;
    lw__release_args(&g->a, l->cfg, l->key, l->keylen, l->token,
                     (size_t)l->toklen, &g->names,
                     (l->kind->flags & LW_KIND_READERS) != 0, 0, -1);
    g->q = (struct lw_request){.script = l->kind->release_script,
                               .nkeys = g->a.nkeys,
                               .nargs = g->a.nargs,
                               .argv = g->a.argv,
                               .lens = g->a.lens};
    return LW_OK;
}

int lw__queue_give_reply(struct lw_give *g, int rc, redisReply *r)
{
    if (g->q.script != NULL)
        lw__names_free(&g->names);
    else if (rc == LW_OK)
        rc = LW_EINVAL; /* never sent: no answer */
    g->q.script = NULL;
    return release_outcome(g->l, rc, r, g->ran_out);
}

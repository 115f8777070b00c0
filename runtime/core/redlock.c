/*
 * Redlock over independent masters (LOCKWEAVE_REDIS_URL is a comma-separated
 * list of N URLs).  The lock is ours when a quorum, N/2 + 1, of the masters
 * granted it in one parallel round and some lease is left after the round
 * trip and a clock-drift allowance:
 *     validity = expire - elapsed - drift,  drift = expire / 100 + 2 ms
 * all measured on CLOCK_MONOTONIC.  Renewal and release go to every master
 * too; renewal needs a quorum as well.
 *
 * Busy: give back what we got (any master may hold our token even when its
 * reply was lost) and retry after a jittered, growing delay capped by what is
 * left of the wait — what Redlock specifies.  The fair queue and wake-ups of
 * the single-server mode do not apply: a queue lives on one server, and
 * independent masters have no common order to wait in.
 *
 * No fence: each master would count on its own, and counters of different
 * masters have no order between them (a new holder's could be lower than the
 * last one's), so lw_fence() is 0 in this mode.
 */
#include "core/redlock.h"

#include <lockweave.h>
#include <stdio.h>
#include <string.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/result.h"
#include "net/conn.h"
#include "topology/masters.h"
#include "core/kind.h"
#include "core/scripts.h"
#include "base/stats.h"
#include "core/token.h"

#define RETRY_START_US 2000
#define RETRY_MAX_US   100000
#define ALL_MASTERS    0xffffu

/* Clock-drift allowance: Redlock's 1 % of the lease plus 2 ms. */
static uint32_t drift_ms(uint32_t expire_ms)
{
    return expire_ms / 100 + 2;
}

/* A round waits at most the command timeout, and never longer than cap_ms
 * (a vote that comes after the lease ended is worth nothing). */
static int64_t round_deadline(const struct lw_settings *cfg, uint32_t cap_ms)
{
    int64_t ms = cfg->command_timeout_ms;

    if (cap_ms > 0 && cap_ms < ms)
        ms = cap_ms;
    return lw__now_us() + ms * 1000;
}

/* The REDLOCK script on the masters in mask: set l's TTL to ttl (a
 * decimal string: a renewal, or what is left of a minimum hold), or delete
 * it (ttl NULL).  Votes: 1 done, 0 no key, -1 another owner's. */
static void compare_and(struct lw_masters *m, const struct lw_hold *l,
                        const char *ttl, unsigned mask, struct lw_vote *votes)
{
    const char *argv[] = {l->key, l->token, ttl};
    size_t lens[] = {l->keylen, (size_t)l->toklen, ttl ? strlen(ttl) : 0};
    struct lw_request q = {.script = &lw__script_onekey,
                           .nkeys = 1,
                           .nargs = ttl ? 2 : 1,
                           .argv = argv,
                           .lens = lens};

    lw__masters_run(m, &q, mask, round_deadline(l->cfg, 0), votes);
}

/* How the masters answered the REDLOCK script: done (1), or not ours (0 or
 * -1).  A replayed 0 may be our own first attempt's delete, or a key
 * removed behind our back: the two cannot be told apart, and only the
 * first is ours, so it counts as not ours. */
static void count_script(const struct lw_masters *m, const struct lw_vote *v,
                         int *done, int *not_ours)
{
    *done = *not_ours = 0;
    for (int i = 0; i < m->n; i++) {
        const redisReply *r = v[i].r;
        if (r == NULL || r->type != REDIS_REPLY_INTEGER)
            continue;
        if (r->integer == 1)
            (*done)++;
        else
            (*not_ours)++;
    }
}

static int is_token(const redisReply *r, const struct lw_hold *l)
{
    return r->type == REDIS_REPLY_STRING && r->len == (size_t)l->toklen &&
           memcmp(r->str, l->token, r->len) == 0;
}

/*
 * Replica-safe acquire on each master (wait_replicas > 0): WAIT on the
 * masters that granted the lock, counted only where it ran on the
 * connection that granted it.  WAIT covers the writes of its own
 * connection: a replayed SET went out on an earlier one, and on a
 * connection opened since the grant it covers nothing and answers at once.
 * True when a quorum of them reached enough replicas in time.
 */
static int replicated(struct lw_masters *m, const struct lw_hold *l,
                      unsigned granted)
{
    const struct lw_settings *cfg = l->cfg;
    char n[16], t[16];
    const char *argv[] = {"WAIT", n, t};
    size_t lens[] = {4, 0, 0};
    struct lw_cmd cmd = {3, argv, lens};
    struct lw_request q = {
        .cmds = &cmd, .ncmds = 1, .wait_ms = cfg->wait_timeout_ms};
    struct lw_vote v[LW_ENDPOINTS_MAX];
    int acked = 0;

    lens[1] = (size_t)snprintf(n, sizeof n, "%d", cfg->wait_replicas);
    lens[2] = (size_t)snprintf(t, sizeof t, "%d", cfg->wait_timeout_ms);
    /* A master answers WAIT after up to its timeout: the round waits that
     * much past the command timeout. */
    lw__masters_run(
        m, &q, granted,
        round_deadline(cfg, 0) + (int64_t)cfg->wait_timeout_ms * 1000, v);
    for (int i = 0; i < m->n; i++)
        acked += v[i].r != NULL && !v[i].replayed && !v[i].fresh &&
                 v[i].r->type == REDIS_REPLY_INTEGER &&
                 v[i].r->integer >= cfg->wait_replicas;
    lw__votes_free(v, m->n);
    if (acked < m->quorum)
        lw__log(LW_LOG_WARN,
                "lock %.*s reached %d replicas on %d masters only (quorum "
                "%d) within %d ms: given back",
                (int)l->keylen, l->key, cfg->wait_replicas, acked, m->quorum,
                cfg->wait_timeout_ms);
    return acked >= m->quorum;
}

/*
 * One round of SET key token NX PX expire GET on every master: LW_OK ours,
 * LW_R_BUSY not (busy, split vote, or too slow), LW_EREDIS when fewer than a
 * quorum answered at all (fail closed), LW_EREPLICAS when wait_replicas asks
 * for replicas a quorum of masters could not confirm.  GET returns our own
 * token when a replayed SET finds the first one's work.
 */
static int vote_round(struct lw_masters *m, struct lw_hold *l)
{
    uint32_t expire = l->expire_ms;
    const char *argv[] = {"SET", l->key,        l->token, "NX",
                          "PX",  l->expire_str, "GET"};
    size_t lens[] = {
        3, l->keylen, (size_t)l->toklen, 2, 2, (size_t)l->expire_len, 3};
    struct lw_cmd cmd = {7, argv, lens};
    struct lw_request q = {.cmds = &cmd, .ncmds = 1};
    struct lw_vote v[LW_ENDPOINTS_MAX];
    int64_t start_us = lw__now_us(), validity_ms;
    int yes = 0, answered = 0, rc;
    unsigned undo = 0, granted = 0;

    lw__masters_run(m, &q, ALL_MASTERS, round_deadline(l->cfg, expire), v);
    for (int i = 0; i < m->n; i++) {
        const redisReply *r = v[i].r;
        int ours = r != NULL && (r->type == REDIS_REPLY_NIL || is_token(r, l));
        answered += r != NULL;
        yes += ours;
        if (ours && !v[i].replayed)
            granted |= 1u << i;
        if (v[i].sent && (ours || r == NULL))
            undo |= 1u << i;
    }
    lw__votes_free(v, m->n);
    rc = yes >= m->quorum       ? LW_OK
         : answered < m->quorum ? LW_EREDIS
                                : LW_R_BUSY;
    if (rc == LW_OK && l->cfg->wait_replicas > 0 && !replicated(m, l, granted))
        rc = LW_EREPLICAS;
    validity_ms =
        (int64_t)expire - (lw__now_us() - start_us) / 1000 - drift_ms(expire);
    if (rc == LW_OK && validity_ms > 0) {
        /* Every master that granted it set its TTL after start_us. */
        l->valid_until_ms = start_us / 1000 + expire - drift_ms(expire);
        return LW_OK;
    }
    if (undo != 0) {
        compare_and(m, l, NULL, undo, v);
        lw__votes_free(v, m->n);
    }
    return rc == LW_OK ? LW_R_BUSY : rc; /* granted too slowly: again */
}

int lw__redlock_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                        uint64_t *fence)
{
    /* Jittered and growing, so clients that split the vote do not collide
     * again; never past the wait. */
    struct lw_backoff backoff = {RETRY_START_US, RETRY_MAX_US};
    struct lw_masters *m;
    int64_t start_us = lw__now_us();
    int64_t deadline_us = start_us + (int64_t)opts->wait_ms * 1000;
    int rc, waited = 0;

    /* Only kinds whose holder is one token in one key can be voted on
     * (kind.h; kind_sem.c says why a semaphore cannot, and a read lock's
     * readers' set would need the same vote): the others are not offered
     * rather than unsafe. */
    if (!(l->kind->flags & LW_KIND_REDLOCK)) {
        lw__log(LW_LOG_ERROR,
                "lock %.*s: %s needs one Redis server or a Redis Cluster, "
                "not independent masters (Redlock)",
                (int)l->keylen, l->key, l->kind->noun);
        return LW_ECONFIG;
    }
    rc = lw__masters_get(l->cfg, &m);
    if (rc != LW_OK)
        return rc;
    *fence = 0;
    l->drift_ms = drift_ms(l->expire_ms);
    for (;;) {
        /* A new token per round: a SET that reaches a hung master after
         * we gave up on it must not pass for a grant of a later round. */
        rc = lw__token_new(l->token);
        if (rc < 0)
            break;
        l->toklen = rc;
        rc = vote_round(m, l);
        if (rc != LW_R_BUSY)
            break;
        if (!waited)
            lw__hold_contended(l);
        waited = 1;
        rc = lw__backoff_pause(&backoff, deadline_us);
        if (rc != 0)
            break;
    }
    if (waited)
        lw__hold_waited(l, start_us);
    return rc;
}

int lw__redlock_release(struct lw_hold *l)
{
    struct lw_vote v[LW_ENDPOINTS_MAX];
    struct lw_masters *m;
    int valid = lw__now_ms() < l->valid_until_ms, done = 0, not_ours = 0;
    int64_t hold_ms = valid ? lw__hold_left_ms(l) : 0;
    char ttl[24], why[96];

    /* Within a minimum hold the keys stay ours until it ends. */
    snprintf(ttl, sizeof ttl, "%lld", (long long)hold_ms);
    if (lw__masters_get(l->cfg, &m) == LW_OK) {
        compare_and(m, l, hold_ms > 0 ? ttl : NULL, ALL_MASTERS, v);
        count_script(m, v, &done, &not_ours);
        lw__votes_free(v, m->n);
        if (done >= m->quorum)
            return lw__hold_lost(l) ? LW_ELOST : LW_OK;
        if (not_ours > m->n - m->quorum) {
            snprintf(why, sizeof why, "not ours on %d of %d masters", not_ours,
                     m->n);
            return lw__hold_lose(l, LW_LOST_GONE, why);
        }
    }
    /* As in single-server mode: a section is LW_OK only when a quorum
     * confirmed it was still ours at its end.  The keys end by their TTL. */
    snprintf(why, sizeof why,
             "the release was confirmed on %d masters, not a quorum; the "
             "keys end by their TTL",
             done);
    return lw__hold_lose(l, LW_LOST_NO_REPLY, why);
}

/* Renew l on every master: LW_OK on a quorum, LW_ELOST when a quorum is
 * out of reach (the lock is someone else's, or gone), LW_EREDIS when too
 * few answered to tell. */
static int renew_one(struct lw_hold *l)
{
    struct lw_vote v[LW_ENDPOINTS_MAX];
    struct lw_masters *m;
    int done, not_ours;

    if (lw__masters_get(l->cfg, &m) != LW_OK)
        return LW_ENOMEM;
    compare_and(m, l, l->expire_str, ALL_MASTERS, v);
    count_script(m, v, &done, &not_ours);
    lw__votes_free(v, m->n);
    if (done >= m->quorum)
        return LW_OK;
    return not_ours > m->n - m->quorum ? LW_ELOST : LW_EREDIS;
}

void lw__redlock_renew(struct lw_hold *const *v, int n, int *results)
{
    for (int i = 0; i < n; i++)
        results[i] = renew_one(v[i]);
}

/* A section handed on inside the process ends: is the lock still ours on a
 * quorum?  One GET per master, compared here. */
int lw__redlock_check(struct lw_hold *l)
{
    const char *argv[] = {"GET", l->key};
    size_t lens[] = {3, l->keylen};
    struct lw_cmd cmd = {2, argv, lens};
    struct lw_request q = {.cmds = &cmd, .ncmds = 1};
    struct lw_vote v[LW_ENDPOINTS_MAX];
    struct lw_masters *m;
    int ours = 0, not_ours = 0;

    if (lw__masters_get(l->cfg, &m) != LW_OK)
        return LW_ENOMEM;
    lw__masters_run(m, &q, ALL_MASTERS, round_deadline(l->cfg, 0), v);
    for (int i = 0; i < m->n; i++) {
        const redisReply *r = v[i].r;
        if (r == NULL)
            continue;
        if (is_token(r, l))
            ours++;
        else if (r->type == REDIS_REPLY_NIL || r->type == REDIS_REPLY_STRING)
            not_ours++;
    }
    lw__votes_free(v, m->n);
    if (ours >= m->quorum)
        return LW_OK;
    return not_ours > m->n - m->quorum ? LW_ELOST : LW_EREDIS;
}

/* Release: compare-and-delete our token and tell the next waiter in the same
 * script (or, within a minimum hold, compare and set the key's TTL to what
 * is left of the hold).  The guard has stopped the lease's renewal before: a
 * PEXPIRE in flight after our DEL could otherwise extend a key someone else
 * just created. */
#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/numfmt.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/queue.h"
#include "core/scripts.h"
#include "core/send.h"

/* ran_out: the lease's end had passed by our clock when we sent the
 * release.  The key may still have been ours in Redis (its TTL started when
 * the SET ran, a little after we sent it), but the body was already told
 * lw_still_held() == 0, and with max_renew used up the watchdog would have
 * declared it lost at that moment had it had its turn: the same answer
 * whichever thread gets there first. */
/* A release sent again after its reply was lost (replayed) reads its own
 * first attempt's work as the script's 2 (a receipt) or, with nobody queued,
 * as "gone": the key removed behind our back reads the same, so "gone" is
 * LW_ELOST whether replayed or not. */
static int release_verdict(struct lw_lease *l, long long result, int ran_out)
{
    const char *why;

    if (result == 1 || result == 2) {
        if (lw__lease_lost(l))
            return LW_ELOST; /* the watchdog said so, and logged it */
        if (!ran_out)
            return LW_OK;
        result = 0; /* ran out by our clock: as if it had expired */
    }
    why = result == 0 ? "the key was gone (expired, removed or evicted)"
                      : "another owner holds it";
    return lw__lease_lose(l, LW_LOST_GONE, why);
}

/* The lock key alone (onekey script): compare the token, then delete the
 * key (ms NULL) or set its TTL to ms; no hand-off. */
static int send_onekey(struct lw_target *to, const char *key, size_t keylen,
                       const char *token, size_t toklen, const char *ms,
                       int64_t deadline_us, redisReply **r, int *replayed)
{
    const char *argv[] = {key, token, ms};
    size_t lens[] = {keylen, toklen, ms ? strlen(ms) : 0};
    struct lw_request q = {.script = &lw__script_onekey,
                           .nkeys = 1,
                           .nargs = ms ? 2 : 1,
                           .argv = argv,
                           .lens = lens};

    return lw__send(to, &q, deadline_us, r, replayed);
}

/* How long a release's receipt lasts: past the retry of a release whose
 * reply was lost (conn.c replays at once, after at most a reconnect and a
 * timeout). */
static uint64_t receipt_ms(const struct lw_settings *s)
{
    return 2 * (uint64_t)(s->connect_timeout_ms + s->command_timeout_ms);
}

int lw__release_send(const struct lw_settings *s, const char *key,
                     size_t keylen, const char *token, size_t toklen,
                     const struct lw_names *n, int flags, int64_t deadline_us,
                     redisReply **r, int *replayed)
{
    char handoff[LW_FMT_U64_MAX], receipt[LW_FMT_U64_MAX];
    const char *argv[] = {key,     n->queue, n->fence, token, LW_WAITER_KEYS_MS,
                          handoff, n->alive, receipt};
    size_t lens[] = {keylen,
                     n->queuelen,
                     n->fencelen,
                     toklen,
                     sizeof LW_WAITER_KEYS_MS - 1,
                     0,
                     n->alivelen,
                     0};
    struct lw_request q = {.script = &lw__script_release,
                           .nkeys = 3,
                           .nargs = 5,
                           .argv = argv,
                           .lens = lens,
                           .flags = LW_REQ_SPLIT_OK};
    struct lw_target to;
    int rc;

    lens[5] = lw__fmt_dec(handoff, (uint64_t)s->handoff_ms);
    /* "0" tells the script to leave no receipt. */
    lens[7] = lw__fmt_dec(receipt,
                          (flags & LW_RELEASE_NO_RECEIPT) ? 0 : receipt_ms(s));
    rc = lw__target_for(&to, s, key, keylen);
    if (rc == LW_OK)
        rc = lw__send(&to, &q, deadline_us, r, replayed);
    /* A slot in migration refuses a script whose keys are not all on one
     * node (the queue usually does not exist at all) until the migration
     * ends, which may outlast the lease.  Delete the lock key alone, on
     * whichever node has it: waiters find it free at their next poll. */
    if (rc == LW_R_SPLIT)
        rc = send_onekey(&to, key, keylen, token, toklen, NULL, deadline_us, r,
                         replayed);
    return rc;
}

/* The rest of a minimum hold: the key keeps our token until it ends, with
 * no hand-off (waiters' polls are timed by the key's TTL, so the first of
 * them takes it when it ends). */
static int hold_script(const struct lw_lease *l, int64_t hold_ms,
                       int64_t deadline_us, redisReply **r, int *replayed)
{
    struct lw_target to;
    char ms[LW_FMT_U64_MAX];
    int rc = lw__target_for(&to, l->cfg, l->key, l->keylen);

    lw__fmt_dec(ms, (uint64_t)hold_ms);
    if (rc == LW_OK)
        rc = send_onekey(&to, l->key, l->keylen, l->token, (size_t)l->toklen,
                         ms, deadline_us, r, replayed);
    return rc;
}

/* Send script (KEYS then ARGV in argv) to the node of argv[0]'s slot: LW_OK
 * with *r its integer reply (the caller frees it), LW_R_SPLIT (flags
 * LW_REQ_SPLIT_OK), or an error with *r NULL. */
static int send_int(const struct lw_settings *s, struct lw_script *script,
                    int nkeys, int nargs, const char *const *argv,
                    const size_t *lens, int flags, int64_t deadline_us,
                    redisReply **r, int *replayed)
{
    struct lw_target to;
    int rep = 0, rc = lw__target_for(&to, s, argv[0], lens[0]);

    *r = NULL;
    if (rc == LW_OK)
        rc = lw__send(&to,
                      &(struct lw_request){.script = script,
                                           .nkeys = nkeys,
                                           .nargs = nargs,
                                           .argv = argv,
                                           .lens = lens,
                                           .flags = flags},
                      deadline_us, r, &rep);
    *replayed |= rep;
    if (rc == LW_OK && (*r)->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(*r);
        rc = LW_EREDIS;
    }
    if (rc != LW_OK)
        *r = NULL;
    return rc;
}

/* A read lock's key alone (rw_mark_lua): does it hold the readers' mark,
 * kept at least ms longer ("0": only look), or freed ("free")? */
static int reader_mark(const struct lw_lease *l, const struct lw_names *n,
                       const char *ms, int64_t deadline_us, redisReply **r,
                       int *replayed)
{
    const char *argv[] = {l->key, n->readers, ms};
    size_t lens[] = {l->keylen, n->readerslen, strlen(ms)};

    return send_int(l->cfg, &lw__script_rw_mark, 1, 2, argv, lens, 0,
                    deadline_us, r, replayed);
}

/*
 * A read lock given back (ms "0") or kept ms longer, when a slot migration
 * keeps its keys from one script: the queue is missing (nobody waits), or
 * the keys lie on two nodes.  Nobody is told; waiters find the lock free at
 * their next poll.  The set and the lock key together when Redis lets them
 * be; else one at a time: the key first, then our entry in the set.  If the
 * key holds the readers' mark and our entry is still in the set after that,
 * the mark is the one we were admitted under (a new mark empties the set),
 * so the lock was ours after the section.  Then, if ours was the last entry,
 * the key is freed.  *r as the release script's (1, 2 or 0).
 */
static int reader_split(const struct lw_lease *l, const struct lw_names *n,
                        const char *ms, int64_t deadline_us, redisReply **r,
                        int *replayed)
{
    const struct lw_settings *s = l->cfg;
    size_t toklen = (size_t)l->toklen, mslen = strlen(ms);
    const char *both[] = {n->readers, l->key, l->token, n->alive, ms};
    size_t both_lens[] = {n->readerslen, l->keylen, toklen, n->alivelen, mslen};
    const char *set[] = {n->readers, l->token, n->alive, ms};
    size_t set_lens[] = {n->readerslen, toklen, n->alivelen, mslen};
    redisReply *freed;
    int rc;

    rc = send_int(s, &lw__script_rw_leave, 2, 3, both, both_lens,
                  LW_REQ_SPLIT_OK, deadline_us, r, replayed);
    if (rc != LW_R_SPLIT)
        return rc;
    rc = reader_mark(l, n, ms, deadline_us, r, replayed);
    if (rc != LW_OK || (*r)->integer != 1)
        return rc; /* 0: the key was gone, or another owner's */
    freeReplyObject(*r);
    rc = send_int(s, &lw__script_rw_leave, 1, 3, set, set_lens, 0, deadline_us,
                  r, replayed);
    if (rc != LW_OK || (*r)->integer != 3)
        return rc;
    (*r)->integer = 1; /* released, as the last reader: free the key */
    if (reader_mark(l, n, "free", deadline_us, &freed, replayed) == LW_OK)
        freeReplyObject(freed);
    else
        lw__log(LW_LOG_WARN,
                "lock %.*s: released, but its key could not be freed; it "
                "ends by its TTL",
                (int)l->keylen, l->key);
    return LW_OK;
}

/* A semaphore's permit or a read lock: given back (hold_ms 0, the next
 * waiter told) or kept hold_ms longer (the rest of a minimum hold). */
static int shared_release(const struct lw_lease *l, const struct lw_names *n,
                          int64_t hold_ms, int64_t deadline_us, redisReply **r,
                          int *replayed)
{
    const struct lw_settings *s = l->cfg;
    char handoff[LW_FMT_U64_MAX], receipt[LW_FMT_U64_MAX], hold[LW_FMT_U64_MAX];
    const char *argv[10];
    size_t lens[10];
    int nargs = 0, nkeys, rc;

    *replayed = 0;
    lw__fmt_dec(handoff, (uint64_t)s->handoff_ms);
    lw__fmt_dec(receipt, receipt_ms(s));
    lw__fmt_dec(hold, (uint64_t)hold_ms);
#define ARG(p, len) (argv[nargs] = (p), lens[nargs++] = (len))
    ARG(l->key, l->keylen);
    ARG(n->queue, n->queuelen);
    ARG(n->fence, n->fencelen);
    if (l->reader)
        ARG(n->readers, n->readerslen);
    nkeys = nargs;
    ARG(l->token, (size_t)l->toklen);
    ARG(LW_WAITER_KEYS_MS, sizeof LW_WAITER_KEYS_MS - 1);
    ARG(handoff, strlen(handoff));
    ARG(n->alive, n->alivelen);
    ARG(receipt, strlen(receipt));
    ARG(hold, strlen(hold));
#undef ARG
    /* Until the migration of its slot ends, Redis refuses a script whose
     * keys do not all exist on one node (the queue, most often, exists
     * nowhere), which may outlast the lease: fewer keys instead. */
    rc = send_int(
        s, l->reader ? &lw__script_rw_release : &lw__script_sem_release, nkeys,
        nargs - nkeys, argv, lens, LW_REQ_SPLIT_OK, deadline_us, r, replayed);
    if (rc != LW_R_SPLIT)
        return rc;
    if (l->reader)
        return reader_split(l, n, hold, deadline_us, r, replayed);
    /* A semaphore: its key alone is always on one node. */
    argv[1] = l->token;
    lens[1] = (size_t)l->toklen;
    argv[2] = n->alive;
    lens[2] = n->alivelen;
    argv[3] = hold;
    lens[3] = strlen(hold);
    return send_int(s, &lw__script_sem_leave, 1, 3, argv, lens, 0, deadline_us,
                    r, replayed);
}

int lw__queue_release_script(const struct lw_lease *l, const struct lw_names *n,
                             int64_t deadline_us, redisReply **r, int *replayed)
{
    if (l->permits > 0 || l->reader)
        return shared_release(l, n, 0, deadline_us, r, replayed);
    return lw__release_send(l->cfg, l->key, l->keylen, l->token,
                            (size_t)l->toklen, n, 0, deadline_us, r, replayed);
}

int lw__queue_release(struct lw_lease *l)
{
    struct lw_names names;
    redisReply *r = NULL;
    int rc, replayed = 0;
    int ran_out =
        lw__now_ms() >= __atomic_load_n(&l->valid_until_ms, __ATOMIC_RELAXED);
    int64_t hold_ms = ran_out ? 0 : lw__lease_hold_left_ms(l);

    rc = lw__names_init(&names, l->key, l->keylen, l->prefix_len,
                        l->cfg->ep.topology == LW_TOPO_CLUSTER);
    if (rc == LW_OK) {
        /* In a cluster, follow redirections and failovers while the lease
         * may still be ours. */
        int64_t deadline_us = l->valid_until_ms * 1000;
        int64_t t = lw__now_us() + (int64_t)l->cfg->command_timeout_ms * 1000;
        deadline_us = deadline_us > t ? deadline_us : t;
        if (l->permits > 0 || l->reader)
            rc = shared_release(l, &names, hold_ms, deadline_us, &r, &replayed);
        else if (hold_ms > 0)
            rc = hold_script(l, hold_ms, deadline_us, &r, &replayed);
        else
            rc =
                lw__queue_release_script(l, &names, deadline_us, &r, &replayed);
        lw__names_free(&names);
    }
    if (rc == LW_OK && r->type == REDIS_REPLY_INTEGER) {
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
        rc = lw__lease_lose(l, LW_LOST_NO_REPLY, why);
    }
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

/*
 * Acquire: one round trip when the lock is free (a script that takes it and
 * mints its fence in one step), then, while it is busy, queue in
 * Redis and block on our mailbox until a release hands us the lock or wakes
 * us, the lock's TTL runs out, or the deadline comes — whichever is first.
 */
#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/gate.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/numfmt.h"
#include "base/result.h"
#include "base/stats.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/queue.h"
#include "core/replicas.h"
#include "core/scripts.h"
#include "core/send.h"

#define BACKOFF_START_US 1000
#define BACKOFF_MAX_US   100000   /* no mailbox (BLPOP refused): poll this */
#define MAILBOX_POLL_US  200000   /* blocked on the mailbox: poll this often */
#define MAILBOX_MIN_US   1000     /* BLPOP counts milliseconds; 0 is forever */
#define MAILBOX_OFF_US   10000000 /* BLPOP refused: poll this long */
#define NAME_INLINE      256
#define HOT_US           100000 /* a waited-for key stays "hot" this long */
#define GRANT_ENTRY_MAX  32

struct attempt {
    struct lw_target to; /* where the key's requests go */
    struct lw_hold *l;
    const lw_lock_opts *opts;
    uint64_t *fence;
    int64_t sent_us;  /* when the last try was written (lw_target.sent_us):
                         its SET or script ran no earlier */
    int64_t valid_ms; /* lease granted by the successful try */
    const struct lw_names *names;
    char *alive; /* our alive key while queued, then ":g" (the mailbox's
                    name), built on first need */
    size_t alivelen;
    int64_t deadline_us;         /* the wait's end */
    char entry[GRANT_ENTRY_MAX]; /* our queue entry's score, "" if none */
    char *alivebuf; /* NAME_INLINE bytes on lw__queue_acquire's stack */
};

/* Where a redirected or failed-over request may keep trying: to the wait's
 * end, and at least one command timeout. */
static int64_t route_deadline(const struct attempt *a)
{
    int64_t t = lw__now_us() + (int64_t)a->l->cfg->command_timeout_ms * 1000;
    return a->deadline_us > t ? a->deadline_us : t;
}

/* p, q then ":g", in inl (NAME_INLINE bytes) when they fit, else on the
 * heap (the caller frees what is not inl); NULL when out of memory. */
static char *concat_box(char *inl, const char *p, size_t plen, const char *q,
                        size_t qlen)
{
    size_t n = plen + qlen + 2;
    char *s = n <= NAME_INLINE ? inl : malloc(n);

    if (s != NULL) {
        memcpy(s, p, plen);
        memcpy(s + plen, q, qlen);
        memcpy(s + plen + qlen, ":g", 2);
    }
    return s;
}

/* Our alive key, "<alive prefix><token>", and after it ":g", which makes it
 * our mailbox's name; LW_OK or LW_ENOMEM. */
static int alive_init(struct attempt *a)
{
    const struct lw_hold *l = a->l;

    if (a->alive != NULL)
        return LW_OK;
    a->alivelen = a->names->alivelen + (size_t)l->toklen;
    a->alive = concat_box(a->alivebuf, a->names->alive, a->names->alivelen,
                          l->token, (size_t)l->toklen);
    return a->alive != NULL ? LW_OK : LW_ENOMEM;
}

/* How a poll of the queue script joins: enqueue()'s join. */
#define JOIN_LISTENING "1" /* queued, blocked on the mailbox between polls */
#define JOIN_POLLING   "p" /* queued, only polling: never handed the lock */
#define JOIN_LEAVE     "0" /* out of the queue */

static int enqueue(struct attempt *a, const char *join, int64_t *ttl_ms);

static int send_take(struct attempt *a, struct lw_script *script,
                     const char **argv, const size_t *lens, int nkeys,
                     int nargs, int64_t *ttl_ms);

/* The try script's KEYS (lock, fence counter) and ARGV (token, lease ms)
 * for l, whose companion keys are n. */
static void try_args(const struct lw_hold *l, const struct lw_names *n,
                     const char **argv, size_t *lens)
{
    argv[0] = l->key;
    lens[0] = l->keylen;
    argv[1] = n->fence;
    lens[1] = n->fencelen;
    argv[2] = l->token;
    lens[2] = (size_t)l->toklen;
    argv[3] = l->expire_str;
    lens[3] = (size_t)l->expire_len;
}

/* The first try: the kind's try script where it has one (a free lock taken
 * for fewer of Redis's microseconds), else the acquire-or-queue script,
 * without joining the queue. */
static int try_free(struct attempt *a, int64_t *ttl_ms)
{
    const char *argv[4];
    size_t lens[4];

    if (a->l->kind->try_free == NULL)
        return enqueue(a, JOIN_LEAVE, ttl_ms);
    try_args(a->l, a->names, argv, lens);
    return send_take(a, a->l->kind->try_free, argv, lens, 2, 2, ttl_ms);
}

/* How long to wait before the next poll: on the mailbox, a poll every
 * MAILBOX_POLL_US only guards against a message lost with its connection; with
 * none, back off.  Never past the holder's lease or the deadline, nor half a
 * command timeout, which bounds a read on the connection BLPOP blocks. */
static int64_t next_sleep_us(const struct attempt *a, int mailbox,
                             struct lw_backoff *backoff, int64_t ttl_ms,
                             int64_t left_us)
{
    int64_t sleep_us, cap_us = (int64_t)a->l->cfg->command_timeout_ms * 500;

    if (mailbox)
        sleep_us = MAILBOX_POLL_US < cap_us ? MAILBOX_POLL_US : cap_us;
    else
        sleep_us = lw__backoff_step(backoff);
    if (ttl_ms > 0 && ttl_ms * 1000 + 500 < sleep_us)
        sleep_us = ttl_ms * 1000 + 500; /* the holder's lease ends sooner */
    return sleep_us < left_us ? sleep_us : left_us;
}

/* The acquire-or-queue script: same results as try_free().  join: one of
 * the JOIN_... above. */
static int enqueue(struct attempt *a, const char *join, int64_t *ttl_ms)
{
    struct lw_hold *l = a->l;
    const struct lw_names *n = a->names;
    char qttl[LW_FMT_U64_MAX];
    const char *argv[11];
    size_t lens[11];
    unsigned flags = l->kind->flags;
    int nkeys, nargs = 0;

    if (alive_init(a) != LW_OK)
        return LW_ENOMEM;
    /* The queue outlives every member's wait and lease. */
    lw__fmt_dec(qttl, (uint64_t)a->opts->wait_ms + l->expire_ms + 1000);
#define ARG(p, len) (argv[nargs] = (p), lens[nargs++] = (len))
    ARG(l->key, l->keylen);
    ARG(n->queue, n->queuelen);
    ARG(n->fence, n->fencelen);
    ARG(a->alive, a->alivelen);
    if (flags & LW_KIND_READERS)
        ARG(n->readers, n->readerslen);
    nkeys = nargs;
    ARG(l->token, (size_t)l->toklen);
    ARG(l->expire_str, (size_t)l->expire_len);
    ARG(join, 1);
    ARG(qttl, strlen(qttl));
    ARG(LW_WAITER_KEYS_MS, sizeof LW_WAITER_KEYS_MS - 1);
    if (flags & LW_KIND_PERMITS)
        ARG(l->permits_str, (size_t)l->permits_len);
#undef ARG
    return send_take(a, l->kind->enqueue, argv, lens, nkeys, nargs - nkeys,
                     ttl_ms);
}

/* What a script that takes the lock (the kind's try or acquire-or-queue)
 * answered, r: LW_OK (*fence, and *valid_ms the lease it granted),
 * LW_R_BUSY (*ttl_ms, and entry, GRANT_ENTRY_MAX bytes, our queue entry),
 * LW_EDONE (a finished run's outcome, now in l), or an error.  The one
 * reader of that answer: for a take sent alone (send_take()) and for a try
 * in a pipeline (lw__queue_try_reply()). */
static int take_reply(struct lw_hold *l, const redisReply *r, uint64_t *fence,
                      int64_t *valid_ms, int64_t *ttl_ms, char *entry)
{
    unsigned flags = l->kind->flags;
    int rc;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER &&
        r->element[0]->integer > 0 &&
        r->element[1]->type == REDIS_REPLY_INTEGER) {
        *fence = (uint64_t)r->element[0]->integer;
        /* Never more lease than we asked for, whatever the reply says. */
        *valid_ms =
            r->element[1]->integer > 0 && r->element[1]->integer < l->expire_ms
                ? r->element[1]->integer
                : l->expire_ms;
        rc = LW_OK;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_INTEGER &&
               r->element[0]->integer == 0 &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               l->kind->done != NULL &&
               l->kind->done(l, r->element[1]->str, r->element[1]->len)) {
        rc = LW_EDONE; /* a finished run's outcome, now in l */
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_INTEGER &&
               r->element[0]->integer == 0 &&
               r->element[1]->type == REDIS_REPLY_STRING) {
        /* "n:<N>" or "type:<type>" (the logger escapes it). */
        int permits = (flags & LW_KIND_PERMITS) != 0;
        lw__log(LW_LOG_ERROR,
                "lock %.*s: asked for as %s%s%s%s, but Redis holds it as %.*s",
                (int)l->keylen, l->key, l->kind->noun, permits ? " of " : "",
                permits ? l->permits_str : "", permits ? " permits" : "",
                (int)r->element[1]->len, r->element[1]->str);
        rc = LW_EINVAL;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_INTEGER &&
               r->element[0]->integer < 0 &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               r->element[1]->len < GRANT_ENTRY_MAX) {
        /* The holder's TTL only caps our sleep: a reply past any lease
         * (a key set by someone else, or not Redis talking) must not
         * overflow the microseconds it is turned into. */
        *ttl_ms = r->element[0]->integer < -(long long)UINT32_MAX
                      ? (int64_t)UINT32_MAX
                      : -1 - r->element[0]->integer;
        memcpy(entry, r->element[1]->str, r->element[1]->len);
        entry[r->element[1]->len] = '\0';
        rc = LW_R_BUSY;
    } else {
        rc = LW_EREDIS;
    }
    return rc;
}

/* Send a script that takes the lock (the kind's try or acquire-or-queue)
 * and read its reply: LW_OK (*a->fence, a->valid_ms), LW_R_BUSY (*ttl_ms,
 * a->entry), or an error. */
static int send_take(struct attempt *a, struct lw_script *script,
                     const char **argv, const size_t *lens, int nkeys,
                     int nargs, int64_t *ttl_ms)
{
    int replayed, rc;
    redisReply *r;

    rc = lw__send(&a->to,
                  &(struct lw_request){.script = script,
                                       .nkeys = nkeys,
                                       .nargs = nargs,
                                       .argv = argv,
                                       .lens = lens},
                  route_deadline(a), &r, &replayed);
    a->sent_us = a->to.sent_us;
    if (rc != LW_OK)
        return rc;
    rc = take_reply(a->l, r, a->fence, &a->valid_ms, ttl_ms, a->entry);
    freeReplyObject(r);
    return rc;
}

/*
 * May a hand-off message ("g<fence> <entry>") be taken as it is, with no
 * round trip?  It may be late (sat in the mailbox while we were stopped, or
 * slow on the wire): the lease it granted may have run out and the lock moved
 * on since.  It is
 * current when it names the queue entry our last poll reported: an entry is
 * removed when it is handed the lock, so had a poll run after this hand-off,
 * it would have found the lock ours (and we would not be waiting) or, the
 * lease already over, queued us again under a new score.  So the hand-off
 * came after our last poll ran, and its lease (PX expire, set then) lasts at
 * least until that poll was sent plus expire: a->sent_us, which lw__acquire
 * counts the lease from.  With less than half of that left, the queue script
 * confirms it instead (ours only if the key still holds our token) and
 * starts a fresh lease.
 */
static int fresh_grant(const struct attempt *a, const char *entry)
{
    int64_t half_us = (int64_t)a->l->expire_ms * 500;

    return a->entry[0] != '\0' && strcmp(entry, a->entry) == 0 &&
           lw__now_us() < a->sent_us + half_us;
}

/* "g<fence> <entry>", a hand-off: 1 with *fence and entry (GRANT_ENTRY_MAX
 * bytes, NUL-terminated) set; anything else ("w", to compete): 0. */
static int parse_grant(const char *m, size_t n, uint64_t *fence, char *entry)
{
    char buf[24 + GRANT_ENTRY_MAX], *end;
    const char *sp;

    if (n < 4 || n >= sizeof buf || m[0] != 'g')
        return 0;
    memcpy(buf, m, n);
    buf[n] = '\0';
    *fence = strtoull(buf + 1, &end, 10);
    sp = strchr(buf, ' ');
    if (*fence == 0 || end != sp || strlen(sp + 1) >= GRANT_ENTRY_MAX)
        return 0;
    strcpy(entry, sp + 1);
    return 1;
}

/*
 * Block on our mailbox (BLPOP on this thread's own connection, so the reply
 * wakes this thread directly) for up to timeout_us.  LW_OK: a hand-off,
 * *fence and entry set; LW_R_WOKEN: woken to compete, or timed out;
 * LW_R_REFUSED: Redis answered BLPOP with an error (an ACL without it, most
 * likely); < 0: the connection failed.  After the last two the caller
 * polls instead.
 */
static int await_mail(struct attempt *a, int64_t timeout_us, uint64_t *fence,
                      char *entry)
{
    char secs[32];
    const char *argv[] = {"BLPOP", a->alive, secs};
    size_t lens[] = {5, a->alivelen + 2, 0};
    struct lw_cmd cmd = {3, argv, lens};
    struct lw_request q = {.cmds = &cmd,
                           .ncmds = 1,
                           .flags = LW_REQ_RAW_ERRORS | LW_REQ_INTERRUPTIBLE};
    redisReply *r;
    int replayed, rc;

    if (timeout_us < MAILBOX_MIN_US)
        timeout_us = MAILBOX_MIN_US;
    lens[2] = (size_t)snprintf(secs, sizeof secs, "%lld.%03lld",
                               (long long)(timeout_us / 1000000),
                               (long long)(timeout_us / 1000 % 1000));
    rc = lw__send(&a->to, &q, route_deadline(a), &r, &replayed);
    if (rc == LW_R_ASKED) /* the slot is moving: poll */
        return LW_EREDIS;
    if (rc != LW_OK)
        return rc;
    rc = LW_R_WOKEN;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        if (parse_grant(r->element[1]->str, r->element[1]->len, fence, entry))
            rc = LW_OK;
    } else if (r->type == REDIS_REPLY_ERROR) {
        lw__conn_log_error(r);
        rc = LW_R_REFUSED;
    } else if (r->type != REDIS_REPLY_NIL) {
        rc = LW_EREDIS;
    }
    freeReplyObject(r);
    return rc;
}

/* Until when this process's waiters poll instead of blocking on their
 * mailboxes, and under which configuration (lw_settings.gen): set when
 * Redis refuses BLPOP (an ACL without it), so that every wait does not fail
 * and log the same way.  Another configuration may be another server or
 * user: it starts without the flag.  A lost connection only makes the wait
 * it happened in poll.  Shared by every thread, read and written with
 * relaxed atomics, no lock: the two fields may be seen out of step for a
 * moment, which costs one wait a poll or a BLPOP more, never a wrong
 * answer (either way the wait goes on). */
static int64_t mailbox_off_until_us;
static unsigned mailbox_off_gen;

static int mailbox_usable(const struct lw_settings *cfg)
{
    return __atomic_load_n(&mailbox_off_gen, __ATOMIC_RELAXED) != cfg->gen ||
           lw__now_us() >=
               __atomic_load_n(&mailbox_off_until_us, __ATOMIC_RELAXED);
}

static void mailbox_refused(const struct lw_settings *cfg)
{
    int64_t now = lw__now_us();
    unsigned gen =
        __atomic_exchange_n(&mailbox_off_gen, cfg->gen, __ATOMIC_RELAXED);

    if (__atomic_exchange_n(&mailbox_off_until_us, now + MAILBOX_OFF_US,
                            __ATOMIC_RELAXED) <= now ||
        gen != cfg->gen)
        lw__log(LW_LOG_INFO,
                "Redis refused BLPOP on a waiter's mailbox: waiters poll "
                "for the next %d s",
                MAILBOX_OFF_US / 1000000);
}

/*
 * The busy case: queue up in Redis and block on our mailbox until a release
 * hands us the lock or wakes us (to compete), the holder's TTL runs out, a
 * poll is due, or the deadline comes.  Each poll refreshes our place and
 * alive key.
 */
static int wait_for(struct attempt *a, int64_t ttl_ms, int *queued)
{
    /* Without a mailbox: full jitter, so processes that lost together do
     * not retry together. */
    struct lw_backoff backoff = {BACKOFF_START_US, BACKOFF_MAX_US};
    char entry[GRANT_ENTRY_MAX];
    uint64_t fence;
    int mailbox = mailbox_usable(a->l->cfg), rc;

    rc = enqueue(a, mailbox ? JOIN_LISTENING : JOIN_POLLING, &ttl_ms);
    *queued = rc == LW_R_BUSY;
    while (rc == LW_R_BUSY) {
        int64_t left_us = a->deadline_us - lw__now_us();
        if (left_us <= 0 || lw__gate_closing())
            break;
        left_us = next_sleep_us(a, mailbox, &backoff, ttl_ms, left_us);
        if (!mailbox) {
            lw__gate_sleep_us(left_us);
        } else if ((rc = await_mail(a, left_us, &fence, entry)) == LW_OK &&
                   fresh_grant(a, entry)) {
            *a->fence = fence;
            a->valid_ms = a->l->expire_ms;
            return LW_OK;
        } else if (rc == LW_R_REFUSED) {
            mailbox_refused(a->l->cfg);
            mailbox = 0; /* for the rest of this wait */
        } else if (rc < 0) {
            mailbox = 0;
        }
        rc = LW_R_BUSY;
        if (lw__gate_closing())
            break; /* lw_shutdown(): leave the queue at once */
        rc = enqueue(a, mailbox ? JOIN_LISTENING : JOIN_POLLING, &ttl_ms);
    }
    if (rc == LW_R_BUSY) { /* deadline or shutdown: leave the queue, unless
                              handed it */
        rc = enqueue(a, JOIN_LEAVE, &ttl_ms);
        rc = rc == LW_R_BUSY ? LW_ETIMEOUT : rc;
    }
    return rc;
}

/*
 * A failed try may still have taken the lock: an error reply to the INCR
 * after a successful SET, or a connection lost after the server ran the
 * SET.  Give it back if it is ours (the release script compares the token),
 * rather than leave it held by nobody until its TTL.  Best effort: on a dead
 * connection this fails fast, and the TTL remains the bound.
 */
void lw__queue_give_back(const struct lw_hold *l, const struct lw_names *names)
{
    redisReply *r;
    int replayed;

    if (lw__queue_release_script(l, names, lw__now_us(), &r, &replayed) ==
        LW_OK)
        freeReplyObject(r);
}

/* The last key this thread waited for, by hash, and until when to treat it
 * as contended.  Per thread, no lock: only a hint for which request to send
 * first (a hash collision costs one script instead of a pipeline). */
static _Thread_local struct {
    uint64_t hash;
    int64_t until_us;
} hot;

static uint64_t key_hash(const struct lw_hold *l)
{
    return lw__hash_bytes(l->key, l->keylen);
}

static int hot_key(const struct lw_hold *l, int64_t now_us)
{
    return now_us < hot.until_us && hot.hash == key_hash(l);
}

/* A new token for l, with its kind's tag: LW_OK or lw__token_new()'s
 * error. */
static int token_init(struct lw_hold *l)
{
    int toklen = lw__token_new(l->token);

    if (toklen < 0)
        return toklen;
    if (l->kind->token_tag != NULL) {
        size_t n = strlen(l->kind->token_tag);
        memcpy(l->token + toklen, l->kind->token_tag, n + 1);
        toklen += (int)n;
    }
    l->toklen = toklen;
    return LW_OK;
}

int lw__queue_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                      uint64_t *fence)
{
    char alivebuf[NAME_INLINE]; /* not in a: no need to zero it */
    struct attempt a = {
        .l = l, .opts = opts, .fence = fence, .alivebuf = alivebuf};
    struct lw_names names;
    int64_t start_us = lw__now_us(), ttl_ms = 0;
    int rc, queued = 0;

    rc = lw__target_for(&a.to, l->cfg, l->key, l->keylen);
    if (rc != LW_OK)
        return rc;
    a.deadline_us = start_us + (int64_t)opts->wait_ms * 1000;
    rc = token_init(l);
    if (rc != LW_OK)
        return rc;
    if (lw__names_init(&names, l->key, l->keylen, l->prefix_len,
                       l->cfg->ep.topology == LW_TOPO_CLUSTER) != LW_OK)
        return LW_ENOMEM;
    a.names = &names;

    /* A key this thread just had to queue for is likely still contended:
     * queue at once (the script also takes a free lock) rather than spend a
     * round trip on a try that will find it busy. */
    rc = hot_key(l, start_us) && opts->wait_ms > 0 ? LW_R_BUSY
                                                   : try_free(&a, &ttl_ms);
    if (rc == LW_R_BUSY) {
        lw__hold_contended(l);
        rc = opts->wait_ms == 0 ? LW_ETIMEOUT : wait_for(&a, ttl_ms, &queued);
        lw__hold_waited(l, start_us);
        /* Hot while we keep having to queue; cold as soon as it is free. */
        hot.until_us = queued ? lw__now_us() + HOT_US : 0;
        hot.hash = key_hash(l);
    }
    if (rc == LW_EREDIS || rc == LW_EAUTH) /* EAUTH: NOPERM in a script */
        lw__queue_give_back(l, &names);
    if (rc == LW_OK) {
        /* The lease is measured from before the request: whatever the
         * round trip took, our clock never believes in more lease than
         * Redis gave. */
        l->valid_until_ms = a.sent_us / 1000 + a.valid_ms;
        /* Replica-safe acquire: it counts once the replicas have it. */
        if (l->cfg->wait_replicas > 0)
            rc = lw__wait_replicas(l, &names, &a.to);
    }
    lw__names_free(&names);
    if (a.alive != NULL && a.alive != a.alivebuf)
        free(a.alive);
    return rc;
}

int lw__queue_try_request(struct lw_try *t, struct lw_hold *l)
{
    int rc;

    t->l = l;
    t->q.script = NULL; /* nothing to free yet */
    if (l->kind->try_free == NULL)
        return LW_EINVAL;
    rc = token_init(l);
    if (rc != LW_OK)
        return rc;
    if (lw__names_init(&t->names, l->key, l->keylen, l->prefix_len,
                       l->cfg->ep.topology == LW_TOPO_CLUSTER) != LW_OK)
        return LW_ENOMEM;
    try_args(l, &t->names, t->argv, t->lens);
    t->q = (struct lw_request){.script = l->kind->try_free,
                               .nkeys = 2,
                               .nargs = 2,
                               .argv = t->argv,
                               .lens = t->lens};
    return LW_OK;
}

int lw__queue_try_reply(struct lw_try *t, int rc, redisReply *r,
                        int64_t sent_us, uint64_t *fence)
{
    struct lw_hold *l = t->l;
    char entry[GRANT_ENTRY_MAX];
    int64_t valid_ms = 0, ttl_ms = 0;

    if (t->q.script == NULL) { /* never sent */
        if (r != NULL)
            freeReplyObject(r);
        return rc != LW_OK ? rc : LW_EINVAL;
    }
    if (rc == LW_OK)
        rc = take_reply(l, r, fence, &valid_ms, &ttl_ms, entry);
    if (r != NULL)
        freeReplyObject(r);
    /* As lw__queue_acquire(): a failed try may still have taken it, if it
     * was written at all. */
    if ((rc == LW_EREDIS || rc == LW_EAUTH) && sent_us != 0)
        lw__queue_give_back(l, &t->names);
    if (rc == LW_OK) /* from before the request, as lw__queue_acquire() */
        l->valid_until_ms = sent_us / 1000 + valid_ms;
    lw__names_free(&t->names);
    t->q.script = NULL;
    return rc;
}

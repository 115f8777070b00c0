/*
 * The mutex: the lock key holds its holder's token.  The kind every other
 * builds on: writers of a read/write lock are mutexes, and the queue,
 * hand-off and fences below are every kind's.  Redlock can take it, and
 * threads of a process hand it to each other (cohort.c).
 */
#include <lockweave.h>
#include <string.h>

#include "base/config.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/hold.h"
#include "core/lua.h"
#include "core/queue.h"
#include "core/release.h"
#include "core/scripts.h"
#include "core/send.h"

/* Renew a batch of leases in one call.  KEYS: the locks; ARGV: their tokens,
 * then their lease ms.  Returns one 1 (renewed) or 0 (not ours) per key.
 * Never re-creates a key that expired: a lost lease stays lost. */
static const char renew_lua[] =
    "local n = #KEYS\n"
    "local out = {}\n"
    "for i = 1, n do\n"
    "  if redis.call('get', KEYS[i]) == ARGV[i] then\n"
    "    out[i] = redis.call('pexpire', KEYS[i], ARGV[n + i])\n"
    "  else\n"
    "    out[i] = 0\n"
    "  end\n"
    "end\n"
    "return out\n";

/*
 * Fences for a run of sections handed on between threads of one process
 * (cohort.c), minted only while the key still holds the holder's token: a
 * lock removed behind its holder's back (a forced unlock, an eviction) may
 * already be another caller's, whose fence must stay above all of these.
 * The token check and the minting are one script, so no other caller's
 * fence can come between them.  KEYS: lock, fence counter.  ARGV: token, n.
 * Returns the last of n fences, or 0 when the lock is not ours.
 */
static const char handfences_lua[] =
    MINT_LUA "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
             "return mint(KEYS[2], tonumber(ARGV[2]))\n";

/*
 * The check of a run of an event loop's sections handed on in memory
 * (loop/turn.c), which may let the run go on: whether the key still holds
 * the run's token, and if so, while nobody waits in its queue, n more
 * fences.  A waiter of another process is queued before it waits, so a
 * check that finds the queue empty lets no waiter of it wait longer than
 * the run's local_handoffs sections from here.  KEYS: lock, queue, fence
 * counter.  ARGV: token, n.  Returns the last of n fences, -1 when the
 * lock is ours but someone waits (nothing minted), or 0 when it is not
 * ours.
 */
static const char handmore_lua[] =
    MINT_LUA "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
             "if redis.call('exists', KEYS[2]) == 1 then return -1 end\n"
             "return mint(KEYS[3], tonumber(ARGV[2]))\n";

/* The first try (acquire.c): the lock taken if free, its fence minted in
 * the same step.  Our own token in the key is this same try run before a
 * lost reply made net/exchange.c send it again: ours, its lease what is
 * left.  KEYS: lock, fence counter.  ARGV: token, lease ms.  {fence, lease
 * left ms} when ours, {-1, ''} when busy (the holder's TTL not asked for:
 * the acquire-or-queue script that follows tells).  mint() is defined
 * before it. */
#define TRY_LUA                                                                \
    "local v = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], "      \
    "'GET')\n"                                                                 \
    "if not v then return {mint(KEYS[2]), tonumber(ARGV[2])} end\n"            \
    "if v == ARGV[1] then\n"                                                   \
    "  return {mint(KEYS[2]), redis.call('pttl', KEYS[1])}\n"                  \
    "end\n"                                                                    \
    "return {-1, ''}\n"
static const char try_lua[] = MINT_LUA TRY_LUA;

/* Is the lock still ours?  KEYS: lock.  ARGV: token.  1 or 0.  For a slot
 * being migrated, where a plain GET may be asked to go elsewhere (ASK) and
 * a script is redirected whole. */
static const char owned_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return 1 end\n"
    "return 0\n";

/* Acquire-or-queue, for threads that found the lock busy.
 * KEYS: lock, queue, fence, alive key.  ARGV: token, lease ms, join (1: queue
 * up / refresh, listening on the mailbox; p: the same, polling instead; 0:
 * leave the queue), queue ttl ms, alive ms.  The alive key holds 1 or p.
 * The queue's TTL is set on every poll, not only lengthened: another
 * waiter's shorter one may cut it, but every live waiter polls far more
 * often than any queue ttl (over a second), so a queue with a live waiter
 * never expires.
 * Returns {fence, lease left ms} when the lock is ours — free now, or handed
 * to us by a release (our token already in place) — else {-1 - its TTL, our
 * entry's score ('' when not queued)}: a hand-off names the entry it was
 * made to, so the waiter can tell a current one from a late message.  The
 * first element tells the replies apart: > 0 a fence, < 0 busy, 0 (the
 * semaphore's and read lock's scripts) a key held as another kind, which
 * no TTL can read as. */
static const char enqueue_lua[] = MINT_LUA
    "local member = ARGV[1] .. '|' .. ARGV[2]\n"
    "local v = redis.call('get', KEYS[1])\n"
    "if v == ARGV[1] or (not v and redis.call('set', KEYS[1], ARGV[1], "
    "'PX', ARGV[2])) then\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {mint(KEYS[3]), redis.call('pttl', KEYS[1])}\n"
    "end\n" QUEUE_LUA "local ttl = redis.call('pttl', KEYS[1])\n"
    "if ttl < 0 then ttl = 0 end\n"
    "return {-1 - ttl, redis.call('zscore', KEYS[2], member) or ''}\n";

/*
 * Release.  KEYS: lock, queue, fence.  ARGV: token, mailbox ms, hand-off age
 * ms, alive-key prefix, receipt ms.  1 released, 2 released by an earlier run
 * of this same release (see below), 0 already expired, -1 held by another
 * owner.
 * With waiters queued, the oldest live one that listens is told, in its
 * mailbox (kept for mailbox ms): if it has waited at least the hand-off age
 * (always when that is 0, whatever the clock says of its entry), the lock is
 * handed to it right here (set to its token, fence minted, "g<fence> <entry
 * score>" sent, the score naming the queue entry it was made to) so nobody
 * can barge past it; otherwise "w" wakes it to compete.  The hand-off
 * bounds every waiter's wait.  A waiter that polls (Redis refused it BLPOP)
 * would hear of a hand-off only at its next poll, the lock idle until then: it
 * is passed over (the first POLLERS_SKIPPED of them) and finds the lock free.
 * A release that told a waiter leaves a receipt, "<alive prefix><our
 * token>:rel", for receipt ms: a release sent again after its reply was lost
 * (connection killed) may then find the waiter's token in the key — handed
 * to it, or taken by it or a barger once woken — and the receipt tells it
 * that this was its own doing, not a lost lease.  (A release with nobody
 * queued leaves none: that would cost every release a write, and a caller
 * that takes the key between the two runs is rare; the retry then reports
 * LW_ELOST, a false alarm, never a hidden loss.)  Receipt ms "0" leaves
 * none: a forced unlock by an operator runs this script with the holder's
 * token, and the holder's own release must then read "another owner" or
 * "gone" (LW_ELOST), not "released by me".
 * While the slot is being migrated, Redis refuses a command on a key this
 * node does not hold (it may be on the other node already): the lock key is
 * overwritten for a hand-off, never deleted and set again, and the queue is
 * not read again once its last member is gone.  The alive key, mailbox and
 * receipt are not declared (their names depend on the queue's head and our
 * token), so such a key may have moved: pcall catches that, and the waiter
 * is only woken, never handed a lock it may not be alive to release.
 * With no queue at all, the common case, the key is deleted before the
 * hand-off's functions are even defined: every release would pay for them.
 */
/* clang-format off */
/* The readers' set is not declared here (a mutex's release would otherwise
 * name a key that seldom exists, which a migrating slot refuses): it is the
 * queue's name with ":r" for ":q".  So readers queued behind a writer are
 * handed the lock only where that set can be written (readers_here()), and
 * woken to compete where it cannot. */
#define RELEASE_LUA                                                            \
    "local v = redis.call('get', KEYS[1])\n"                                   \
    "local receipt = ARGV[4] .. ARGV[1] .. ':rel'\n"                           \
    "if v ~= ARGV[1] then\n"                                                   \
    "  if redis.pcall('exists', receipt) == 1 then return 2 end\n"             \
    "  if v then return -1 end\n"                                              \
    "  return 0\n"                                                             \
    "end\n"                                                                    \
    "if redis.call('exists', KEYS[2]) == 0 then\n"                             \
    "  redis.call('del', KEYS[1])\n"                                           \
    "  return 1\n"                                                             \
    "end\n"                                                                    \
    MINT_LUA READERS_LUA("string.sub(KEYS[2], 1, -3) .. ':r'")                 \
    HANDOFF_LUA("redis.call('set', KEYS[1], tok, 'PX', lease)",                \
                "add_reader(tok, lease, math.floor(clock() / 1000))",          \
                "readers_here()", "redis.call('del', KEYS[1])")
static const char release_lua[] = RELEASE_LUA;
/* clang-format on */

/* A pump's batch (core/batch.c): free tries ("t", try_lua's KEYS and
 * ARGV) and releases ("r", release_lua's), many in one call (lua.h,
 * BATCH_LUA).  A call of Redis from Lua costs more than the command it
 * runs, and a take's fence two of the six calls a take and its release
 * make when nobody waits: the tries' fences read the server's clock once
 * for them all, and a counter a try of this call minted from is past that
 * clock already (a counter only rises), so the next fence from it is the
 * counter plus one, its INCR: one call where mint() would write the
 * clock's fence, read the counter ahead of it and write again. */
#define BATCH_CLOCK_LUA                                                        \
    "  if minted[k] and not n then return redis.call('incr', k) end\n"         \
    "  minted[k] = true\n"                                                     \
    "  if not now then\n"                                                      \
    "    local t = redis.call('time')\n"                                       \
    "    now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                    \
    "  end\n"                                                                  \
    "  local f = now\n"
static const char batch_lua[] =
    "local now, minted = nil, {}\n" MINT_FROM_LUA(BATCH_CLOCK_LUA)
    "local function try(KEYS, ARGV)\n" TRY_LUA "end\n"
    "local function release(KEYS, ARGV)\n" RELEASE_LUA "end\n"
    BATCH_LUA("t = try, r = release");

/* One lock key alone: compare the token, then renew (ARGV[2], lease ms) or
 * delete (no ARGV[2]).  KEYS: lock.  ARGV: token [, lease ms].  1 done, 0
 * no such key, -1 another owner's.  For Redlock's masters, and in a cluster
 * for a slot being migrated, where a script's keys must all be on one node
 * and one key always is. */
static const char onekey_lua[] =
    "local v = redis.call('get', KEYS[1])\n"
    "if v == ARGV[1] then\n"
    "  if ARGV[2] then return redis.call('pexpire', KEYS[1], ARGV[2]) end\n"
    "  return redis.call('del', KEYS[1])\n"
    "end\n"
    "if v then return -1 end\n"
    "return 0\n";

struct lw_script lw__script_renew = LW_SCRIPT_INIT(renew_lua);
struct lw_script lw__script_release = LW_SCRIPT_INIT(release_lua);
struct lw_script lw__script_enqueue = LW_SCRIPT_INIT(enqueue_lua);
struct lw_script lw__script_try = LW_SCRIPT_INIT(try_lua);
struct lw_script lw__script_onekey = LW_SCRIPT_INIT(onekey_lua);
struct lw_script lw__script_handfences = LW_SCRIPT_INIT(handfences_lua);
struct lw_script lw__script_handmore = LW_SCRIPT_INIT(handmore_lua);
struct lw_script lw__script_owned = LW_SCRIPT_INIT(owned_lua);
struct lw_script lw__script_batch = LW_SCRIPT_INIT(batch_lua);

/* The lock key alone (onekey script): compare the token, then delete the
 * key (ms NULL) or set its TTL to ms; no hand-off. */
static int send_onekey(const struct lw_settings *s, const char *key,
                       size_t keylen, const char *token, size_t toklen,
                       const char *ms, int64_t deadline_us, redisReply **r,
                       int *replayed)
{
    const char *argv[] = {key, token, ms};
    size_t lens[] = {keylen, toklen, ms ? strlen(ms) : 0};

    return lw__send_script(s, &lw__script_onekey, 1, ms ? 2 : 1, argv, lens, 0,
                           deadline_us, r, replayed);
}

int lw__release_send(const struct lw_settings *s, const char *key,
                     size_t keylen, const char *token, size_t toklen,
                     const struct lw_names *n, int flags, int64_t deadline_us,
                     redisReply **r, int *replayed)
{
    struct lw_release_args a;
    int rc;

    lw__release_args(&a, s, key, keylen, token, toklen, n, 0,
                     flags & LW_RELEASE_NO_RECEIPT, -1);
    rc = lw__send_script(s, &lw__script_release, a.nkeys, a.nargs, a.argv,
                         a.lens, LW_REQ_SPLIT_OK, deadline_us, r, replayed);
    /* A slot in migration refuses a script whose keys are not all on one
     * node (the queue usually does not exist at all) until the migration
     * ends, which may outlast the lease.  Delete the lock key alone, on
     * whichever node has it: waiters find it free at their next poll. */
    if (rc == LW_R_SPLIT)
        rc = send_onekey(s, key, keylen, token, toklen, NULL, deadline_us, r,
                         replayed);
    return rc;
}

/* Given back through the queue, or, within a minimum hold, kept: the key
 * keeps our token until the hold ends, with no hand-off (waiters' polls are
 * timed by the key's TTL, so the first of them takes it when it ends). */
static int release(const struct lw_hold *l, const struct lw_names *n,
                   int64_t hold_ms, int64_t deadline_us, redisReply **r,
                   int *replayed)
{
    char ms[LW_FMT_U64_MAX];

    if (hold_ms <= 0)
        return lw__release_send(l->cfg, l->key, l->keylen, l->token,
                                (size_t)l->toklen, n, 0, deadline_us, r,
                                replayed);
    lw__fmt_dec(ms, (uint64_t)hold_ms);
    return send_onekey(l->cfg, l->key, l->keylen, l->token, (size_t)l->toklen,
                       ms, deadline_us, r, replayed);
}

/* A token, or anything but the readers' mark. */
static int owns(const redisReply *get)
{
    return get->type == REDIS_REPLY_STRING &&
           !lw__read_marked(get->str, get->len);
}

const struct lw_kind lw__kind_mutex = {
    .name = "mutex",
    .noun = "a mutex",
    .flags = LW_KIND_REDLOCK | LW_KIND_HANDOFF,
    .enqueue = &lw__script_enqueue,
    .try_free = &lw__script_try,
    .renew = &lw__script_renew,
    .renew_alone = &lw__script_renew,
    .release = release,
    .release_script = &lw__script_release, /* lw__release_send()'s */
    .batch = &lw__script_batch,
    .owns = owns,
};

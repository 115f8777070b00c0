/*
 * Server-side scripts.  Redis runs a script atomically, so "compare the token,
 * then act" cannot interleave with another client's write: the check-then-act
 * races of GET-then-DEL from the client side are impossible.
 */
#include "core/scripts.h"

#include "core/keynames.h"

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
 * Mint a fence from counter k (keynames.c: shared by many lock keys).  A
 * counter Redis lost — evicted, flushed, restarted empty — comes back from
 * INCR at 1, below every fence it gave: it starts again at the server's
 * clock in microseconds instead, past every fence it gave before, which
 * grew by one per acquisition from that clock's value at its own start (a
 * counter would need more than a million acquisitions a second, sustained,
 * to outrun it).  So fences keep increasing per key through such a loss,
 * as long as the server's clock does not step back.  Fences are past 14
 * digits, where Lua prints a number as "1.7955509984812e+15": they are
 * written with string.format('%d'), the clock from TIME's own strings.
 */
#define MINT_LUA                                                               \
    "local function mint(k)\n"                                                 \
    "  local f = redis.call('incr', k)\n"                                      \
    "  if f >= " LW_FENCE_FLOOR_LUA " then return f end\n"                     \
    "  local t = redis.call('time')\n"                                         \
    "  local now = t[1] .. string.format('%06d', tonumber(t[2]))\n"            \
    "  redis.call('set', k, now)\n"                                            \
    "  return tonumber(now)\n"                                                 \
    "end\n"

/* A fence for a lock taken by the plain SET whose INCR found the counter
 * lost.  KEYS: the fence counter.  Returns the fence. */
static const char fence_lua[] = MINT_LUA "return mint(KEYS[1])\n";

/*
 * Waiting is fair by default: waiters queue in Redis, ordered by the server's
 * clock, in the sorted set KEYS[2] (members "token|lease-ms", scored by the
 * server's TIME in microseconds when they joined), and each keeps an "alive"
 * key (<alive prefix><token>) refreshed on every poll, so a waiter that died
 * is skipped instead of handed a lock it will never release.  A release tells
 * the head of the queue through its mailbox, the list "<alive key>:g", which
 * the waiter blocks on with BLPOP on its own connection: the reply wakes the
 * waiting thread itself, and a message sent while the waiter was busy polling
 * is still there when it blocks again (pub/sub would have dropped it).
 */

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
 * made to, so the waiter can tell a current one from a late message. */
static const char enqueue_lua[] = MINT_LUA
    "local member = ARGV[1] .. '|' .. ARGV[2]\n"
    "local v = redis.call('get', KEYS[1])\n"
    "if v == ARGV[1] or (not v and redis.call('set', KEYS[1], ARGV[1], "
    "'PX', ARGV[2])) then\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {mint(KEYS[3]), redis.call('pttl', KEYS[1])}\n"
    "end\n"
    "if ARGV[3] ~= '0' then\n"
    "  local t = redis.call('time')\n"
    "  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "  redis.call('zadd', KEYS[2], 'NX', now, member)\n"
    "  redis.call('pexpire', KEYS[2], ARGV[4])\n"
    "  redis.call('set', KEYS[4], ARGV[3], 'PX', ARGV[5])\n"
    "else\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "end\n"
    "local ttl = redis.call('pttl', KEYS[1])\n"
    "if ttl < 0 then ttl = 0 end\n"
    "return {-1 - ttl, redis.call('zscore', KEYS[2], member) or ''}\n";

/*
 * Release.  KEYS: lock, queue, fence.  ARGV: token, mailbox ms, hand-off age
 * ms, alive-key prefix, receipt ms.  1 released, 2 released by an earlier run
 * of this same release (see below), 0 already expired, -1 held by another
 * owner.
 * With waiters queued, the oldest live one that listens is told, in its
 * mailbox (kept for mailbox ms): if it has waited at least the hand-off age,
 * the lock is handed to it right here (set to its token, fence minted,
 * "g<fence> <entry score>" sent, the score naming the queue entry it was
 * made to) so nobody can barge past it; otherwise "w" wakes it to compete.
 * Barging while the queue is young keeps throughput; the hand-off bounds
 * every waiter's wait.  A waiter that polls (Redis refused it BLPOP) would
 * hear of a hand-off only at its next poll, the lock idle until then: it is
 * passed over (the first POLLERS_SKIPPED of them) and finds the lock free.
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
 */
#define POLLERS_SKIPPED "32"
static const char release_lua[] = MINT_LUA
    "local v = redis.call('get', KEYS[1])\n"
    "local receipt = ARGV[4] .. ARGV[1] .. ':rel'\n"
    "if v ~= ARGV[1] then\n"
    "  if redis.pcall('exists', receipt) == 1 then return 2 end\n"
    "  if v then return -1 end\n"
    "  return 0\n"
    "end\n"
    "local function tell(tok, msg)\n"
    "  if ARGV[5] ~= '0' then\n"
    "    redis.pcall('set', receipt, '1', 'PX', ARGV[5])\n"
    "  end\n"
    "  local box = ARGV[4] .. tok .. ':g'\n"
    "  redis.pcall('rpush', box, msg)\n"
    "  redis.pcall('pexpire', box, ARGV[2])\n"
    "end\n"
    "local n = redis.call('zcard', KEYS[2])\n"
    "local i, now = 0\n"
    "while i < n and i < " POLLERS_SKIPPED " do\n"
    "  local head = redis.call('zrange', KEYS[2], i, i, 'WITHSCORES')\n"
    "  if not now then\n"
    "    local t = redis.call('time')\n"
    "    now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "  end\n"
    "  local sep = string.find(head[1], '|', 1, true)\n"
    "  local tok = string.sub(head[1], 1, sep - 1)\n"
    "  local lease = string.sub(head[1], sep + 1)\n"
    "  local alive = redis.pcall('get', ARGV[4] .. tok)\n"
    "  if not alive then\n"
    "    redis.call('zrem', KEYS[2], head[1])\n"
    "    n = n - 1\n"
    "  elseif alive == 'p' then\n"
    "    i = i + 1\n"
    "  elseif type(alive) == 'string' and\n"
    "      now - tonumber(head[2]) >= tonumber(ARGV[3]) * 1000 then\n"
    "    redis.call('zrem', KEYS[2], head[1])\n"
    "    redis.call('set', KEYS[1], tok, 'PX', lease)\n"
    "    local f = mint(KEYS[3])\n"
    "    tell(tok, 'g' .. string.format('%d', f) .. ' ' .. head[2])\n"
    "    return 1\n"
    "  else\n"
    "    redis.call('del', KEYS[1])\n"
    "    tell(tok, 'w')\n"
    "    return 1\n"
    "  end\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "return 1\n";

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
struct lw_script lw__script_onekey = LW_SCRIPT_INIT(onekey_lua);
struct lw_script lw__script_fence = LW_SCRIPT_INIT(fence_lua);

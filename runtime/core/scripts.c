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
 * grew by one per acquisition (at most local_handoffs more for a run handed
 * between threads, cohort.c) from that clock's value at its own start: it
 * would have to grow by more than a million a second, sustained, to outrun
 * it.  So fences keep increasing per key through such a loss,
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
 * Fences for a run of sections handed on between threads of one process
 * (cohort.c), minted only while the key still holds the holder's token: a
 * lock removed behind its holder's back (a forced unlock, an eviction) may
 * already be another caller's, whose fence must stay above all of these.
 * The token and the INCRBY are one script, so no other caller's fence can
 * come between the check and the count.  KEYS: lock, fence counter.  ARGV:
 * token, n.  Returns the last of n fences, or 0 when the lock is not ours.
 * A counter Redis lost restarts at the server's clock, as mint() does.
 */
static const char handfences_lua[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "local n = tonumber(ARGV[2])\n"
    "local f = redis.call('incrby', KEYS[2], n)\n"
    "if f - n + 1 >= " LW_FENCE_FLOOR_LUA " then return f end\n"
    "local t = redis.call('time')\n"
    "local last = tonumber(t[1] .. string.format('%06d', tonumber(t[2]))) +\n"
    "    n - 1\n"
    "redis.call('set', KEYS[2], string.format('%d', last))\n"
    "return last\n";

/* Is the lock still ours?  KEYS: lock.  ARGV: token.  1 or 0.  For a slot
 * being migrated, where a plain GET may be asked to go elsewhere (ASK) and
 * a script is redirected whole. */
static const char owned_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return 1 end\n"
    "return 0\n";

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

/* Join (or refresh our place in) the queue, or leave it: the busy half of
 * the acquire-or-queue scripts.  KEYS[2] queue, KEYS[4] alive key; ARGV[1]
 * token, ARGV[2] lease ms, ARGV[3] join, ARGV[4] queue ttl ms, ARGV[5]
 * alive ms; member: "token|lease-ms". */
#define QUEUE_LUA                                                              \
    "if ARGV[3] ~= '0' then\n"                                                 \
    "  local t = redis.call('time')\n"                                         \
    "  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                \
    "  redis.call('zadd', KEYS[2], 'NX', now, member)\n"                       \
    "  redis.call('pexpire', KEYS[2], ARGV[4])\n"                              \
    "  redis.call('set', KEYS[4], ARGV[3], 'PX', ARGV[5])\n"                   \
    "else\n"                                                                   \
    "  redis.call('zrem', KEYS[2], member)\n"                                  \
    "  redis.call('del', KEYS[4])\n"                                           \
    "end\n"

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

#define POLLERS_SKIPPED "32"
/* Tell the oldest live waiter that listens (see release_lua): hand it the
 * lock with the Lua statement grant (tok: its token, lease: its lease ms,
 * clock(): the server's clock in microseconds), or wake it after the
 * statement free; free too when nobody is told.  A waiter for a read lock (its
 * queue member ends "|r") is granted with grant_reader instead, and so is every
 * reader queued after it up to the next writer: readers share.  A reader is
 * only granted where the Lua expression reader_ok holds (the readers' set can
 * be written here, see READERS_LUA); otherwise it is woken, as a writer too
 * young for a hand-off is.  ARGV[1..5] as release_lua's; returns 1.  A head
 * alive and listening, the common case, costs one read of the queue and no
 * clock; the queue's length is read only to go past the head, and before
 * anything is removed from it, so that a queue emptied here is not read again
 * (see release_lua: migration). */
#define HANDOFF_LUA(grant, grant_reader, reader_ok, free)                      \
    "local function tell(tok, msg)\n"                                          \
    "  if ARGV[5] ~= '0' then\n"                                               \
    "    redis.pcall('set', receipt, '1', 'PX', ARGV[5])\n"                    \
    "  end\n"                                                                  \
    "  local box = ARGV[4] .. tok .. ':g'\n"                                   \
    "  redis.pcall('rpush', box, msg)\n"                                       \
    "  redis.pcall('pexpire', box, ARGV[2])\n"                                 \
    "end\n"                                                                    \
    "local n, i, now, readers = nil, 0, nil, false\n"                          \
    "local function clock()\n"                                                 \
    "  if not now then\n"                                                      \
    "    local t = redis.call('time')\n"                                       \
    "    now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                    \
    "  end\n"                                                                  \
    "  return now\n"                                                           \
    "end\n"                                                                    \
    "while i < " POLLERS_SKIPPED " and (not n or i < n) do\n"                  \
    "  local head = redis.call('zrange', KEYS[2], i, i, 'WITHSCORES')\n"       \
    "  if #head == 0 then break end\n"                                         \
    "  local sep = string.find(head[1], '|', 1, true)\n"                       \
    "  local tok = string.sub(head[1], 1, sep - 1)\n"                          \
    "  local lease = string.sub(head[1], sep + 1)\n"                           \
    "  local reader = string.sub(lease, -2) == '|r'\n"                         \
    "  if reader then lease = string.sub(lease, 1, -3) end\n"                  \
    "  local alive = redis.pcall('get', ARGV[4] .. tok)\n"                     \
    "  if reader or alive ~= '1' then\n"                                       \
    "    n = n or redis.call('zcard', KEYS[2])\n"                              \
    "  end\n"                                                                  \
    "  if not alive then\n"                                                    \
    "    redis.call('zrem', KEYS[2], head[1])\n"                               \
    "    n = n - 1\n"                                                          \
    "  elseif alive == 'p' then\n"                                             \
    "    i = i + 1\n"                                                          \
    "  elseif readers and not reader then\n"                                   \
    "    return 1\n"                                                           \
    "  elseif type(alive) == 'string' and (not reader or " reader_ok ") and\n" \
    "      (readers or ARGV[3] == '0' or\n"                                    \
    "      clock() - tonumber(head[2]) >= tonumber(ARGV[3]) * 1000) then\n"    \
    "    redis.call('zrem', KEYS[2], head[1])\n"                               \
    "    if reader then " grant_reader " else " grant " end\n"                 \
    "    local f = mint(KEYS[3])\n"                                            \
    "    tell(tok, 'g' .. string.format('%d', f) .. ' ' .. head[2])\n"         \
    "    if not reader then return 1 end\n"                                    \
    "    readers = true\n"                                                     \
    "    n = n - 1\n"                                                          \
    "  elseif readers then\n"                                                  \
    "    return 1\n"                                                           \
    "  else\n"                                                                 \
    "    " free "\n"                                                           \
    "    tell(tok, 'w')\n"                                                     \
    "    return 1\n"                                                           \
    "  end\n"                                                                  \
    "end\n"                                                                    \
    "if not readers then " free " end\n"                                       \
    "return 1\n"

/* Readers of a key (mode = read): while any holds it, the lock key holds
 * LW_READ_MARK (so a writer's SET NX finds it busy) with a TTL at least the
 * longest reader lease, and each reader is a member of the set readers (a
 * KEYS entry) scored by the end of its lease (the server's clock, ms).  A
 * reader holds the lock while it is in the set AND the key holds the mark:
 * both are needed, and the set alone says nothing once the key was removed
 * (forced, evicted, expired) and set again, perhaps after a writer held it.
 * So the key is only ever set to the mark with the set emptied first: a
 * reader's entry never outlives the mark it was admitted under, and its
 * renewal or release finds it gone (LW_ELOST).  add_reader(tok, lease,
 * nowms) admits one.
 * While its slot is being migrated, the node the slot leaves refuses a
 * command on a key it does not hold (it may be on the other node already:
 * ASK), in a script too ("non local key"): there, a set missing or deleted
 * cannot be created.  So a new mark empties the set around the reader
 * admitted instead of deleting it first, and readers_here() says whether
 * the set can be written here at all: EXISTS is refused exactly when this
 * node neither holds it nor may create it. */
#define READERS_LUA(readers)                                                   \
    "local readers_ok\n"                                                       \
    "local function readers_here()\n"                                          \
    "  if readers_ok == nil then\n"                                            \
    "    readers_ok = type(redis.pcall('exists', " readers ")) == 'number'\n"  \
    "  end\n"                                                                  \
    "  return readers_ok\n"                                                    \
    "end\n"                                                                    \
    "local function add_reader(tok, lease, nowms)\n"                           \
    "  local at = nowms + tonumber(lease)\n"                                   \
    "  redis.call('zadd', " readers ", at, tok)\n"                             \
    "  if redis.call('get', KEYS[1]) ~= '" LW_READ_MARK "' then\n"             \
    "    redis.call('zremrangebyscore', " readers ", '-inf', '(' .. at)\n"     \
    "    redis.call('zremrangebyscore', " readers ", '(' .. at, '+inf')\n"     \
    "    for _, m in ipairs(redis.call('zrangebyscore', " readers ", at, at))" \
    " do\n"                                                                    \
    "      if m ~= tok then redis.call('zrem', " readers ", m) end\n"          \
    "    end\n"                                                                \
    "    redis.call('set', KEYS[1], '" LW_READ_MARK "', 'PX', lease)\n"        \
    "  elseif redis.call('pttl', KEYS[1]) < tonumber(lease) then\n"            \
    "    redis.call('pexpire', KEYS[1], lease)\n"                              \
    "  end\n"                                                                  \
    "  redis.call('pexpire', " readers ", redis.call('pttl', KEYS[1]))\n"      \
    "end\n"

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
 */
/* clang-format off */
/* The readers' set is not declared here (a mutex's release would otherwise
 * name a key that seldom exists, which a migrating slot refuses): it is the
 * queue's name with ":r" for ":q".  So readers queued behind a writer are
 * handed the lock only where that set can be written (readers_here()), and
 * woken to compete where it cannot. */
static const char release_lua[] = MINT_LUA
    READERS_LUA("string.sub(KEYS[2], 1, -3) .. ':r'")
    "local v = redis.call('get', KEYS[1])\n"
    "local receipt = ARGV[4] .. ARGV[1] .. ':rel'\n"
    "if v ~= ARGV[1] then\n"
    "  if redis.pcall('exists', receipt) == 1 then return 2 end\n"
    "  if v then return -1 end\n"
    "  return 0\n"
    "end\n"
    HANDOFF_LUA("redis.call('set', KEYS[1], tok, 'PX', lease)",
                "add_reader(tok, lease, math.floor(clock() / 1000))",
                "readers_here()", "redis.call('del', KEYS[1])");

/*
 * A semaphore (permits = N): the key is a sorted set of its holders' tokens,
 * each scored by the end of its lease (the server's clock, ms), plus one
 * member "n:<N>" scored +inf that records N, so that a user asking for
 * another N is told (every user of a key must agree on N).  Holders whose
 * lease ended are dropped before every count: a holder that died frees its
 * permit when its lease ends.  The set's TTL is kept at least the longest
 * lease in it.  Waiting, hand-off and fences are the mutex's.
 */
#define SEM_CLOCK_LUA                                                          \
    "local t = redis.call('time')\n"                                           \
    "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
    "redis.call('zremrangebyscore', KEYS[1], '-inf', now_ms)\n"

/* Keep the set while its longest lease lasts (PEXPIRE ... GT would leave a
 * key without a TTL as it is). */
#define SEM_KEEP_LUA                                                           \
    "local function keep(ms)\n"                                               \
    "  if redis.call('pttl', KEYS[1]) < ms then\n"                             \
    "    redis.call('pexpire', KEYS[1], ms)\n"                                 \
    "  end\n"                                                                  \
    "end\n"

/* Acquire-or-queue for a semaphore: as enqueue_lua, KEYS and ARGV the same
 * plus ARGV[6] = N.  {0, "n:<N>"}: the key is held with another N (or is
 * not a semaphore: "type:<type>"). */
static const char sem_enqueue_lua[] = MINT_LUA SEM_KEEP_LUA
    "local ty = redis.call('type', KEYS[1]).ok\n"
    "if ty ~= 'none' and ty ~= 'zset' then return {0, 'type:' .. ty} end\n"
    SEM_CLOCK_LUA
    "local member = ARGV[1] .. '|' .. ARGV[2]\n"
    "local tag = 'n:' .. ARGV[6]\n"
    "local tags = redis.call('zrangebyscore', KEYS[1], '+inf', '+inf')\n"
    "local held = redis.call('zcard', KEYS[1]) - #tags\n"
    "if held > 0 and #tags > 0 and tags[1] ~= tag then\n"
    "  return {0, tags[1]}\n"
    "end\n"
    "local mine = redis.call('zscore', KEYS[1], ARGV[1])\n"
    "if mine or held < tonumber(ARGV[6]) then\n"
    "  local left = tonumber(ARGV[2])\n"
    "  if mine then left = tonumber(mine) - now_ms\n"
    "  else redis.call('zadd', KEYS[1], now_ms + left, ARGV[1]) end\n"
    "  for _, old in ipairs(tags) do redis.call('zrem', KEYS[1], old) end\n"
    "  redis.call('zadd', KEYS[1], '+inf', tag)\n"
    "  keep(left)\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {mint(KEYS[3]), left}\n"
    "end\n"
    QUEUE_LUA
    "local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')\n"
    "local ttl = tonumber(first[2]) - now_ms\n"
    "return {-1 - ttl, redis.call('zscore', KEYS[2], member) or ''}\n";

/* Release a permit: as release_lua (KEYS, ARGV[1..5], results; no -1: a
 * permit is nobody else's), plus ARGV[6] hold ms: > 0 keeps the permit
 * that much longer instead (hold_at_least), nobody told.  A hand-off adds
 * the waiter to the holders.  The set goes with its last holder. */
static const char sem_release_lua[] = MINT_LUA SEM_KEEP_LUA SEM_CLOCK_LUA
    "local receipt = ARGV[4] .. ARGV[1] .. ':rel'\n"
    "if not redis.call('zscore', KEYS[1], ARGV[1]) then\n"
    "  if redis.pcall('exists', receipt) == 1 then return 2 end\n"
    "  return 0\n"
    "end\n"
    "if tonumber(ARGV[6]) > 0 then\n"
    "  redis.call('zadd', KEYS[1], 'XX', now_ms + tonumber(ARGV[6]), ARGV[1])\n"
    "  keep(tonumber(ARGV[6]))\n"
    "  return 1\n"
    "end\n"
    "redis.call('zrem', KEYS[1], ARGV[1])\n"
    HANDOFF_LUA("redis.call('zadd', KEYS[1], math.floor(clock() / 1000) + "
                "tonumber(lease), tok) keep(tonumber(lease))",
                "error('a reader queued for a semaphore')", "true",
                "if redis.call('zcount', KEYS[1], '-inf', '(+inf') == 0 then "
                "redis.call('del', KEYS[1]) end");

/* Renew a batch of permits: as renew_lua (KEYS: the semaphores; ARGV:
 * tokens, then lease ms), each still ours only while its lease runs. */
static const char sem_renew_lua[] = SEM_KEEP_LUA
    "local n = #KEYS\n"
    "local out = {}\n"
    "local t = redis.call('time')\n"
    "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "for i = 1, n do\n"
    "  local s = redis.call('zscore', KEYS[i], ARGV[i])\n"
    "  out[i] = 0\n"
    "  if s and tonumber(s) > now_ms then\n"
    "    local ms = tonumber(ARGV[n + i])\n"
    "    redis.call('zadd', KEYS[i], 'XX', now_ms + ms, ARGV[i])\n"
    "    if redis.call('pttl', KEYS[i]) < ms then\n"
    "      redis.call('pexpire', KEYS[i], ms)\n"
    "    end\n"
    "    out[i] = 1\n"
    "  end\n"
    "end\n"
    "return out\n";

/* Acquire-or-queue for a read lock: as enqueue_lua, plus KEYS[5] the
 * readers' set; the queue member ends "|r".  A reader may take the lock
 * when it is free or read-held and no live writer is queued ahead of it
 * (a writer waiting is not starved by readers arriving after it).
 * {0, "type:<type>"}: the key is not a mutex's (a semaphore's).  A key
 * that holds a string other than the mark is a writer's (or a reader's of
 * a version that marked readers otherwise): busy. */
static const char rw_enqueue_lua[] = MINT_LUA READERS_LUA("KEYS[5]")
    "local ty = redis.call('type', KEYS[1]).ok\n"
    "if ty ~= 'none' and ty ~= 'string' then return {0, 'type:' .. ty} end\n"
    "local t = redis.call('time')\n"
    "local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "redis.call('zremrangebyscore', KEYS[5], '-inf', nowms)\n"
    "local member = ARGV[1] .. '|' .. ARGV[2] .. '|r'\n"
    "local v = redis.call('get', KEYS[1])\n"
    "local mine = redis.call('zscore', KEYS[5], ARGV[1])\n"
    "if mine and v == '" LW_READ_MARK "' then\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {mint(KEYS[3]), tonumber(mine) - nowms}\n"
    "end\n"
    "local function writer_ahead()\n"
    "  local prefix = string.sub(KEYS[4], 1, #KEYS[4] - #ARGV[1])\n"
    "  local at = redis.call('zscore', KEYS[2], member)\n"
    "  local ahead = redis.call('zrangebyscore', KEYS[2], '-inf',\n"
    "      at and ('(' .. at) or '+inf', 'LIMIT', 0, 256)\n"
    "  for _, m in ipairs(ahead) do\n"
    "    if string.sub(m, -2) ~= '|r' then\n"
    "      local tok = string.sub(m, 1, string.find(m, '|', 1, true) - 1)\n"
    "      if redis.pcall('exists', prefix .. tok) == 1 then return true end\n"
    "    end\n"
    "  end\n"
    "  return false\n"
    "end\n"
    "if (not v or v == '" LW_READ_MARK "') and not writer_ahead() then\n"
    "  add_reader(ARGV[1], ARGV[2], nowms)\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {mint(KEYS[3]), tonumber(ARGV[2])}\n"
    "end\n"
    QUEUE_LUA
    "local ttl = redis.call('pttl', KEYS[1])\n"
    "if ttl < 0 then ttl = 0 end\n"
    "return {-1 - ttl, redis.call('zscore', KEYS[2], member) or ''}\n";

/* Release a read lock: as release_lua (KEYS: lock, queue, fence, readers;
 * ARGV[1..5]; no -1: a read lock is nobody else's), plus ARGV[6] hold ms
 * (> 0: keep this reader that much longer, nobody told).  The last reader
 * out frees the key and tells the queue, as a writer's release does.  The
 * readers are counted before ours is removed, and the set is not read again
 * once it may be gone: in a slot being migrated, the node it leaves refuses
 * a command on a key it does not hold (see READERS_LUA). */
static const char rw_release_lua[] = MINT_LUA READERS_LUA("KEYS[4]")
    "local t = redis.call('time')\n"
    "local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local receipt = ARGV[4] .. ARGV[1] .. ':rel'\n"
    "local mine = redis.call('zscore', KEYS[4], ARGV[1])\n"
    "if not mine or tonumber(mine) <= nowms or\n"
    "    redis.call('get', KEYS[1]) ~= '" LW_READ_MARK "' then\n"
    "  if redis.pcall('exists', receipt) == 1 then return 2 end\n"
    "  return 0\n"
    "end\n"
    "redis.call('zremrangebyscore', KEYS[4], '-inf', nowms)\n"
    "if tonumber(ARGV[6]) > 0 then\n"
    "  add_reader(ARGV[1], ARGV[6], nowms)\n"
    "  return 1\n"
    "end\n"
    "if redis.call('zcard', KEYS[4]) > 1 then\n"
    "  redis.call('zrem', KEYS[4], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "redis.call('del', KEYS[4])\n"
    HANDOFF_LUA("redis.call('set', KEYS[1], tok, 'PX', lease)",
                "add_reader(tok, lease, math.floor(clock() / 1000))",
                "readers_here()", "redis.call('del', KEYS[1])");

/* Renew one read lock.  KEYS: lock, readers.  ARGV: token, lease ms.
 * 1 renewed, 0 not ours any more. */
static const char rw_renew_lua[] =
    "local t = redis.call('time')\n"
    "local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local s = redis.call('zscore', KEYS[2], ARGV[1])\n"
    "if not s or tonumber(s) <= nowms or\n"
    "    redis.call('get', KEYS[1]) ~= '" LW_READ_MARK "' then return 0 end\n"
    "redis.call('zadd', KEYS[2], 'XX', nowms + tonumber(ARGV[2]), ARGV[1])\n"
    "if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "end\n"
    "redis.call('pexpire', KEYS[2], redis.call('pttl', KEYS[1]))\n"
    "return 1\n";

/*
 * While a slot is being migrated, Redis runs a script only where all its
 * keys are (one key always is somewhere), refusing it (TRYAGAIN) while they
 * lie on two nodes or do not all exist: the queue of a lock nobody waits
 * for, for one, does not exist at all until the migration ends.  The scripts
 * below give back or keep a semaphore's permit or a read lock with fewer
 * keys, and without telling the queue: waiters find the lock free at their
 * next poll.
 */

/* A permit given back (ARGV[3] "0") or kept ARGV[3] ms longer, by the
 * semaphore's key alone.  KEYS: semaphore.  ARGV: token, alive-key prefix,
 * ms.  1, 2 or 0 as sem_release_lua. */
static const char sem_leave_lua[] = SEM_KEEP_LUA SEM_CLOCK_LUA
    "if not redis.call('zscore', KEYS[1], ARGV[1]) then\n"
    "  if redis.pcall('exists', ARGV[2] .. ARGV[1] .. ':rel') == 1 then\n"
    "    return 2\n"
    "  end\n"
    "  return 0\n"
    "end\n"
    "local ms = tonumber(ARGV[3])\n"
    "if ms > 0 then\n"
    "  redis.call('zadd', KEYS[1], 'XX', now_ms + ms, ARGV[1])\n"
    "  keep(ms)\n"
    "  return 1\n"
    "end\n"
    "if redis.call('zcount', KEYS[1], '-inf', '(+inf') > 1 then\n"
    "  redis.call('zrem', KEYS[1], ARGV[1])\n"
    "else\n"
    "  redis.call('del', KEYS[1])\n"
    "end\n"
    "return 1\n";

/* A reader given back (ARGV[3] "0") or kept ARGV[3] ms longer (a renewal,
 * the rest of a minimum hold).  KEYS: readers [, lock].  ARGV: token,
 * alive-key prefix, ms.  With the lock key, as rw_release_lua and
 * rw_renew_lua, the last reader out deleting the key.  Without it (the
 * two are on different nodes), the key is rw_mark_lua's, and 3 says this
 * was the last reader.  Else 1 done, 2 released by an earlier run, 0 not
 * ours.  The set is not read after it may be gone (see READERS_LUA). */
static const char rw_leave_lua[] =
    "local t = redis.call('time')\n"
    "local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local mine = redis.call('zscore', KEYS[1], ARGV[1])\n"
    "if not mine or tonumber(mine) <= nowms or\n"
    "    (KEYS[2] and redis.call('get', KEYS[2]) ~= '" LW_READ_MARK "') then\n"
    "  if redis.pcall('exists', ARGV[2] .. ARGV[1] .. ':rel') == 1 then\n"
    "    return 2\n"
    "  end\n"
    "  return 0\n"
    "end\n"
    "redis.call('zremrangebyscore', KEYS[1], '-inf', nowms)\n"
    "local ms = tonumber(ARGV[3])\n"
    "if ms > 0 then\n"
    "  redis.call('zadd', KEYS[1], 'XX', nowms + ms, ARGV[1])\n"
    "  if not KEYS[2] then\n"
    "    if redis.call('pttl', KEYS[1]) < ms then\n"
    "      redis.call('pexpire', KEYS[1], ms)\n"
    "    end\n"
    "    return 1\n"
    "  end\n"
    "  if redis.call('pttl', KEYS[2]) < ms then\n"
    "    redis.call('pexpire', KEYS[2], ms)\n"
    "  end\n"
    "  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[2]))\n"
    "  return 1\n"
    "end\n"
    "if redis.call('zcard', KEYS[1]) > 1 then\n"
    "  redis.call('zrem', KEYS[1], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "if not KEYS[2] then return 3 end\n"
    "redis.call('del', KEYS[2])\n"
    "return 1\n";

/* A read lock's key alone, on another node than its readers' set.  KEYS:
 * lock.  ARGV: the set's name, then ms (keep the key at least that long;
 * "0": only look) or "free" (after the last reader's rw_leave_lua: delete
 * the key unless a reader holds it again).  1 the key held the readers'
 * mark, 0 not.  The set is not declared, so it is read with pcall, which
 * fails where this node is the one the slot leaves and does not hold the
 * set.  The key goes then: no reader can have been admitted since the last
 * one left, because admitting one creates the set in a script that declares
 * the key too (rw_enqueue_lua), which Redis refuses here, where the set is
 * missing, and on the node the slot goes to, where the key is not (keys
 * only move towards it) — unless this migration ended and another one of
 * the same slot began in between. */
static const char rw_mark_lua[] =
    "if redis.call('get', KEYS[1]) ~= '" LW_READ_MARK "' then return 0 end\n"
    "if ARGV[2] ~= 'free' then\n"
    "  local ms = tonumber(ARGV[2])\n"
    "  if ms > 0 and redis.call('pttl', KEYS[1]) < ms then\n"
    "    redis.call('pexpire', KEYS[1], ms)\n"
    "  end\n"
    "  return 1\n"
    "end\n"
    "local t = redis.call('time')\n"
    "local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local n = redis.pcall('zcount', ARGV[1], '(' .. nowms, '+inf')\n"
    "if type(n) ~= 'number' or n == 0 then redis.call('del', KEYS[1]) end\n"
    "return 1\n";
/* clang-format on */

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
struct lw_script lw__script_handfences = LW_SCRIPT_INIT(handfences_lua);
struct lw_script lw__script_owned = LW_SCRIPT_INIT(owned_lua);
struct lw_script lw__script_sem_enqueue = LW_SCRIPT_INIT(sem_enqueue_lua);
struct lw_script lw__script_sem_release = LW_SCRIPT_INIT(sem_release_lua);
struct lw_script lw__script_sem_renew = LW_SCRIPT_INIT(sem_renew_lua);
struct lw_script lw__script_rw_enqueue = LW_SCRIPT_INIT(rw_enqueue_lua);
struct lw_script lw__script_rw_release = LW_SCRIPT_INIT(rw_release_lua);
struct lw_script lw__script_rw_renew = LW_SCRIPT_INIT(rw_renew_lua);
struct lw_script lw__script_sem_leave = LW_SCRIPT_INIT(sem_leave_lua);
struct lw_script lw__script_rw_leave = LW_SCRIPT_INIT(rw_leave_lua);
struct lw_script lw__script_rw_mark = LW_SCRIPT_INIT(rw_mark_lua);

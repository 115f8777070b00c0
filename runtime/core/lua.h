#ifndef LW_LUA_H
#define LW_LUA_H

/*
 * Lua shared by the lock kinds' scripts (kind_*.c), as C string fragments
 * to paste into them.  Redis runs a script atomically, so "compare the
 * token, then act" cannot interleave with another client's write: the
 * check-then-act races of GET-then-DEL from the client side are impossible.
 */
#include "core/keynames.h"

/*
 * Mint n fences (n nil: one) from counter k (keynames.c: shared by many lock
 * keys) and return the last: the first is the counter plus one or the
 * server's clock in microseconds, whichever is higher, and the counter is
 * left at the last.  The clock is what keeps fences rising where the counter
 * went back: Redis restarted from a snapshot older than the fences it gave,
 * a replica promoted that had not received them, a counter evicted or
 * flushed.  Every fence given before is at most that server's clock when it
 * was minted (plus the fences one hand-off batch ran ahead of it, cohort.c),
 * so the next server's clock is past it once the failover took longer than
 * the two clocks differ (docs/guarantees.md).  The counter alone orders the
 * fences minted within one microsecond.  The clock's fences are written
 * first, reading the counter back in the same SET (GET): one command less
 * than a GET then a SET, and the counter is written again only when it was
 * not behind the clock.  Fences are past 14 digits, where Lua prints a
 * number as "1.7955509984812e+15": they are written with
 * string.format('%d'); Lua's doubles hold them, and the clock's seconds
 * times a million plus its microseconds, exactly (below 2^53).  A counter
 * holding anything but a number was written by someone else: it is put
 * back as it was (KEEPTTL keeps its TTL, if it had one) and the script
 * fails rather than guess.
 */
#define MINT_LUA                                                               \
    MINT_FROM_LUA("  local t = redis.call('time')\n"                           \
                  "  local f = tonumber(t[1]) * 1000000 + tonumber(t[2])\n")
/* The same with the Lua statements now at the top of mint(), which set f,
 * the clock (or return a fence of their own): a batch's (BATCH_LUA) reads
 * the clock once for all its ops.  A script runs atomically, so the clock
 * it read first is still no later than the server's; the counter alone
 * orders what one call mints. */
#define MINT_FROM_LUA(now)                                                     \
    "local function mint(k, n)\n" now                                          \
    "  local add = (n or 1) - 1\n"                                             \
    "  local v = redis.call('set', k, string.format('%d', f + add),\n"         \
    "                       'KEEPTTL', 'GET')\n"                               \
    "  local c = tonumber(v)\n"                                                \
    "  if v and not c then\n"                                                  \
    "    redis.call('set', k, v, 'KEEPTTL')\n"                                 \
    "    error({err = 'ERR lockweave fence counter ' .. k .. ' holds no '\n"   \
    "           .. 'number'})\n"                                               \
    "  end\n"                                                                  \
    "  if c and c >= f then\n"                                                 \
    "    f = c + 1\n"                                                          \
    "    redis.call('set', k, string.format('%d', f + add), 'KEEPTTL')\n"      \
    "  end\n"                                                                  \
    "  return f + add\n"                                                       \
    "end\n"

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

#define POLLERS_SKIPPED "32"
/* Tell the oldest live waiter that listens (see kind_mutex.c, release_lua):
 * hand it the
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
 * (see release_lua: migration).  A kind's script defines mint() and
 * receipt before it. */
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
 * Many of a kind's scripts in one call (a kind's batch script, kind.h):
 * each script's text, as a function of its own KEYS and ARGV, is called
 * once per op.  ARGV[1] names the ops, three characters each: the
 * function's letter in ops (Lua table fields, e.g. "t = try, r = release"),
 * then how many KEYS and how many ARGV of what follows are its, one digit
 * each, in order.  One reply per op, as its script answers alone (nil for
 * nothing, which would otherwise end the array there).  An op that fails
 * answers its error and the others still run: each script's
 * writes are its own op's, as when sent alone, and one bad key (a hash
 * where a lock should be) must not fail the keys batched beside it.
 */
#define BATCH_LUA(ops)                                                         \
    "local ops = {" ops "}\n"                                                  \
    "local out, nk, na, s = {}, 0, 1, ARGV[1]\n"                               \
    "for i = 1, #s, 3 do\n"                                                    \
    "  local c, kn, an = string.byte(s, i, i + 2)\n"                           \
    "  local k, a = {}, {}\n"                                                  \
    "  kn, an = kn - 48, an - 48\n"                                            \
    "  for j = 1, kn do k[j] = KEYS[nk + j] end\n"                             \
    "  for j = 1, an do a[j] = ARGV[na + j] end\n"                             \
    "  nk, na = nk + kn, na + an\n"                                            \
    "  local ok, r = pcall(ops[string.char(c)], k, a)\n"                       \
    "  if not ok then\n"                                                       \
    "    r = {err = type(r) == 'table' and r.err or tostring(r)}\n"            \
    "  elseif r == nil then\n"                                                 \
    "    r = false\n"                                                          \
    "  end\n"                                                                  \
    "  out[#out + 1] = r\n"                                                    \
    "end\n"                                                                    \
    "return out\n"

#endif

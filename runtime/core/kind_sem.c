/*
 * The semaphore (permits = N): at most N holders.  Its scripts, and what it
 * adds to the queue protocol: no plain first try (one script takes a
 * permit), N sent to the acquire-or-queue script, renewals in batches as
 * the mutex's.  Redlock cannot take it: a holder needs a majority of
 * masters, not all of them, so with 3 masters and N = 2 three holders could
 * each win a different 2 while no master counts more than 2.
 */
#include <lockweave.h>
#include <string.h>

#include "base/config.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/hold.h"
#include "core/lua.h"
#include "core/release.h"
#include "core/scripts.h"
#include "core/send.h"

/* clang-format off */
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

/* While a slot is being migrated, Redis runs a script only where all its
 * keys are, refusing it (TRYAGAIN) while they lie on two nodes or do not
 * all exist: the queue of a lock nobody waits for, for one, does not exist
 * until the migration ends.  A permit given back (ARGV[3] "0") or kept
 * ARGV[3] ms longer, by the semaphore's key alone, which is always on one
 * node: nobody is told, waiters find the permit free at their next poll.  KEYS: semaphore.  ARGV: token, alive-key prefix,
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
/* clang-format on */

struct lw_script lw__script_sem_enqueue = LW_SCRIPT_INIT(sem_enqueue_lua);
struct lw_script lw__script_sem_release = LW_SCRIPT_INIT(sem_release_lua);
struct lw_script lw__script_sem_renew = LW_SCRIPT_INIT(sem_renew_lua);
struct lw_script lw__script_sem_leave = LW_SCRIPT_INIT(sem_leave_lua);

/* By the semaphore's key alone, always on one node (sem_leave_lua). */
static int release_split(const struct lw_hold *l, const struct lw_names *n,
                         const char *hold, int64_t deadline_us, redisReply **r,
                         int *replayed)
{
    const char *argv[] = {l->key, l->token, n->alive, hold};
    size_t lens[] = {l->keylen, (size_t)l->toklen, n->alivelen, strlen(hold)};

    return lw__send_script(l->cfg, &lw__script_sem_leave, 1, 3, argv, lens, 0,
                           deadline_us, r, replayed);
}

static int release(const struct lw_hold *l, const struct lw_names *n,
                   int64_t hold_ms, int64_t deadline_us, redisReply **r,
                   int *replayed)
{
    return lw__release_with(l, n, hold_ms, &lw__script_sem_release, 0,
                            release_split, deadline_us, r, replayed);
}

/* A sorted set, which GET answers WRONGTYPE. */
static int owns(const redisReply *get)
{
    return get->type == REDIS_REPLY_ERROR &&
           strncmp(get->str, "WRONGTYPE", 9) == 0;
}

const struct lw_kind lw__kind_sem = {
    .name = "semaphore",
    .noun = "a semaphore",
    .flags = LW_KIND_PERMITS | LW_KIND_SHARED,
    .enqueue = &lw__script_sem_enqueue,
    .renew = &lw__script_sem_renew,
    .renew_alone = &lw__script_sem_renew,
    .release = release,
    .owns = owns,
};

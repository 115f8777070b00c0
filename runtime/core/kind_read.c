/*
 * The read lock (mode = read): readers share the key, a writer (the mutex,
 * kind_mutex.c) excludes them.  While readers hold it the key holds
 * LW_READ_MARK and each reader is an entry of the readers' set ({T}R:r);
 * see READERS_LUA (lua.h) for why a reader holds the lock only while both
 * say so.  Readers are renewed one call each (two keys); Redlock cannot
 * take it, and threads do not hand it to each other (it is shared anyway).
 */
#include <lockweave.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/hold.h"
#include "core/lua.h"
#include "core/queue.h"
#include "core/release.h"
#include "core/scripts.h"
#include "core/send.h"

/* clang-format off */
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
 * for, for one, does not exist at all until the migration ends.  The two
 * scripts below give back or keep a read lock with fewer keys, and without
 * telling the queue: waiters find the lock free at their next poll.
 */

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

struct lw_script lw__script_rw_enqueue = LW_SCRIPT_INIT(rw_enqueue_lua);
struct lw_script lw__script_rw_release = LW_SCRIPT_INIT(rw_release_lua);
struct lw_script lw__script_rw_renew = LW_SCRIPT_INIT(rw_renew_lua);
struct lw_script lw__script_rw_leave = LW_SCRIPT_INIT(rw_leave_lua);
struct lw_script lw__script_rw_mark = LW_SCRIPT_INIT(rw_mark_lua);

/* The key alone (rw_mark_lua): does it hold the readers' mark, kept at
 * least ms longer ("0": only look), or freed ("free")? */
static int mark(const struct lw_hold *l, const struct lw_names *n,
                const char *ms, int64_t deadline_us, redisReply **r,
                int *replayed)
{
    const char *argv[] = {l->key, n->readers, ms};
    size_t lens[] = {l->keylen, n->readerslen, strlen(ms)};

    return lw__send_script(l->cfg, &lw__script_rw_mark, 1, 2, argv, lens, 0,
                           deadline_us, r, replayed);
}

/*
 * Given back (ms "0") or kept ms longer, when a slot migration keeps its
 * keys from one script: the queue is missing (nobody waits), or the keys
 * lie on two nodes.  Nobody is told; waiters find the lock free at their
 * next poll.  The set and the lock key together when Redis lets them be;
 * else one at a time: the key first, then our entry in the set.  If the key
 * holds the readers' mark and our entry is still in the set after that, the
 * mark is the one we were admitted under (a new mark empties the set), so
 * the lock was ours after the section.  Then, if ours was the last entry,
 * the key is freed.  *r as the release script's (1, 2 or 0).
 */
static int release_split(const struct lw_hold *l, const struct lw_names *n,
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

    rc = lw__send_script(s, &lw__script_rw_leave, 2, 3, both, both_lens,
                         LW_REQ_SPLIT_OK, deadline_us, r, replayed);
    if (rc != LW_R_SPLIT)
        return rc;
    rc = mark(l, n, ms, deadline_us, r, replayed);
    if (rc != LW_OK || (*r)->integer != 1)
        return rc; /* 0: the key was gone, or another owner's */
    freeReplyObject(*r);
    rc = lw__send_script(s, &lw__script_rw_leave, 1, 3, set, set_lens, 0,
                         deadline_us, r, replayed);
    if (rc != LW_OK || (*r)->integer != 3)
        return rc;
    (*r)->integer = 1; /* released, as the last reader: free the key */
    if (mark(l, n, "free", deadline_us, &freed, replayed) == LW_OK)
        freeReplyObject(freed);
    else
        lw__log(LW_LOG_WARN,
                "lock %.*s: released, but its key could not be freed; it "
                "ends by its TTL",
                (int)l->keylen, l->key);
    return LW_OK;
}

static int release(const struct lw_hold *l, const struct lw_names *n,
                   int64_t hold_ms, int64_t deadline_us, redisReply **r,
                   int *replayed)
{
    return lw__release_with(l, n, hold_ms, &lw__script_rw_release, 1,
                            release_split, deadline_us, r, replayed);
}

/* A reader alone: its readers' set is a second key.  LW_OK, LW_ELOST, or
 * LW_EREDIS when no usable answer came. */
static int renew_one(const struct lw_hold *l)
{
    int64_t deadline_us = lw__now_us() + LW_RENEW_TRY_MS * 1000;
    struct lw_names n;
    redisReply *r;
    long long v = 0;
    int rc, replayed = 0;

    rc = lw__names_init(&n, l->key, l->keylen, l->prefix_len,
                        l->cfg->ep.topology == LW_TOPO_CLUSTER);
    if (rc != LW_OK)
        return rc;
    const char *argv[] = {l->key, n.readers, l->token, l->expire_str};
    size_t lens[] = {l->keylen, n.readerslen, (size_t)l->toklen,
                     (size_t)l->expire_len};
    rc = lw__send_script(l->cfg, &lw__script_rw_renew, 2, 2, argv, lens,
                         LW_REQ_SPLIT_OK, deadline_us, &r, &replayed);
    if (rc == LW_OK) {
        v = r->integer;
        freeReplyObject(r);
    } else if (rc == LW_R_SPLIT) {
        /* A slot migration has put the key and the set on two nodes, until
         * it moves the other one too, which may outlast the lease: one at
         * a time, the key first.  If it holds the readers' mark and our
         * entry is still in the set after that, the mark is the one we
         * were admitted under (a new mark empties the set). */
        const char *set[] = {n.readers, l->token, n.alive, l->expire_str};
        size_t set_lens[] = {n.readerslen, (size_t)l->toklen, n.alivelen,
                             (size_t)l->expire_len};
        rc = mark(l, &n, l->expire_str, deadline_us, &r, &replayed);
        if (rc == LW_OK) {
            v = r->integer;
            freeReplyObject(r);
        }
        if (rc == LW_OK && v == 1) {
            rc = lw__send_script(l->cfg, &lw__script_rw_leave, 1, 3, set,
                                 set_lens, 0, deadline_us, &r, &replayed);
            if (rc == LW_OK) {
                v = r->integer;
                freeReplyObject(r);
            }
        }
    }
    lw__names_free(&n);
    if (rc != LW_OK)
        return LW_EREDIS;
    return v == 1 ? LW_OK : LW_ELOST;
}

/* The readers' mark, this build's or an earlier one's. */
static int owns(const redisReply *get)
{
    return get->type == REDIS_REPLY_STRING &&
           lw__read_marked(get->str, get->len);
}

const struct lw_kind lw__kind_read = {
    .name = "read",
    .noun = "a read lock",
    .flags = LW_KIND_READERS | LW_KIND_SHARED,
    .enqueue = &lw__script_rw_enqueue,
    .renew_one = renew_one,
    .renew_alone = &lw__script_rw_renew,
    .release = release,
    .owns = owns,
};

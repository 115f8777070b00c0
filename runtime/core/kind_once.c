/*
 * Run once (REDIS_ONCE): not a lock but a mark, taken as a mutex is.
 * While the first run goes, the key holds its token, a lease renewed and
 * waited for like a mutex's (its queue, mailboxes and fences are the
 * mutex's).  A run that succeeded leaves "done:<outcome> <token>" for the
 * rest of its window, which every later take reads instead of taking; one
 * that failed (or died: its lease ends) leaves the key free, handed to the
 * oldest waiter as a mutex's release hands it.  Redlock cannot take it:
 * the outcome would need the masters' vote too.
 */
#include <lockweave.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/numfmt.h"
#include "core/hold.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/lua.h"
#include "core/outcome.h"
#include "core/queue.h"
#include "core/release.h"
#include "core/scripts.h"
#include "core/send.h"
#include "core/token.h"

/* What a done mark starts with: never a token's first bytes (hex). */
#define DONE_PREFIX "done:"
#define DONE_LEN    (sizeof DONE_PREFIX - 1)

#define IS_DONE_LUA(v)                                                         \
    "(" v " and string.sub(" v ", 1, 5) == '" DONE_PREFIX "')"

/* clang-format off */
/* The first try: the mutex's (kind_mutex.c, try_lua), and a done mark
 * answered {0, mark}.  KEYS: mark, fence.  ARGV: token, lease ms. */
static const char once_try_lua[] = MINT_LUA
    "local v = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], "
    "'GET')\n"
    "if not v then return {mint(KEYS[2]), tonumber(ARGV[2])} end\n"
    "if v == ARGV[1] then\n"
    "  return {mint(KEYS[2]), redis.call('pttl', KEYS[1])}\n"
    "end\n"
    "if " IS_DONE_LUA("v") " then return {0, v} end\n"
    "return {-1, ''}\n";

/* Claim-or-queue: the mutex's enqueue_lua (KEYS mark, queue, fence, alive
 * key; ARGV token, lease ms, join, queue ttl ms, alive ms), and a done
 * mark answered {0, mark}, leaving the queue. */
static const char once_enqueue_lua[] = MINT_LUA
    "local member = ARGV[1] .. '|' .. ARGV[2]\n"
    "local v = redis.call('get', KEYS[1])\n"
    "if " IS_DONE_LUA("v") " then\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {0, v}\n"
    "end\n"
    "if v == ARGV[1] or (not v and redis.call('set', KEYS[1], ARGV[1], "
    "'PX', ARGV[2])) then\n"
    "  redis.call('zrem', KEYS[2], member)\n"
    "  redis.call('del', KEYS[4])\n"
    "  return {mint(KEYS[3]), redis.call('pttl', KEYS[1])}\n"
    "end\n" QUEUE_LUA "local ttl = redis.call('pttl', KEYS[1])\n"
    "if ttl < 0 then ttl = 0 end\n"
    "return {-1 - ttl, redis.call('zscore', KEYS[2], member) or ''}\n";

/*
 * A run that succeeded: only while the key holds our token, it becomes the
 * done mark for the rest of the window, and every waiter is woken ("w") to
 * read it.  KEYS: mark, queue, fence.  ARGV: the release's (token, mailbox
 * ms, hand-off age ms, alive-key prefix, receipt ms), window left ms,
 * outcome.  A run that outlasted its window leaves the mark a mailbox's
 * life (ARGV[2]) for the waiters it wakes, none with nobody waiting.
 * 1 done, 2 done by an earlier run of this same script (a replay), 0 gone,
 * -1 another's.
 */
static const char once_done_lua[] =
    "local v = redis.call('get', KEYS[1])\n"
    "local done = '" DONE_PREFIX "' .. ARGV[7] .. ' ' .. ARGV[1]\n"
    "if v ~= ARGV[1] then\n"
    "  if v == done then return 2 end\n"
    "  if v then return -1 end\n"
    "  return 0\n"
    "end\n"
    "local ms = tonumber(ARGV[6])\n"
    "local waiters = redis.call('zrange', KEYS[2], 0, -1)\n"
    "if #waiters > 0 and ms < tonumber(ARGV[2]) then ms = tonumber(ARGV[2]) end\n"
    "if ms > 0 then\n"
    "  redis.call('set', KEYS[1], done, 'PX', ms)\n"
    "else\n"
    "  redis.call('del', KEYS[1])\n"
    "end\n"
    "for _, m in ipairs(waiters) do\n"
    "  local sep = string.find(m, '|', 1, true)\n"
    "  local box = ARGV[4] .. string.sub(m, 1, sep - 1) .. ':g'\n"
    "  redis.pcall('rpush', box, 'w')\n"
    "  redis.pcall('pexpire', box, ARGV[2])\n"
    "end\n"
    "return 1\n";
/* clang-format on */

struct lw_script lw__script_once_try = LW_SCRIPT_INIT(once_try_lua);
struct lw_script lw__script_once_enqueue = LW_SCRIPT_INIT(once_enqueue_lua);
struct lw_script lw__script_once_done = LW_SCRIPT_INIT(once_done_lua);

/* What is left of l's window (ms, from when the run's take returned; + 1:
 * our clock's milliseconds are truncated), <= 0 once it is over. */
static int64_t window_left_ms(const struct lw_hold *l)
{
    return (int64_t)l->window_ms - (lw__now_us() - l->acquired_us) / 1000 + 1;
}

/* With an outcome (the run succeeded: once.c, this thread's, set for l),
 * the done mark; without (it failed, or its lease had run out by our
 * clock: it may be another's run now), the mutex's release: the key free,
 * the oldest waiter handed it. */
static int release(const struct lw_hold *l, const struct lw_names *n,
                   int64_t hold_ms, int64_t deadline_us, redisReply **r,
                   int *replayed)
{
    struct lw_outcome *o = lw__outcome();
    struct lw_release_args a;
    int64_t left = window_left_ms(l);

    (void)hold_ms; /* no minimum hold: lw__opts_check() */
    if (o->hold != l || o->len == 0 ||
        lw__now_ms() >= __atomic_load_n(&l->valid_until_ms, __ATOMIC_RELAXED))
        return lw__release_send(l->cfg, l->key, l->keylen, l->token,
                                (size_t)l->toklen, n, 0, deadline_us, r,
                                replayed);
    lw__release_args(&a, l->cfg, l->key, l->keylen, l->token, (size_t)l->toklen,
                     n, 0, 0, left > 0 ? left : 0);
    a.argv[a.nkeys + a.nargs] = o->text;
    a.lens[a.nkeys + a.nargs] = o->len;
    a.nargs++;
    return lw__send_script(l->cfg, &lw__script_once_done, a.nkeys, a.nargs,
                           a.argv, a.lens, 0, deadline_us, r, replayed);
}

int lw__once_mark(const char *v, size_t len, const char **outcome,
                  size_t *outlen)
{
    const char *sp;

    if (len >= DONE_LEN && memcmp(v, DONE_PREFIX, DONE_LEN) == 0) {
        v += DONE_LEN;
        len -= DONE_LEN;
        sp = memchr(v, ' ', len);
        *outcome = v;
        *outlen = sp != NULL ? (size_t)(sp - v) : len;
        return LW_ONCE_DONE;
    }
    /* A run's token: 32 hex digits, ':', its sequence, LW_TOKEN_ONCE. */
    if (len > 33 + LW_TOKEN_ONCE_LEN && len < LW_TOKEN_MAX && v[32] == ':' &&
        memcmp(v + len - LW_TOKEN_ONCE_LEN, LW_TOKEN_ONCE, LW_TOKEN_ONCE_LEN) ==
            0)
        return LW_ONCE_RUNNING;
    return 0;
}

/* "done:<outcome> <token>": the outcome kept for l (this thread's). */
static int done(struct lw_hold *l, const char *v, size_t len)
{
    struct lw_outcome *o = lw__outcome();

    if (lw__once_mark(v, len, &v, &len) != LW_ONCE_DONE)
        return 0;
    if (len >= sizeof o->text)
        len = 0; /* not one of ours: read as no value */
    memcpy(o->text, v, len);
    o->text[len] = '\0';
    o->len = (uint8_t)len;
    o->hold = l;
    return 1;
}

/* A done mark, or a running one (its run's token ends LW_TOKEN_ONCE). */
static int owns(const redisReply *get)
{
    const char *o;
    size_t n;

    return get->type == REDIS_REPLY_STRING &&
           lw__once_mark(get->str, get->len, &o, &n) != 0;
}

const struct lw_kind lw__kind_once = {
    .name = "once",
    .noun = "a run-once mark",
    .flags = 0,
    .enqueue = &lw__script_once_enqueue,
    .try_free = &lw__script_once_try,
    .renew = &lw__script_renew, /* the mutex's: a token in one key */
    .renew_alone = &lw__script_renew,
    .release = release,
    .owns = owns,
    .done = done,
    .token_tag = LW_TOKEN_ONCE,
};

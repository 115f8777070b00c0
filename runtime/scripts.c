/*
 * Server-side scripts.  Redis runs a script atomically, so "compare the token,
 * then act" cannot interleave with another client's write: the check-then-act
 * races of GET-then-DEL from the client side are impossible.
 */
#include "scripts.h"

#include <pthread.h>
#include <string.h>

/* KEYS[1] lock; ARGV[1] token, ARGV[2] lease ms.  1 renewed, 0 not ours.
 * Never re-creates a key that expired: a lost lease stays lost. */
static const char renew_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "end\n"
    "return 0\n";

/* KEYS[1] lock; ARGV[1] token, ARGV[2] wake-up channel.  1 released (and
 * one message published so a waiter retries at once), 0 already expired,
 * -1 held by another owner. */
static const char release_lua[] = "local v = redis.call('get', KEYS[1])\n"
                                  "if v == ARGV[1] then\n"
                                  "  redis.call('del', KEYS[1])\n"
                                  "  redis.call('publish', ARGV[2], '1')\n"
                                  "  return 1\n"
                                  "end\n"
                                  "if v then return -1 end\n"
                                  "return 0\n";

static const char *const texts[LW_SCRIPT_COUNT] = {renew_lua, release_lua};
static char shas[LW_SCRIPT_COUNT][41];
static int sha_ready[LW_SCRIPT_COUNT];
static pthread_mutex_t sha_mu = PTHREAD_MUTEX_INITIALIZER;

const char *lw__script_text(int id)
{
    return texts[id];
}

const char *lw__script_sha(int id)
{
    /* Acquire pairs with the release below: a reader that sees the flag sees
     * the whole SHA. */
    return __atomic_load_n(&sha_ready[id], __ATOMIC_ACQUIRE) ? shas[id] : NULL;
}

void lw__script_set_sha(int id, const char *sha, unsigned long len)
{
    if (len != 40)
        return;
    pthread_mutex_lock(&sha_mu);
    if (!sha_ready[id]) {
        memcpy(shas[id], sha, 40);
        shas[id][40] = '\0';
        __atomic_store_n(&sha_ready[id], 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sha_mu);
}

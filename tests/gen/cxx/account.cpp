// Woven by lockweave_generate(): the locks go into these definitions.
#include "account.h"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace bank
{

redisContext *db()
{
    static redisContext *c;
    static pid_t owner;
    if (c && owner == getpid())
        return c;
    const char *url = std::getenv("LOCKWEAVE_REDIS_URL");
    int port = 6379;
    if (url && std::strncmp(url, "redis://127.0.0.1:", 18) == 0)
        port = std::atoi(url + 18);
    c = redisConnect("127.0.0.1", port); // the parent's stays the parent's
    owner = getpid();
    if (!c || c->err) {
        std::fprintf(stderr, "cannot reach redis on port %d\n", port);
        std::exit(2);
    }
    return c;
}

long long db_int(const char *fmt, long long arg)
{
    redisReply *r = static_cast<redisReply *>(redisCommand(db(), fmt, arg));
    long long v = -1;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = std::atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    else if (r && r->type == REDIS_REPLY_STATUS)
        v = 1;
    freeReplyObject(r);
    return v;
}

long long Account::deposit(int cents)
{
    long long v = db_int("GET balance:%lld", static_cast<long long>(id_));
    usleep(500); // another caller would read the same value meanwhile
    redisReply *r = static_cast<redisReply *>(redisCommand(
        db(), "SET balance:%lld %lld", static_cast<long long>(id_), v + cents));
    freeReplyObject(r);
    return v + cents;
}

int Account::fail_inside(const std::string &why)
{
    if (!lw_still_held())
        return -2;
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    throw std::invalid_argument(why);
#else
    return static_cast<int>(why.size());
#endif
}

int Account::lose_inside(bool throw_after)
{
    db_int("DEL lock:acct:%lld", static_cast<long long>(id_));
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    if (throw_after)
        throw std::runtime_error("after the lock was lost");
#else
    (void)throw_after;
#endif
    return 1;
}

int Account::try_now() noexcept
{
    return lw_still_held() ? 0 : -2;
}

int Account::audited()
{
    return lw_still_held();
}

int Account::branch_held(unsigned branch)
{
    return lw_still_held() && branch > 0;
}

int Audited::audited()
{
    return 100 + Account::audited();
}

// Each returns which overload ran, negative when it ran unlocked.
int pick(int x)
{
    return lw_still_held() ? 1 : -x;
}
int pick(long x)
{
    return lw_still_held() ? 2 : -static_cast<int>(x);
}
int pick(const char *s)
{
    return lw_still_held() ? 3 : -(s != nullptr);
}
// A string key is the string's bytes: the lock held is pick:<s>.
static bool holds(const std::string &s)
{
    std::string key = "pick:" + s;
    return lw_still_held() && lw_fence_of(key.data(), key.size()) != 0;
}
int pick(const std::string &s)
{
    return holds(s) ? 4 : -1;
}
int pick(std::string &&s)
{
    return holds(s) ? 5 : -1;
}
int pick(double d, int x)
{
    return lw_still_held() ? 6 + x : -(d > 0);
}

} // namespace bank

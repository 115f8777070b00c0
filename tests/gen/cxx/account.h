// The classes of the C++ weaving test: annotated in the class, defined in
// account.cpp, which lockweave weaves.
#ifndef LW_TEST_ACCOUNT_H
#define LW_TEST_ACCOUNT_H

#include <lockweave.h>

#include <cstdint>
#include <string>

struct redisContext;

namespace bank
{

// This process's own connection to the test's Redis (a forked child opens
// its own).
redisContext *db();
long long db_int(const char *fmt, long long arg);

class Account
{
  public:
    explicit Account(int64_t id) : id_(id)
    {
    }
    virtual ~Account() = default;

    // Read, pause, write back: correct only when the calls never overlap.
    REDIS_LOCK("acct:{this->id_}", 10s, 10s, on_fail = -1)
    long long deposit(int cents);

    // Leaves the body early, by an exception (or a return without them).
    REDIS_LOCK("acct:{this->id_}", 10s, 10s, on_fail = -1)
    int fail_inside(const std::string &why);

    // Removes its own lock from Redis (as a forced unlock would), then
    // returns, or throws when throw_after is set and exceptions are on.
    REDIS_LOCK("acct:{this->id_}", 10s, 10s, on_fail = -1)
    int lose_inside(bool throw_after);

    // Does not wait: a busy lock gives on_fail at once.
    REDIS_LOCK("acct:{this->id_}", 10s, 0, on_fail = -7)
    int try_now() noexcept;

    // Virtual: an override reaches it through Account::audited().
    REDIS_LOCK("acct:{this->id_}:audit", 10s, 1s)
    virtual int audited();

    REDIS_LOCK("bank:{branch}", 10s, 1s)
    static int branch_held(unsigned branch);

  private:
    int64_t id_;
};

class Audited : public Account
{
  public:
    using Account::Account;
    int audited() override; // not annotated: calls the locked base
};

// Overloads: each has its own lock and its own body, and a call picks the
// same one as without lockweave.
REDIS_LOCK("pick:{x}", 5s, 5s)
int pick(int x);
REDIS_LOCK("pick:{x}", 5s, 5s)
int pick(long x);
REDIS_LOCK("pick:{s}", 5s, 5s)
int pick(const char *s);
REDIS_LOCK("pick:{s}", 5s, 5s)
int pick(const std::string &s);
REDIS_LOCK("pick:{s}", 5s, 5s)
int pick(std::string &&s);
REDIS_LOCK("pick:{x}", 5s, 5s)
int pick(double d, int x = 4);

} // namespace bank

#endif

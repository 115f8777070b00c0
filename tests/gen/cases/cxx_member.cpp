// C++ member functions: the lock is woven into each definition, which keeps
// its access to private members; keys reach the object through 'this'.
#include <lockweave.h>
#include <cstdint>

namespace bank {

class Account {
  public:
    explicit Account(int64_t id) : id_(id) {}
    virtual ~Account() = default;

    // Annotated in the class, defined out of it.
    REDIS_LOCK("acct:{this->id_}", 10s, 2s, on_fail = -1)
    int withdraw(int amount);

    // Annotated and defined in the class; const.
    REDIS_LOCK("acct:{this->id_}", 10s, 2s)
    int balance() const { return balance_; }

    // Virtual: every call that reaches this definition takes the lock.
    REDIS_LOCK("acct:{this->id_}:audit", 30s, 0)
    virtual void audit();

    // Static: the key from the parameters only.
    REDIS_LOCK("bank:{branch}", 10s, 5s, max_renew = 3)
    static long open_accounts(unsigned branch) noexcept;

  private:
    int64_t id_;
    int balance_ = 0;
};

int Account::withdraw(int amount)
{
    if (amount > balance_)
        return -2;
    balance_ -= amount;
    return balance_;
}

void Account::audit() {}

long Account::open_accounts(unsigned branch) noexcept { return branch; }

// Annotated on the out-of-class definition only.
class Ledger {
  public:
    int post(int64_t account, int cents);

  private:
    int posted_ = 0;
};

REDIS_LOCK("ledger:{account}", 10s, 5s)
int Ledger::post(int64_t account, int cents)
{
    posted_ += cents;
    return static_cast<int>(account) + posted_;
}

} // namespace bank

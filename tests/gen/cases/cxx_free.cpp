// flags: -std=c++17
// C++ free functions: woven into their definitions, in namespaces, with
// overloads, references, default arguments, noexcept and exceptions.
#include <lockweave.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace shop {

struct Order {
    long id;
    const char *sku;
};

// Overloads: each keeps its own definition, so a call picks the same one.
REDIS_LOCK("stock:{id}", 10s, 5s)
int deduct(long id, int qty = 1)
{
    return qty > 0 ? static_cast<int>(id) - qty : -1;
}

REDIS_LOCK("stock:{o.id}:{o.sku}", 10s, 5s)
int deduct(const Order &o, int qty) { return deduct(o.id, qty); }

// An rvalue reference, and a class return type: on_fail is required.
REDIS_LOCK("note:{o.id}", 2s, 0, on_fail = std::string())
std::string note(Order &&o, std::string text)
{
    return std::move(text) + std::to_string(o.id);
}

// A std::string or std::string_view key: its bytes, as they are.
REDIS_LOCK("user:{name}:{tenant}", 5s, 1s)
bool login(const std::string &name, std::string_view tenant)
{
    return !name.empty() && !tenant.empty();
}

// noexcept stays; a void function returns at once when the lock is busy.
REDIS_LOCK("ping", 500ms, 0)
void ping() noexcept {}

// An exception from the body releases the lock on its way out.
REDIS_LOCK("pay:{id}", 10s, 5s, on_fail = -1, skip_if = id < 0)
REDIS_LOCK("ledger", 10s, 5s, mode = read)
long pay(long id, long cents)
{
    if (cents < 0)
        throw std::invalid_argument("negative amount");
    return id + cents;
}

} // namespace shop

namespace {
REDIS_LOCK("local:{n}", 1s, 1s)
unsigned local_work(unsigned n) { return n * 2; }
} // namespace

unsigned use_local(unsigned n);
unsigned use_local(unsigned n) { return local_work(n); }

// C linkage, and a member function of a local class.
extern "C" {
REDIS_LOCK("c:{x}", 1s, 1s)
int c_api(int x) { return x; }
}

int outer(int y);
int outer(int y)
{
    struct Local {
        REDIS_LOCK("local:{v}", 1s, 1s)
        int run(int v) { return v; }
    };
    return Local().run(y);
}

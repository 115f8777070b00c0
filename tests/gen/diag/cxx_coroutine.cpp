// flags: -std=c++20
// A coroutine suspends: a lock cannot be held across it.
#include <coroutine>
#include <lockweave.h>

struct task {
    struct promise_type {
        task get_return_object() { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() {}
    };
};

REDIS_LOCK("job:{id}", 10s, 1s)
task run(int id)
{
    (void)id;
    co_return;
}

// expect: 20:5: error: 'run' is a coroutine (co_return)

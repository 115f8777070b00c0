/* A C++ callback that throws through a woven C function: the exception
 * reaches the caller, the lock is released on the way (the wrapper's
 * guards are left by their cleanup), at once, so the next caller is not
 * held up by the lease, and lw_last_error() says the lock was held until
 * then.  One key, two keys entered as one, a re-entered key; then two
 * threads taking turns on one key, every other call throwing. */
extern "C" {
#include "util.h"
}
#include "unwind.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

static rh_server srv;

/* Whatever the runtime has to say, a guard left out of order above all. */
static std::atomic<int> complaints{0};

static void count_complaint(int level, const char *msg, void *ud)
{
    (void)ud;
    fprintf(stderr, "lockweave (%d): %s\n", level, msg);
    complaints++;
}

struct seen {
    int held = -1; /* lw_still_held() in the callback */
    uint64_t fence = 0;
};

static int throwing(void *arg)
{
    seen *s = static_cast<seen *>(arg);
    s->held = lw_still_held();
    s->fence = lw_fence();
    throw std::runtime_error("from the callback");
}

static int returning(void *arg)
{
    (void)arg;
    return lw_still_held() ? 7 : -1;
}

/* call() must throw std::runtime_error after its callback ran locked. */
template <typename F> static void throws_through(const char *what, F call)
{
    seen s;
    bool caught = false;
    try {
        call(&s);
    } catch (const std::runtime_error &e) {
        caught = std::string(e.what()) == "from the callback";
    }
    CHECK_MSG(caught, "%s: the exception did not reach the caller", what);
    CHECK_MSG(s.held == 1 && s.fence != 0, "%s: the callback ran unlocked",
              what);
    CHECK_RC(lw_last_error(), LW_OK);
}

static void no_lock_held(void)
{
    lw_stats st;
    lw_stats_get(&st);
    CHECK_EQ(st.held, 0);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:unwind:1 lock:pair:1 lock:pair:2"),
             0);
    CHECK_EQ(complaints.load(), 0);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    lw_set_logger(count_complaint, nullptr, LW_LOG_WARN);

    throws_through("with_lock", [](seen *s) { with_lock(1, throwing, s); });
    no_lock_held();
    throws_through("with_two(1, 2)",
                   [](seen *s) { with_two(1, 2, throwing, s); });
    no_lock_held();
    throws_through("with_two(2, 1)",
                   [](seen *s) { with_two(2, 1, throwing, s); });
    no_lock_held();
    throws_through("nested", [](seen *s) { nested(1, throwing, s); });
    no_lock_held();

    /* Two threads on one key: a lock left behind by a throw would stall
     * the other thread for its whole wait (10 s) and then fail it. */
    const int rounds = 25;
    int64_t start = now_ms();
    auto turns = [] {
        for (int i = 0; i < rounds; i++) {
            throws_through("with_lock, threaded",
                           [](seen *s) { with_lock(1, throwing, s); });
            int64_t t0 = now_ms();
            CHECK_EQ(with_lock(1, returning, nullptr), 7);
            CHECK_RC(lw_last_error(), LW_OK);
            CHECK_MSG(now_ms() - t0 < 5000, "held up for %lld ms",
                      (long long)(now_ms() - t0));
        }
    };
    std::thread a(turns), b(turns);
    a.join();
    b.join();
    printf("2 threads x %d throws and calls: %lld ms\n", rounds,
           (long long)(now_ms() - start));
    no_lock_held();

    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("ok\n");
    return 0;
}

/*
 * <lockweave.hpp>, the C++17 layer, against a real redis-server (built
 * twice: with exceptions and with -fno-exceptions):
 *   basics   a held lease: true, held(), fence() > 0, the key in Redis;
 *            the destructor gives it back (key gone, held count back)
 *   release  release() says LW_OK once, then LW_EINVAL; empty afterwards
 *   moves    a moved-from lease is empty and releases nothing: one lock,
 *            one release; move-assignment releases what it replaces
 *   busy     a busy key with wait 0: an empty lease, error() LW_ETIMEOUT,
 *            no exception; bad durations and keys: LW_EINVAL
 *   opts     the lw_lock_opts overload: two read leases share a key
 *   keys     acquire_keys(): every key or none, a key given twice taken
 *            once, each key's fence; a braced list and a vector of
 *            strings; none or more than 64 keys: LW_EINVAL
 *   loop     acquire_async(), acquire_keys_async() and release_async()
 *            with lambdas on a poll() loop
 */
#include <lockweave.hpp>

#include <poll.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" {
#include "util.h"
}

using namespace std::chrono_literals;

static_assert(!std::is_copy_constructible_v<lw::lease>);
static_assert(!std::is_copy_assignable_v<lw::lease>);
static_assert(std::is_nothrow_move_constructible_v<lw::lease>);
static_assert(std::is_nothrow_move_assignable_v<lw::lease>);
static_assert(!std::is_convertible_v<lw::lease, bool>); /* explicit */

static rh_server srv;

static std::uint64_t held_now()
{
    lw_stats st;
    lw_stats_get(&st);
    return st.held;
}

static void basics()
{
    std::uint64_t held0 = held_now();
    {
        lw::lease l = lw::acquire("cxx:basic", 10s, 0ms);
        CHECK(static_cast<bool>(l));
        CHECK(l.held());
        CHECK_RC(l.error(), LW_OK);
        CHECK(l.fence() > 0);
        CHECK_EQ(l.fence("cxx:basic"), l.fence());
        CHECK(l.get() != nullptr);
        CHECK_EQ(lock_exists(&srv, "cxx:basic"), 1);
        CHECK_EQ(held_now(), held0 + 1);
    } /* the destructor releases */
    CHECK_EQ(lock_exists(&srv, "cxx:basic"), 0);
    CHECK_EQ(held_now(), held0);
    CHECK_RC(lw_last_error(), LW_OK); /* the destructor's lw_release() */
    printf("basics: ok\n");
}

static void release()
{
    lw::lease l = lw::acquire("cxx:release", 10s, 1s);
    CHECK(l);
    std::uint64_t f = l.fence();
    CHECK_RC(l.release(), LW_OK);
    CHECK_EQ(lock_exists(&srv, "cxx:release"), 0);
    CHECK(!l);
    CHECK(!l.held());
    CHECK_EQ(l.fence(), 0);
    CHECK_RC(l.error(), LW_EINVAL);
    CHECK_RC(l.release(), LW_EINVAL); /* not a second lw_release() */
    /* Taken again: a higher fence. */
    lw::lease again = lw::acquire("cxx:release", 10s, 1s);
    CHECK(again);
    CHECK(again.fence() > f);
    printf("release: ok\n");
}

static void moves()
{
    std::uint64_t held0 = held_now();
    lw_stats s0, s1;
    lw_stats_get(&s0);
    {
        lw::lease a = lw::acquire("cxx:move", 10s, 0ms);
        CHECK(a);
        std::uint64_t f = a.fence();
        lw::lease b(std::move(a));
        CHECK(!a);
        CHECK(!a.held());
        CHECK_EQ(a.fence(), 0);
        CHECK_RC(a.error(), LW_EINVAL);
        CHECK_RC(a.release(), LW_EINVAL); /* releases nothing */
        CHECK(b);
        CHECK(b.held());
        CHECK_EQ(b.fence(), f);
        CHECK_EQ(lock_exists(&srv, "cxx:move"), 1);

        lw::lease c;
        CHECK(!c);
        c = std::move(b);
        CHECK(!b);
        CHECK(c);
        CHECK_EQ(c.fence(), f);
        CHECK_EQ(lock_exists(&srv, "cxx:move"), 1);
        CHECK_EQ(held_now(), held0 + 1);

        /* Move-assignment over a held lease releases that one. */
        lw::lease d = lw::acquire("cxx:move2", 10s, 0ms);
        CHECK(d);
        CHECK_EQ(lock_exists(&srv, "cxx:move2"), 1);
        d = std::move(c);
        CHECK_EQ(lock_exists(&srv, "cxx:move2"), 0);
        CHECK_EQ(lock_exists(&srv, "cxx:move"), 1);
        CHECK_EQ(d.fence(), f);
        CHECK_EQ(held_now(), held0 + 1);
        d = std::move(d); /* self-move: no release */
        CHECK_EQ(lock_exists(&srv, "cxx:move"), 1);
    } /* a, b, c empty; d releases once */
    CHECK_EQ(lock_exists(&srv, "cxx:move"), 0);
    CHECK_EQ(held_now(), held0);
    lw_stats_get(&s1);
    CHECK_EQ(s1.acquired, s0.acquired + 2);
    CHECK_EQ(s1.lost, s0.lost); /* no release said LW_ELOST */
    printf("moves: ok\n");
}

static void busy()
{
    lw::lease a = lw::acquire("cxx:busy", 10s, 0ms);
    CHECK(a);
    {
        lw::lease b = lw::acquire("cxx:busy", 10s, 0ms);
        CHECK(!b);
        CHECK_RC(b.error(), LW_ETIMEOUT);
        CHECK(!b.held());
        CHECK_EQ(b.fence(), 0);
        CHECK(b.get() == nullptr);
        /* A short wait runs out too. */
        lw::lease c = lw::acquire("cxx:busy", 10s, 100ms);
        CHECK_RC(c.error(), LW_ETIMEOUT);
    } /* b and c release nothing */
    CHECK(a.held());
    CHECK_EQ(lock_exists(&srv, "cxx:busy"), 1);
    CHECK_RC(a.release(), LW_OK);

    CHECK_RC(lw::acquire("cxx:bad", -1ms, 0ms).error(), LW_EINVAL);
    CHECK_RC(lw::acquire("cxx:bad", 0ms, 0ms).error(), LW_EINVAL);
    CHECK_RC(lw::acquire("cxx:bad", 10s, -1ms).error(), LW_EINVAL);
    CHECK_RC(lw::acquire("cxx:bad", 24h * 365 * 200, 0ms).error(), LW_EINVAL);
    CHECK_RC(lw::acquire("", 10s, 0ms).error(), LW_EINVAL);
    CHECK_RC(lw::lease().error(), LW_EINVAL);
    printf("busy: ok\n");
}

static void opts()
{
    lw_lock_opts o = lw::lock_opts(10s, 0ms);
    CHECK_EQ(o.expire_ms, 10000);
    CHECK_EQ(o.wait_ms, 0);
    CHECK_EQ(o.max_renew, -1);
    o.flags = LW_LOCK_READ;
    std::string key = "cxx:read";
    lw::lease r1 = lw::acquire(key, o);
    lw::lease r2 = lw::acquire(key, o);
    CHECK(r1);
    CHECK(r2);
    lw::lease w = lw::acquire(key, 10s, 0ms);
    CHECK_RC(w.error(), LW_ETIMEOUT);
    CHECK_RC(r1.release(), LW_OK);
    CHECK_RC(r2.release(), LW_OK);
    w = lw::acquire(key, 10s, 0ms);
    CHECK(w);
    printf("opts: ok\n");
}

static void keys()
{
    std::uint64_t held0 = held_now();
    {
        lw::lease l =
            lw::acquire_keys({"cxx:k:b", "cxx:k:a", "cxx:k:b"}, 10s, 0ms);
        CHECK(l);
        CHECK_EQ(lock_exists(&srv, "cxx:k:a"), 1);
        CHECK_EQ(lock_exists(&srv, "cxx:k:b"), 1);
        CHECK_EQ(held_now(), held0 + 2); /* "cxx:k:b" once */
        CHECK(l.fence("cxx:k:a") > 0);
        CHECK(l.fence("cxx:k:b") > 0);
        CHECK_EQ(l.fence("cxx:k:c"), 0);
        /* All or none: one key busy, nothing else is taken. */
        std::vector<std::string> more = {"cxx:k:c", "cxx:k:a"};
        lw::lease m = lw::acquire_keys(more, lw::lock_opts(10s, 0ms));
        CHECK_RC(m.error(), LW_ETIMEOUT);
        CHECK_EQ(lock_exists(&srv, "cxx:k:c"), 0);
    }
    CHECK_EQ(lock_exists(&srv, "cxx:k:a"), 0);
    CHECK_EQ(lock_exists(&srv, "cxx:k:b"), 0);
    CHECK_EQ(held_now(), held0);

    std::vector<std::string> none, many;
    for (int i = 0; i < 65; i++)
        many.push_back("cxx:k:" + std::to_string(i));
    CHECK_RC(lw::acquire_keys(none, lw::lock_opts(10s, 0ms)).error(),
             LW_EINVAL);
    CHECK_RC(lw::acquire_keys(many, lw::lock_opts(10s, 0ms)).error(),
             LW_EINVAL);
    many.pop_back(); /* 64: the most one lease takes */
    lw::lease all = lw::acquire_keys(many, lw::lock_opts(10s, 0ms));
    CHECK(all);
    CHECK_EQ(held_now(), held0 + 64);
    CHECK_RC(all.release(), LW_OK);
    printf("keys: ok\n");
}

/* A loop of one descriptor, by poll(). */
struct mini_loop {
    int fd = -1;
    lw_loop *lw = nullptr;
};

static void *mini_watch(void *loop, int fd, lw_loop *lw)
{
    mini_loop *m = static_cast<mini_loop *>(loop);
    m->fd = fd;
    m->lw = lw;
    return m;
}

static void mini_unwatch(void *handle)
{
    static_cast<mini_loop *>(handle)->fd = -1;
}

/* Dispatch until *done, up to 10 s. */
static void run_until(mini_loop &m, const bool &done)
{
    std::int64_t end = now_ms() + 10000;
    while (!done) {
        CHECK_MSG(now_ms() < end, "loop callback never ran");
        struct pollfd p = {m.fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0)
            lw_loop_dispatch(m.lw);
    }
}

static void loop()
{
    mini_loop m;
    lw_loop_hooks hooks{};
    hooks.loop = &m;
    hooks.watch = mini_watch;
    hooks.unwatch = mini_unwatch;
    lw_loop *lw = lw_loop_new(&hooks);
    CHECK(lw != nullptr);

    lw::lease got;
    bool done = false;
    std::string captured = "by value";
    CHECK_RC(lw::acquire_async(lw, "cxx:loop", lw::lock_opts(10s, 1s),
                               [&got, &done, captured](lw::lease l) {
                                   CHECK_STR(captured.c_str(), "by value");
                                   got = std::move(l);
                                   done = true;
                               }),
             LW_OK);
    run_until(m, done);
    CHECK(got);
    CHECK(got.fence() > 0);
    CHECK_EQ(lock_exists(&srv, "cxx:loop"), 1);

    /* Busy: the callback gets an empty lease with the code. */
    int busy_rc = LW_OK;
    done = false;
    CHECK_RC(lw::acquire_async(lw, "cxx:loop", lw::lock_opts(10s, 0ms),
                               [&](lw::lease l) {
                                   CHECK(!l);
                                   busy_rc = l.error();
                                   done = true;
                               }),
             LW_OK);
    run_until(m, done);
    CHECK_RC(busy_rc, LW_ETIMEOUT);

    /* Several keys as one lease, one of them busy for a while: the
     * callback comes once the holder lets go, with every key. */
    lw::lease both;
    lw::lease other = lw::acquire("cxx:loop:b", 10s, 0ms);
    CHECK(other);
    done = false;
    CHECK_RC(lw::acquire_keys_async(lw, {"cxx:loop:b", "cxx:loop:a"},
                                    lw::lock_opts(10s, 5s),
                                    [&](lw::lease l) {
                                        both = std::move(l);
                                        done = true;
                                    }),
             LW_OK);
    CHECK_RC(other.release(), LW_OK);
    run_until(m, done);
    CHECK(both);
    CHECK(both.fence("cxx:loop:a") > 0);
    CHECK(both.fence("cxx:loop:b") > 0);
    CHECK_EQ(lock_exists(&srv, "cxx:loop:a"), 1);
    CHECK_EQ(lock_exists(&srv, "cxx:loop:b"), 1);
    CHECK_RC(lw::acquire_keys_async(lw, std::vector<std::string>{},
                                    lw::lock_opts(10s, 0ms),
                                    [](lw::lease) { CHECK(!"called"); }),
             LW_EINVAL);
    done = false;
    int both_rc = LW_EINVAL;
    CHECK_RC(lw::release_async(std::move(both),
                               [&](int status) {
                                   both_rc = status;
                                   done = true;
                               }),
             LW_OK);
    run_until(m, done);
    CHECK_RC(both_rc, LW_OK);
    CHECK_EQ(lock_exists(&srv, "cxx:loop:a"), 0);

    int rel_rc = LW_EINVAL;
    done = false;
    CHECK_RC(lw::release_async(std::move(got),
                               [&](int status) {
                                   rel_rc = status;
                                   done = true;
                               }),
             LW_OK);
    CHECK(!got);
    run_until(m, done);
    CHECK_RC(rel_rc, LW_OK);
    CHECK_EQ(lock_exists(&srv, "cxx:loop"), 0);

    /* Bad arguments: the callback never runs (and is freed). */
    CHECK_RC(lw::acquire_async(lw, "", lw::lock_opts(10s, 0ms),
                               [](lw::lease) { CHECK(!"called"); }),
             LW_EINVAL);
    /* A lease not from a loop stays with its owner. */
    lw::lease plain = lw::acquire("cxx:plain", 10s, 0ms);
    CHECK(plain);
    CHECK_RC(lw::release_async(std::move(plain), [](int) { CHECK(!"called"); }),
             LW_EINVAL);
    CHECK(plain);
    CHECK_RC(plain.release(), LW_OK);

    /* A request pending at lw_loop_free(): LW_ECANCELED, once. */
    lw::lease blocker = lw::acquire("cxx:cancel", 10s, 0ms);
    CHECK(blocker);
    int cancel_rc = LW_OK, calls = 0;
    CHECK_RC(lw::acquire_async(lw, "cxx:cancel", lw::lock_opts(10s, 5s),
                               [&](lw::lease l) {
                                   calls++;
                                   cancel_rc = l.error();
                               }),
             LW_OK);
    lw_loop_free(lw);
    CHECK_EQ(calls, 1);
    CHECK_RC(cancel_rc, LW_ECANCELED);
    printf("loop: ok\n");
}

int main()
{
    CHECK_EQ(rh_start(&srv, nullptr), 0);
    use_server(&srv);
    basics();
    release();
    moves();
    busy();
    opts();
    keys();
    loop();
    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("cxx: ok\n");
    return 0;
}

// C++ definitions woven by lockweave_generate(), run against the Redis that
// lw_with_redis started: a member function excludes other processes, an
// exception from a body releases the lock at once and reaches the caller
// unchanged, a lock removed behind the body's back is LW_ELOST after the
// call, overloads resolve as without lockweave, a virtual function is
// locked whichever way the call reaches it.  Also built with -fno-exceptions
// (the exception cases then leave by a return).
#include "account.h"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s (last error %d)\n",  \
                         __FILE__, __LINE__, #c, lw_last_error());             \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

// Run fn in n forked children; each must exit 0.
template <typename F> static void in_processes(int n, F fn)
{
    pid_t kids[16];
    for (int i = 0; i < n; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            fn(i);
            lw_shutdown();
            _exit(0);
        }
    }
    for (int i = 0; i < n; i++) {
        int st = 0;
        CHECK(waitpid(kids[i], &st, 0) == kids[i]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}

static void exclusion()
{
    const int procs = 4, rounds = 25;
    bank::db_int("DEL balance:%lld", 1);
    in_processes(procs, [](int) {
        bank::Account a(1);
        for (int i = 0; i < rounds; i++) {
            CHECK(a.deposit(1) > 0);
            CHECK(lw_last_error() == LW_OK);
        }
    });
    long long got = bank::db_int("GET balance:%lld", 1);
    std::printf("%d processes x %d deposits: balance %lld\n", procs, rounds,
                got);
    CHECK(got == procs * rounds);
}

static void leaving_early()
{
    bank::Account a(2);
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    bool caught = false;
    try {
        a.fail_inside("boom");
    } catch (const std::invalid_argument &e) {
        caught = std::string(e.what()) == "boom";
    }
    CHECK(caught); // the body's exception, unchanged
#else
    CHECK(a.fail_inside("boom") == 4);
#endif
    CHECK(lw_last_error() == LW_OK); // held until the body left
    CHECK(bank::db_int("EXISTS lock:acct:%lld", 2) == 0);
    // Released at once: another process, not waiting, gets it.
    in_processes(1, [](int) {
        CHECK(bank::Account(2).try_now() == 0);
        CHECK(lw_last_error() == LW_OK);
    });
}

// A lock removed from Redis behind the body's back: the call still returns
// (or throws) what the body did, and lw_last_error() says LW_ELOST, never
// LW_OK.
static void lost()
{
    bank::Account a(6);
    CHECK(a.lose_inside(false) == 1);
    CHECK(lw_last_error() == LW_ELOST);
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    bool caught = false;
    try {
        a.lose_inside(true);
    } catch (const std::runtime_error &) {
        caught = true;
    }
    CHECK(caught);
    CHECK(lw_last_error() == LW_ELOST);
#endif
    CHECK(a.try_now() == 0); // nothing of ours left behind
    CHECK(lw_last_error() == LW_OK);
}

static void busy()
{
    // A child holds acct:3 while the parent tries without waiting.
    int ready[2], done[2];
    CHECK(pipe(ready) == 0 && pipe(done) == 0);
    pid_t kid = fork();
    CHECK(kid >= 0);
    if (kid == 0) {
        lw_lease *l = nullptr;
        lw_lock_opts o = lw_lock_opts();
        o.expire_ms = 10000;
        char c = 0;
        CHECK(lw_acquire("acct:3", 6, &o, &l) == LW_OK);
        CHECK(write(ready[1], "x", 1) == 1);
        CHECK(read(done[0], &c, 1) == 1);
        lw_release(l);
        lw_shutdown();
        _exit(0);
    }
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1);
    CHECK(bank::Account(3).try_now() == -7); // on_fail, the body not run
    CHECK(lw_last_error() == LW_ETIMEOUT);
    CHECK(write(done[1], "x", 1) == 1);
    int st = 0;
    CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(bank::Account(3).try_now() == 0);
}

static void overloads()
{
    std::string s = "named";
    short sh = 1;
    CHECK(bank::pick(1) == 1);
    CHECK(bank::pick(sh) == 1); // promoted to int, as without lockweave
    CHECK(bank::pick('c') == 1);
    CHECK(bank::pick(1L) == 2);
    CHECK(bank::pick("literal") == 3);
    CHECK(bank::pick(s) == 4);
    CHECK(bank::pick(std::string("temporary")) == 5);
    CHECK(bank::pick(2.5) == 10); // the default argument, 4
    CHECK(bank::pick(2.5, 1) == 7);
    CHECK(lw_last_error() == LW_OK);
}

static void virtuals()
{
    bank::Account plain(4);
    bank::Audited derived(5);
    bank::Account &base = derived;
    CHECK(plain.audited() == 1);
    CHECK(base.audited() == 101); // the override, then the locked base
    CHECK(bank::Account::branch_held(7) == 1);
}

int main()
{
    exclusion();
    leaving_early();
    lost();
    busy();
    overloads();
    virtuals();
    lw_shutdown();
    std::printf("ok\n");
    return 0;
}

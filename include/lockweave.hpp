/*
 * lockweave for C++17: header-only, over <lockweave.h>.
 *
 *   using namespace std::chrono_literals;
 *   if (lw::lease l = lw::acquire("stock:42", 10s, 5s)) {
 *       write_with_fence(l.fence());
 *   } else {
 *       log(lw_strerror(l.error()));   // LW_ETIMEOUT, LW_EREDIS, ...
 *   }                                   // released here (lw_release())
 *
 * lw::lease is a move-only owner of an lw_lease: its destructor calls
 * lw_release(); release() does so at once and returns the code.  A failed
 * acquire is an empty lease whose error() is the LW_E... code: nothing here
 * throws, so it builds with -fno-exceptions.  lw::acquire_keys() takes
 * several keys as one lease.  The loop functions (lw::acquire_async(),
 * lw::acquire_keys_async(), lw::release_async()) take any callable.  Nothing
 * here needs linking beyond liblockweave.
 */
#ifndef LOCKWEAVE_HPP
#define LOCKWEAVE_HPP

#include <lockweave.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <new>
#include <string_view>
#include <utility>

namespace lw
{

/* A held lock as a value; empty when the acquire failed (error() says
 * why), after release() or a move. */
class lease
{
  public:
    /* Empty, error() LW_EINVAL. */
    lease() noexcept = default;
    /* Owns l (from lw_acquire() and the like); NULL: empty, LW_EINVAL. */
    explicit lease(lw_lease *l) noexcept
        : l_(l), err_(l != nullptr ? LW_OK : LW_EINVAL)
    {
    }
    /* Empty, with error() err (an LW_E... code). */
    static lease failed(int err) noexcept
    {
        lease e;
        e.err_ = err;
        return e;
    }

    lease(const lease &) = delete;
    lease &operator=(const lease &) = delete;
    /* The lock moves: o is left empty (error() LW_EINVAL). */
    lease(lease &&o) noexcept
        : l_(std::exchange(o.l_, nullptr)),
          err_(std::exchange(o.err_, LW_EINVAL))
    {
    }
    /* Releases what this held (status lost: call release() to see it). */
    lease &operator=(lease &&o) noexcept
    {
        if (this != &o) {
            release();
            l_ = std::exchange(o.l_, nullptr);
            err_ = std::exchange(o.err_, LW_EINVAL);
        }
        return *this;
    }
    /* lw_release(); its status stays in lw_last_error(). */
    ~lease()
    {
        release();
    }

    /* Give the lock back now: lw_release()'s LW_OK or LW_ELOST (LW_EFORKED
     * in a forked child); LW_EINVAL when empty.  Empty afterwards. */
    int release() noexcept
    {
        if (l_ == nullptr)
            return LW_EINVAL;
        err_ = LW_EINVAL;
        return lw_release(std::exchange(l_, nullptr));
    }

    /* The fencing token (lw_lease_fence()); 0 when empty or under Redlock. */
    std::uint64_t fence() const noexcept
    {
        return lw_lease_fence(l_);
    }
    /* One key's fencing token, for a lease of several (lw_lease_fence_of()). */
    std::uint64_t fence(std::string_view key) const noexcept
    {
        return lw_lease_fence_of(l_, key.data(), key.size());
    }
    /* lw_lease_held(): false once the lock may be lost, and when empty. */
    bool held() const noexcept
    {
        return lw_lease_held(l_) != 0;
    }
    /* Holds a lease (which may since have been lost: see held()). */
    explicit operator bool() const noexcept
    {
        return l_ != nullptr;
    }
    /* LW_OK while it holds a lease; the failed acquire's code; LW_EINVAL
     * when default-constructed, released or moved from. */
    int error() const noexcept
    {
        return err_;
    }

    /* The C lease, still owned by this. */
    lw_lease *get() const noexcept
    {
        return l_;
    }
    /* The C lease, no longer owned: the caller releases it. */
    lw_lease *detach() noexcept
    {
        err_ = LW_EINVAL;
        return std::exchange(l_, nullptr);
    }

  private:
    lw_lease *l_ = nullptr;
    int err_ = LW_EINVAL;
};

namespace detail
{
/* The most keys one lease takes (lw_acquire_keys()). */
constexpr int keys_max = 64;

/* A duration as lw_lock_opts's milliseconds; false when out of range. */
inline bool to_ms(std::chrono::milliseconds d, std::uint32_t &out) noexcept
{
    if (d.count() < 0 || d.count() > static_cast<std::int64_t>(UINT32_MAX))
        return false;
    out = static_cast<std::uint32_t>(d.count());
    return true;
}
} // namespace detail

/* Options for a write lock held for expire (renewed by the watchdog until
 * released: max_renew -1), waiting up to wait for a busy key (0: try once).
 * Set other fields (flags, permits, hold_at_least_ms, site) on the result.
 * A duration below 0 or above 2^32 - 1 ms gives expire_ms 0, which
 * lw::acquire() refuses with LW_EINVAL. */
inline lw_lock_opts lock_opts(std::chrono::milliseconds expire,
                              std::chrono::milliseconds wait) noexcept
{
    lw_lock_opts o{};
    o.max_renew = -1;
    if (!detail::to_ms(expire, o.expire_ms) || !detail::to_ms(wait, o.wait_ms))
        o.expire_ms = o.wait_ms = 0;
    return o;
}

/* lw_acquire() of key with opts: a held lease, or an empty one whose
 * error() is the code (LW_ETIMEOUT, LW_EREDIS, LW_EINVAL, ...). */
inline lease acquire(std::string_view key, const lw_lock_opts &opts) noexcept
{
    lw_lease *l = nullptr;
    int rc = lw_acquire(key.data(), key.size(), &opts, &l);

    if (rc != LW_OK || l == nullptr)
        return lease::failed(rc != LW_OK ? rc : LW_EINVAL);
    return lease(l);
}

/* A write lock on key, as lock_opts(expire, wait) says. */
inline lease acquire(std::string_view key, std::chrono::milliseconds expire,
                     std::chrono::milliseconds wait) noexcept
{
    lw_lock_opts o = lock_opts(expire, wait);
    return acquire(key, o);
}

namespace detail
{
/* keys as the C API's arrays; false when there are none or more than it
 * takes (64). */
template <class Keys>
bool key_arrays(const Keys &keys, const void **ptrs, std::size_t *lens,
                int &n) noexcept
{
    n = 0;
    for (const auto &k : keys) {
        std::string_view v(k);
        if (n == keys_max)
            return false;
        ptrs[n] = v.data();
        lens[n++] = v.size();
    }
    return n > 0;
}
} // namespace detail

/* lw_acquire_keys() of keys with opts: one lease of every key or of none,
 * taken in the global order whatever order keys lists them in (a key given
 * twice is taken once).  keys is any range of things a std::string_view is
 * made from, 1 to 64 of them (else an empty lease, LW_EINVAL). */
template <class Keys>
lease acquire_keys(const Keys &keys, const lw_lock_opts &opts) noexcept
{
    const void *ptrs[detail::keys_max];
    std::size_t lens[detail::keys_max];
    lw_lease *l = nullptr;
    int n, rc;

    if (!detail::key_arrays(keys, ptrs, lens, n))
        return lease::failed(LW_EINVAL);
    rc = lw_acquire_keys(ptrs, lens, n, &opts, &l);
    if (rc != LW_OK || l == nullptr)
        return lease::failed(rc != LW_OK ? rc : LW_EINVAL);
    return lease(l);
}

/* The same, for a braced list: lw::acquire_keys({"from:1", "to:2"}, o). */
inline lease acquire_keys(std::initializer_list<std::string_view> keys,
                          const lw_lock_opts &opts) noexcept
{
    return acquire_keys<std::initializer_list<std::string_view>>(keys, opts);
}

/* Write locks on keys, as lock_opts(expire, wait) says. */
inline lease acquire_keys(std::initializer_list<std::string_view> keys,
                          std::chrono::milliseconds expire,
                          std::chrono::milliseconds wait) noexcept
{
    return acquire_keys(keys, lock_opts(expire, wait));
}

/* ---------------------------------------------------------------------- */
/* Event loops (lw_loop, see docs/loops.md)                                */
/* ---------------------------------------------------------------------- */

namespace detail
{
struct acquired {
    std::function<void(lease)> fn;
    static void call(lw_lease *l, int status, void *ud)
    {
        acquired *a = static_cast<acquired *>(ud);
        lease got = status == LW_OK && l != nullptr
                        ? lease(l)
                        : lease::failed(status != LW_OK ? status : LW_EINVAL);
        std::function<void(lease)> fn = std::move(a->fn);
        delete a;
        fn(std::move(got));
    }
};
struct released {
    std::function<void(int)> fn;
    static void call(int status, void *ud)
    {
        released *r = static_cast<released *>(ud);
        std::function<void(int)> fn = std::move(r->fn);
        delete r;
        fn(status);
    }
};
} // namespace detail

/* lw_acquire_async() of key with opts on loop: LW_OK, then cb(lw::lease)
 * runs exactly once, later, on the loop's thread, with the lease or an
 * empty one whose error() is the code (LW_ECANCELED when the loop is
 * freed first); any other code (LW_EINVAL, LW_EFORKED, LW_ENOMEM): cb
 * never runs.  The callable is kept on the heap until then: lw_cancel_async()
 * cannot name it (use lw_loop_free(), or the C function with a ud of your
 * own).  The lease may be released with lw::release_async() or by its
 * destructor (which blocks). */
template <class F>
int acquire_async(lw_loop *loop, std::string_view key, const lw_lock_opts &opts,
                  F &&cb)
{
    detail::acquired *a = new (std::nothrow) detail::acquired;
    if (a == nullptr)
        return LW_ENOMEM;
    a->fn = std::forward<F>(cb);
    int rc = lw_acquire_async(loop, key.data(), key.size(), &opts,
                              &detail::acquired::call, a);
    if (rc != LW_OK)
        delete a;
    return rc;
}

/* lw_acquire_keys_async() of keys (as lw::acquire_keys() takes them) on
 * loop, with cb as lw::acquire_async() says. */
template <class Keys, class F>
int acquire_keys_async(lw_loop *loop, const Keys &keys,
                       const lw_lock_opts &opts, F &&cb)
{
    const void *ptrs[detail::keys_max];
    std::size_t lens[detail::keys_max];
    int n;

    if (!detail::key_arrays(keys, ptrs, lens, n))
        return LW_EINVAL;
    detail::acquired *a = new (std::nothrow) detail::acquired;
    if (a == nullptr)
        return LW_ENOMEM;
    a->fn = std::forward<F>(cb);
    int rc = lw_acquire_keys_async(loop, ptrs, lens, n, &opts,
                                   &detail::acquired::call, a);
    if (rc != LW_OK)
        delete a;
    return rc;
}

/* The same, for a braced list of keys. */
template <class F>
int acquire_keys_async(lw_loop *loop,
                       std::initializer_list<std::string_view> keys,
                       const lw_lock_opts &opts, F &&cb)
{
    return acquire_keys_async<std::initializer_list<std::string_view>>(
        loop, keys, opts, std::forward<F>(cb));
}

/* lw_release_async() of l on its loop: LW_OK, then cb(int status) runs
 * once, later, on the loop's thread, with what lw_release() would return.
 * LW_EINVAL (l empty, or not a loop's lease): cb never runs and l keeps its
 * lease (its destructor releases it).  Any other code: cb never runs, the
 * lease is the loop's again (lw_loop_free() gives it back).  l is empty
 * afterwards unless LW_EINVAL. */
template <class F> int release_async(lease &&l, F &&cb)
{
    if (!l)
        return LW_EINVAL;
    detail::released *r = new (std::nothrow) detail::released;
    if (r == nullptr)
        return LW_ENOMEM;
    r->fn = std::forward<F>(cb);
    int rc = lw_release_async(l.get(), &detail::released::call, r);
    if (rc != LW_OK)
        delete r;
    if (rc != LW_EINVAL)
        l.detach();
    return rc;
}

/* lw_release_async() without a callback, as above. */
inline int release_async(lease &&l) noexcept
{
    if (!l)
        return LW_EINVAL;
    int rc = lw_release_async(l.get(), nullptr, nullptr);
    if (rc != LW_EINVAL)
        l.detach();
    return rc;
}

} // namespace lw

#endif /* LOCKWEAVE_HPP */

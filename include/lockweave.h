/*
 * lockweave — a Redis distributed lock around a C function, woven at build
 * time.
 *
 *     #include <lockweave.h>
 *
 *     REDIS_LOCK("stock:{stock_id}", 10s, 5s)
 *     int deduct(int64_t stock_id, int qty) { ... }
 *
 * lockweave-gen (run by the CMake function lockweave_generate()) turns every
 * annotated definition into a wrapper that calls the guard API below.  The same
 * API can be called by hand; see lw_lock() for the short form.
 *
 * C11, libc only.  Every symbol is lw_ / LW_; names with a double underscore
 * (lw__, LW__) are internal and may change between versions.
 */
#ifndef LOCKWEAVE_H
#define LOCKWEAVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version is written here only: CMake reads these three lines for the
 * project, the package files and lockweave-gen. */
#define LW_VERSION_MAJOR 0
#define LW_VERSION_MINOR 1
#define LW_VERSION_PATCH 0
#define LW_VERSION                                                             \
    LW__XSTR(LW_VERSION_MAJOR)                                                 \
    "." LW__XSTR(LW_VERSION_MINOR) "." LW__XSTR(LW_VERSION_PATCH)
/* One number per release; woven files check it against the header they see. */
#define LW_VERSION_NUM                                                         \
    (LW_VERSION_MAJOR * 10000 + LW_VERSION_MINOR * 100 + LW_VERSION_PATCH)

#if defined(LW_STATIC)
#define LW_API
#elif defined(LW_BUILDING) && defined(__GNUC__)
#define LW_API __attribute__((visibility("default")))
#else
#define LW_API
#endif

/*
 * Structs that grow: lw_config, lw_stats, lw_lock_opts and lw_site gain fields
 * at their end, each past the previous sizeof.  The functions taking them are
 * macros that pass the program's sizeof to a ..._sized() entry point, so the
 * library reads and writes only the program's struct: fields the program
 * lacks take their defaults, fields the library lacks must be zero.  Called
 * as (lw_stats_get)(p) or through &lw_stats_get, a function keeps its 0.1.0
 * layout.  lw_guard is 512 bytes in every version.
 */

/* ------------------------------------------------------------------------ */
/* The annotation                                                           */
/* ------------------------------------------------------------------------ */

/*
 * REDIS_LOCK(key, expire, wait [, option = value]...)
 *
 * What the annotation turns into is decided where it is used, by LW__MODE,
 * which only lockweave-gen sets (so a <lockweave.h> read through a forced
 * include or a precompiled header still follows the file being compiled):
 *  - LW__MODE_SCAN, lockweave-gen's own parse: an attribute it reads from
 *    the AST.
 *  - LW__MODE_WOVEN, a file lockweave-gen wove, or parsed and found only
 *    annotated declarations in: nothing (the wrapper it wrote locks).
 *  - LW__MODE_UNPARSED, a file lockweave-gen compiled without parsing, having
 *    found no REDIS_LOCK in it or in the headers it could read: a compile
 *    error, since this annotation would otherwise guard nothing.
 *  - unset, a file lockweave-gen never saw (a target without
 *    lockweave_generate()): a reference to an undefined object from a section
 *    the linker must keep (retain), so the link fails with a name that says
 *    what to do, at any optimisation level, with LTO and with section GC;
 *    editors and analysers that parse the file alone still see valid C.
 */
#define LW__CAT2(a, b)  a##b
#define LW__CAT(a, b)   LW__CAT2(a, b)
#define REDIS_LOCK(...) LW__CAT(LW__ANNOT_, LW__MODE)(__VA_ARGS__)

/*
 * REDIS_ONCE(key, window [, expire = D, wait = D, failed_if = EXPR,
 *            on_fail = EXPR])
 *
 * Across hosts, the body runs at most once per expanded key within window
 * (from the first run's start) while Redis keeps the mark; the window's
 * other callers get the first run's return value, lw_last_error() LW_EDONE.
 * Same modes as REDIS_LOCK, so an unwoven build fails as REDIS_LOCK's does.
 * docs/weaving.md has the rules.
 */
#define REDIS_ONCE(...) LW__CAT(LW__ONCE_, LW__MODE)(__VA_ARGS__)

/* The arguments are macro-expanded before they are stringized (one extra
 * macro level), so REDIS_LOCK(STOCK_KEY, LOCK_TTL, 0) reaches the generator
 * with the values, not the names. */
#define LW__STR(...)  #__VA_ARGS__
#define LW__XSTR(...) LW__STR(__VA_ARGS__)
#define LW__ANNOT_LW__MODE_SCAN(...)                                           \
    __attribute__((annotate("lockweave:REDIS_LOCK:" LW__XSTR(__VA_ARGS__))))
#define LW__ONCE_LW__MODE_SCAN(...)                                            \
    __attribute__((annotate("lockweave:REDIS_ONCE:" LW__XSTR(__VA_ARGS__))))
#define LW__ANNOT_LW__MODE_WOVEN(...)
#define LW__ONCE_LW__MODE_WOVEN(...)
#define LW__ANNOT_LW__MODE_UNPARSED(...)                                       \
    _Pragma("GCC error \"REDIS_LOCK in a file lockweave-gen compiled without \
parsing: it found no REDIS_LOCK in the file or in the headers it could read \
(the annotation comes from a header outside them, or its name is pasted \
together); write REDIS_LOCK in this file, a comment is enough\"")
#define LW__ONCE_LW__MODE_UNPARSED(...)                                        \
    _Pragma("GCC error \"REDIS_ONCE in a file lockweave-gen compiled without \
parsing: it found no REDIS_LOCK or REDIS_ONCE in the file or in the headers \
it could read (the annotation comes from a header outside them, or its name \
is pasted together); write REDIS_ONCE in this file, a comment is enough\"")

#if defined(__has_attribute)
#if __has_attribute(retain)
#define LW__KEEP __attribute__((used, retain))
#endif
#endif
#ifndef LW__KEEP
#define LW__KEEP __attribute__((used))
#endif
#ifdef __COUNTER__
#define LW__UNIQUE(p) LW__CAT(p, __COUNTER__)
#else
#define LW__UNIQUE(p) LW__CAT(p, __LINE__)
#endif
/* The linker names these two, in this order, for a file compiled without
 * lockweave-gen that has REDIS_LOCK in it or in a header it includes (an
 * annotated declaration is enough).  Compile every such file through the
 * generator: with CMake, lockweave_generate(<target>) on each target that
 * does; with Make or by hand, `lockweave-gen --launch CC ARGS...`
 * (make CC="lockweave-gen --launch cc").  Or keep the annotation off the
 * header, on the definition only: the header's includers then need nothing. */
extern const char
    lockweave_generate_was_not_run_on_this_file_see_lockweave_generate_in_cmake;
extern const char
    or_without_cmake_compile_it_with_lockweave_gen_launch_see_lockweave_h;
#define LW__ANNOT_LW__MODE(...)                                                \
    LW__KEEP static const char *const LW__UNIQUE(lw__unwoven_)[2] = {          \
        &lockweave_generate_was_not_run_on_this_file_see_lockweave_generate_in_cmake, \
        &or_without_cmake_compile_it_with_lockweave_gen_launch_see_lockweave_h};
#define LW__ONCE_LW__MODE(...) LW__ANNOT_LW__MODE(__VA_ARGS__)

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* Status codes: 0 or negative.  lw_strerror() names each. */
enum {
    LW_OK = 0,
    LW_ETIMEOUT = -1,  /* the lock stayed busy until the wait ran out */
    LW_EREDIS = -2,    /* Redis unreachable, or an unexpected reply */
    LW_ELOST = -3,     /* the lease expired or was taken while the body ran */
    LW_ECONFIG = -4,   /* bad LOCKWEAVE_REDIS_URL or lw_configure() values
                          (a database the server does not have too) */
    LW_ENOMEM = -5,    /* out of memory */
    LW_EINVAL = -6,    /* bad argument or options, or a lock Redis holds as
                          another kind (or with other permits) */
    LW_EAUTH = -7,     /* Redis refused AUTH, or a command for want of a
                          password (NOAUTH) or a right (NOPERM: also found
                          at connect, for any command a lock needs) */
    LW_EFORKED = -8,   /* a lock held by the parent process, seen in a child */
    LW_EREPLICAS = -9, /* too few replicas confirmed the lock (wait_replicas) */
    LW_ESYSTEM = -10,  /* the system refused what lockweave needs: randomness
                          for lock tokens (getrandom), or a thread */
    LW_ESHUTDOWN = -11, /* lw_shutdown() ran while the lock was wanted */
    LW_ETLS = -12,      /* rediss://: the TLS handshake failed or the server's
                           certificate was not trusted (the log says why) */
    LW_EDONE = -13,     /* run once: the stored outcome of an earlier run */
    LW_ECANCELED = -14, /* a pending request ended by lw_cancel_async() or
                           lw_loop_free() */
};

/* A static English text for an LW_E... code ("unknown error" otherwise).
 * Thread-safe; never NULL. */
LW_API const char *lw_strerror(int code);

/* Status of the last guarded call made on this thread: LW_OK when the body ran
 * with the lock held throughout, a negative LW_E... code otherwise (the body
 * did not run, or ran and lost the lock: LW_ELOST).  Thread-local. */
LW_API int lw_last_error(void);

/* ------------------------------------------------------------------------ */
/* Inside a guarded function                                                */
/* ------------------------------------------------------------------------ */

/* Fencing token of the innermost lock this thread holds: strictly increasing
 * per key across all clients.  0 outside a guarded section.  Thread-local.
 * Always 0 with several independent masters (Redlock): they share no order. */
LW_API uint64_t lw_fence(void);

/* 1 while the innermost lock this thread holds is still ours; 0 once a renewal
 * failed, max_renew ran out, the lease's end passed with no renewal (this
 * process was paused), or outside a guarded section.  Thread-safe. */
LW_API int lw_still_held(void);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Values for lw_configure().  Start from lw_config_init() (or zero it), then
 * change fields.  Strings are copied by lw_configure(); the caller keeps
 * ownership.  Fields are only ever added at the end, zero meaning
 * "environment or default", so such code keeps its meaning when the struct
 * grows, built against either header.
 */
typedef struct lw_config {
    const char *redis_url;  /* NULL: $LOCKWEAVE_REDIS_URL or the default */
    const char *key_prefix; /* NULL: "lock:" */
    int connect_timeout_ms; /* <= 0: 1000 */
    int command_timeout_ms; /* <= 0: 2000 */
    int wait_replicas;      /* > 0: after acquiring, WAIT until this many
                               replicas have the lock, else fail; <= 0:
                               $LOCKWEAVE_WAIT_REPLICAS, or 0 (no WAIT) */
    int wait_timeout_ms;    /* <= 0: $LOCKWEAVE_WAIT_TIMEOUT_MS or 100 */
    /* rediss:// only.  Files are read by lw_configure() (or the first guarded
     * call): unreadable, or a key that does not match its certificate, is
     * LW_ECONFIG.  NULL: the $LOCKWEAVE_TLS_... variable of the same name. */
    const char *tls_ca_file;     /* PEM bundle of trusted CAs; with tls_ca_dir
                                    NULL too: the system trust store */
    const char *tls_ca_dir;      /* directory of hashed CA certificates */
    const char *tls_cert_file;   /* client certificate (PEM, chain) for
                                    mutual TLS; needs tls_key_file */
    const char *tls_key_file;    /* its private key (PEM, unencrypted) */
    const char *tls_server_name; /* name to verify and send as SNI; NULL: the
                                    URL's host (behind Sentinel: names the
                                    data nodes only; NULL: the address the
                                    sentinels report) */
    int tls_insecure;            /* > 0: do not verify the server (warned on
                                    each connection); 0: $LOCKWEAVE_TLS_INSECURE */
    /* redis+sentinel:// only: the sentinels' own credentials, for AUTH on
     * each connection to a sentinel (the URL's are the data nodes').
     * NULL: $LOCKWEAVE_SENTINEL_USER, $LOCKWEAVE_SENTINEL_PASSWORD; no
     * password: no AUTH. */
    const char *sentinel_user;
    const char *sentinel_password;
} lw_config;

/* Fill *cfg with "use the environment and defaults".  Never fails. */
LW_API void lw_config_init(lw_config *cfg);
LW_API void lw_config_init_sized(lw_config *cfg, size_t size);
#define lw_config_init(cfg) lw_config_init_sized((cfg), sizeof(lw_config))

/* Replace the process's configuration.  Not needed when the environment is
 * enough: the first guarded call reads it.  Thread-safe; connections are
 * reopened on next use.  Returns LW_OK, LW_ECONFIG (bad URL, TLS files that
 * cannot be used, or a field set that this library does not know: logged)
 * or LW_ENOMEM; on error the previous configuration stays. */
LW_API int lw_configure(const lw_config *cfg);
LW_API int lw_configure_sized(const lw_config *cfg, size_t size);
#define lw_configure(cfg) lw_configure_sized((cfg), sizeof(lw_config))

/* ------------------------------------------------------------------------ */
/* Logging and counters                                                     */
/* ------------------------------------------------------------------------ */

enum {
    LW_LOG_DEBUG = 0,
    LW_LOG_INFO = 1,
    LW_LOG_WARN = 2,
    LW_LOG_ERROR = 3,
    LW_LOG_OFF = 4,
};

/* A log sink: level, a NUL-terminated message without newline, user data.
 * Called from any lockweave thread; must not call back into lockweave. */
typedef void (*lw_log_fn)(int level, const char *msg, void *ud);

/* Send log lines at or above min_level to fn (NULL: back to stderr).  The
 * default level comes from $LOCKWEAVE_LOG=debug|info|warn|error|off (warn).
 * Thread-safe. */
LW_API void lw_set_logger(lw_log_fn fn, void *ud, int min_level);

/* Why a lease was lost, as a lost handler is told. */
enum {
    LW_LOST_GONE = 1,     /* the key expired, was evicted or is another's */
    LW_LOST_NO_REPLY = 2, /* Redis did not answer in time to say it was
                             held: no renewal before the lease ended, or
                             no answer to the release */
    LW_LOST_RENEWALS = 3, /* max_renew renewals used up and the lease ended */
    LW_LOST_NOMEM = 4,    /* the watchdog ran out of memory to keep it */
};

/* A lost-lease handler: the full Redis key (prefix included, keylen bytes,
 * not NUL-terminated, valid only during the call), an LW_LOST_... reason and
 * the user data. */
typedef void (*lw_lost_fn)(const char *key, size_t keylen, int reason,
                           void *ud);

/* Call fn once for every lease lost while its body runs, the moment lockweave
 * notices: from the watchdog thread (the holder's lw_guard_leave() waits for
 * it to return), or from the holder's thread when its release is what finds
 * it lost.  Not for locks lw_shutdown() gives back.  Keep fn short: other
 * renewals wait for it.  NULL removes it.  Thread-safe. */
LW_API void lw_set_lost_handler(lw_lost_fn fn, void *ud);

/* Counters since the process started (all processes' own, not cluster-wide). */
typedef struct lw_stats {
    uint64_t acquired;     /* locks taken (not re-entries): from Redis, or
                              handed on by another thread of this process
                              (or request of its event loop) */
    uint64_t reentered;    /* guards satisfied by a lock already held */
    uint64_t contended;    /* acquisitions that found the lock busy at first */
    uint64_t timed_out;    /* LW_ETIMEOUT results */
    uint64_t renewed;      /* successful watchdog renewals */
    uint64_t lost;         /* LW_ELOST results */
    uint64_t redis_errors; /* failed round trips (I/O, protocol, error reply) */
    uint64_t wait_total_us;  /* time spent waiting for busy locks */
    uint64_t wait_max_us;    /* longest single wait */
    uint64_t held;           /* locks held by this process right now */
    uint64_t handed_locally; /* of `acquired`, those handed on by another
                                thread of this process (or request of its
                                event loop), no round trip */
} lw_stats;

/* Copy the counters into *out.  Thread-safe; values are read one by one.
 * Counters this library does not have read 0. */
LW_API void lw_stats_get(lw_stats *out);
LW_API void lw_stats_get_sized(lw_stats *out, size_t size);
#define lw_stats_get(out) lw_stats_get_sized((out), sizeof(lw_stats))

/* ------------------------------------------------------------------------ */
/* Metrics per annotation site                                              */
/* ------------------------------------------------------------------------ */

/*
 * Where locks are taken, for lw_metrics_write(): its labels, written once
 * (never a lock's expanded key, so the series stay few).  The woven wrapper
 * declares one per REDIS_LOCK; hand-written code declares its own with
 * LW_SITE() and sets lw_lock_opts.site.  The strings must live as long as
 * the program (string literals); the runtime copies them when registering.
 */
typedef struct lw_site {
    const char *function; /* label function (NULL: "") */
    const char *key;      /* label key: the key template, as written */
    const char *file;     /* label site, "file:line": the file's name
                             without its directories */
    uint32_t line;
    void *lw__impl; /* the runtime's counters: set when registered */
} lw_site;

/* Make site known to lw_metrics_write(), listed from now on (at zero until
 * used); registering a site again, or one with the same labels, does
 * nothing more.  A site first met in lw_lock_opts is registered then.
 * Thread-safe; never fails (out of memory: counted as unannotated). */
LW_API void lw_site_register_sized(lw_site *site, size_t size);
#define lw_site_register(site) lw_site_register_sized((site), sizeof(lw_site))

/* LW_SITE(name, "function", "key template");  a static lw_site called name,
 * labelled with this file and line, registered before main() runs (by a
 * constructor function: in a shared library, when it is loaded), so
 * lw_metrics_write() lists it from the start.  LW_SITE_AT() names the file
 * and line itself (lockweave-gen's wrappers: the annotation's).  At file
 * scope, once per name. */
#if defined(__cplusplus) && __cplusplus >= 201103L
/* C++ code woven by lockweave-gen builds under -Wzero-as-null-pointer-constant
 * too. */
#define LW__NULL_PTR nullptr
#else
#define LW__NULL_PTR 0
#endif
#define LW_SITE_INIT(function, key, file, line)                                \
    {                                                                          \
        (function), (key), (file), (line), LW__NULL_PTR                        \
    }
#define LW_SITE(name, function, key)                                           \
    LW_SITE_AT(name, function, key, __FILE__, __LINE__)
#ifdef __cplusplus
#define LW_SITE_AT(name, function, key, file, line)                            \
    static lw_site name = LW_SITE_INIT(function, key, file, line);             \
    static const int LW__CAT(name, _lw__registered) =                          \
        (lw_site_register(&name), 0)
#else
/* The tentative definition first, so the constructor can name it, and the
 * definition last, so that the macro takes a semicolon. */
#define LW_SITE_AT(name, function, key, file, line)                            \
    static lw_site name;                                                       \
    __attribute__((constructor)) static void LW__CAT(name,                     \
                                                     _lw__register)(void)      \
    {                                                                          \
        lw_site_register(&name);                                               \
    }                                                                          \
    static lw_site name = LW_SITE_INIT(function, key, file, line)
#endif

/* Render every site's counters in the Prometheus text format 0.0.4, as
 * snprintf() does: at most size bytes into buf (NUL-terminated when size >
 * 0; buf may be NULL when size is 0), returning the length of the whole
 * text.  Series per site (labels function, key, site):
 * lockweave_{acquired,contended,timeouts,lost,renewals}_total and the
 * histograms lockweave_wait_seconds and lockweave_hold_seconds.  Guards and
 * leases without a site count under function="", key="",
 * site="unannotated".  Thread-safe, lock-free: values are read one by one. */
LW_API size_t lw_metrics_write(char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* The guard: what a woven wrapper calls                                    */
/* ------------------------------------------------------------------------ */

/* Options of one lock, as written in the annotation.  Zero it (or use a
 * designated initializer), then set fields: an option added later is off
 * while zero.  One this library does not know (a newer header's), set,
 * makes lw_guard_enter() fail with LW_EINVAL. */
typedef struct lw_lock_opts {
    uint32_t expire_ms; /* lease (Redis TTL); > 0 */
    uint32_t wait_ms;   /* how long to wait for a busy lock; 0: try once */
    int32_t max_renew;  /* watchdog renewals at most; < 0: unlimited */
    uint32_t flags;     /* 0 (a write lock), or LW_LOCK_READ */
    uint32_t hold_at_least_ms; /* > 0: released early, the key stays locked
                                  until this long after acquisition (at
                                  most expire_ms); 0: released at once */
    uint32_t permits;          /* > 0: a semaphore, at most this many holders
                                  (1..65535; every user of the key must agree, else
                                  LW_EINVAL); 0: a mutex */
    lw_site *site; /* metrics: where this lock is taken (registered on first
                      use if it is not yet); NULL: "unannotated" */
    uint32_t once_window_ms; /* > 0: run once (REDIS_ONCE), not a lock: the
                                key is a mark the body runs under at most
                                once in this window (see lw_once_done_i64());
                                expire_ms <= it, no permits, flags or hold;
                                guards only (lw_guard_enter()) */
} lw_lock_opts;

/* lw_lock_opts.flags: a read lock, shared with other readers; writers (the
 * default) exclude everyone.  A writer queued is not overtaken by readers
 * that come after it. */
#define LW_LOCK_READ 0x1u

/* The most permits a semaphore may have (lw_lock_opts.permits). */
#define LW_PERMITS_MAX 65535

/* Bytes of key kept inside the guard; longer keys use the heap. */
#define LW_GUARD_INLINE_KEY 128

/*
 * One lock acquisition, on the caller's stack.  Opaque: the fields are the
 * runtime's.  Life cycle: lw_guard_init(), lw_guard_key_*() to append the key,
 * lw_guard_enter(), the critical section, lw_guard_leave().  Guards of one
 * thread nest and must be left in reverse order of entering; a guard is used
 * by one thread only.  No heap allocation unless the key exceeds
 * LW_GUARD_INLINE_KEY or the lock is busy.
 */
typedef union lw_guard {
    unsigned char lw__opaque[512];
    uint64_t lw__align;
    void *lw__align_ptr;
} lw_guard;

/* Start a guard: copies *opts, writes the key prefix.  Cannot fail; errors
 * (including bad configuration) surface from lw_guard_enter(). */
LW_API void lw_guard_init(lw_guard *g, const lw_lock_opts *opts);
LW_API void lw_guard_init_sized(lw_guard *g, const lw_lock_opts *opts,
                                size_t opts_size);
#define lw_guard_init(g, opts)                                                 \
    lw_guard_init_sized((g), (opts), sizeof(lw_lock_opts))

/* Append to the key: raw bytes (binary-safe), a C string (NULL appends
 * nothing and makes enter fail with LW_EINVAL), a signed or unsigned decimal.
 * Never truncates: an allocation failure is reported by lw_guard_enter(). */
LW_API void lw_guard_key_bytes(lw_guard *g, const void *p, size_t n);
LW_API void lw_guard_key_str(lw_guard *g, const char *s);
LW_API void lw_guard_key_i64(lw_guard *g, int64_t v);
LW_API void lw_guard_key_u64(lw_guard *g, uint64_t v);

/* Acquire the lock (or re-enter one this thread holds, in any mode but a
 * write over its own read: LW_EINVAL), waiting up to opts->wait_ms.  LW_OK:
 * run the section, then call lw_guard_leave().  Any other code: the lock is
 * not held, the guard is finished (no leave needed), and lw_last_error()
 * returns the same code. */
LW_API int lw_guard_enter(lw_guard *g);

/* Release: stop renewal, compare-and-delete our token, wake a waiter (less
 * than hold_at_least_ms after acquisition: set the key's TTL to the rest of
 * it instead; the outermost guard's options apply to a re-entered key).
 * Returns and records in lw_last_error() LW_OK only when Redis confirmed the
 * key still held our token as the section ended (a release sent again after
 * its reply was cut off: found our token, or the receipt of a hand-off);
 * LW_ELOST when it did not (lost, removed, or no answer: the key then ends
 * by its TTL).  A re-entered guard's leave reports what is known then: the
 * outermost one's answers for the whole section. */
LW_API int lw_guard_leave(lw_guard *g);

/* Enter n guards (initialised, keys appended) as one lock: in the order of
 * their full Redis keys, so that calls taking the same keys in any order
 * cannot deadlock, within one wait (the shortest of their wait_ms), all or
 * none.  g is sorted into the order entered: pass it as it is to
 * lw_guard_leave_all().  A key given twice is re-entered, not locked twice.
 * On failure every guard is finished (those taken were given back) and the
 * code is returned and recorded in lw_last_error().  n: 1 to 64. */
LW_API int lw_guard_enter_all(lw_guard **g, int n);

/* Leave guards entered by lw_guard_enter_all(), in reverse order.  LW_OK, or
 * the first other code a leave returned (LW_ELOST), also in lw_last_error(). */
LW_API int lw_guard_leave_all(lw_guard **g, int n);

/* Fence of the lock this thread holds on key (as given to the guard, without
 * the prefix): with several locks, each one's; 0 if it holds none. */
LW_API uint64_t lw_fence_of(const void *key, size_t keylen);

/* Drop a guard that was initialised but will not be entered (frees a heap
 * key).  Safe after a failed lw_guard_enter(). */
LW_API void lw_guard_discard(lw_guard *g);

/* End a guard however its scope ends: leave it if it is still entered
 * (guards entered after it and still entered, those of the same
 * lw_guard_enter_all(), first), discard it if it was initialised and never
 * entered, nothing once it is left or finished.  For
 * __attribute__((__cleanup__(lw_guard_cleanup))) on a guard, as the woven
 * wrapper declares its own: an exception thrown by C++ code that the
 * section calls then releases the lock at once on its way to the caller,
 * in a C file compiled with -fexceptions (lockweave-gen --launch adds it to
 * the files it weaves), and lw_last_error() says what the leave said: LW_OK
 * when the lock was held until then.  Every return path must find the guard
 * initialised. */
LW_API void lw_guard_cleanup(lw_guard *g);

/* For the woven wrapper: record a status in lw_last_error() (skip_if).  */
LW_API void lw_set_last_error(int code);

/*
 * Run once (REDIS_ONCE): a guard whose options set once_window_ms.  Its
 * lw_guard_enter() returns LW_OK when this call is to run the body (the
 * mark is its lease until lw_guard_leave()), LW_EDONE when a run within
 * the window already returned (its outcome read below), LW_ETIMEOUT when a
 * run still going did not end within wait_ms, or another error.
 */

/* After a body that succeeded, before lw_guard_leave(): store its result
 * (exactly: decimal integers, a double as %.17g) for the window's other
 * callers.  Leaving without one of these is a failed run: the mark is
 * removed and the next caller (a waiting one first) runs the body. */
LW_API void lw_once_done_i64(lw_guard *g, int64_t v);
LW_API void lw_once_done_u64(lw_guard *g, uint64_t v);
LW_API void lw_once_done_double(lw_guard *g, double v);
LW_API void lw_once_done_void(lw_guard *g); /* succeeded, no value kept */

/* After lw_guard_enter() returned LW_EDONE: the first run's result.  LW_OK
 * with *v set, or LW_EINVAL when it was stored as another type (or none). */
LW_API int lw_once_outcome_i64(const lw_guard *g, int64_t *v);
LW_API int lw_once_outcome_u64(const lw_guard *g, uint64_t *v);
LW_API int lw_once_outcome_double(const lw_guard *g, double *v);

/* Short form for hand-written code: init + key bytes + enter. */
LW_API int lw_lock(lw_guard *g, const char *key, size_t keylen,
                   const lw_lock_opts *opts);
LW_API int lw_lock_sized(lw_guard *g, const char *key, size_t keylen,
                         const lw_lock_opts *opts, size_t opts_size);
#define lw_lock(g, key, keylen, opts)                                          \
    lw_lock_sized((g), (key), (keylen), (opts), sizeof(lw_lock_opts))

/* ------------------------------------------------------------------------ */
/* Leases: a held lock as a value                                           */
/* ------------------------------------------------------------------------ */

/* A held lock (one key or several) that belongs to no thread or stack
 * frame: acquired in one thread, released in any other.  Opaque. */
typedef struct lw_lease lw_lease;

/* Take key (the bytes after the prefix, as lw_lock()) with opts, waiting up
 * to opts->wait_ms; the lease goes to *out, renewed by the watchdog until
 * lw_release().  Not re-entry: a thread that holds key already (through a
 * guard or a lease) waits for it like any other caller.  LW_OK, or the
 * code lw_guard_enter() would give (*out NULL); also in lw_last_error().
 * Thread-safe. */
LW_API int lw_acquire_sized(const void *key, size_t keylen,
                            const lw_lock_opts *opts, size_t opts_size,
                            lw_lease **out);
#define lw_acquire(key, keylen, opts, out)                                     \
    lw_acquire_sized((key), (keylen), (opts), sizeof(lw_lock_opts), (out))

/* Several keys as one lease, as lw_guard_enter_all() takes them: all or
 * none, in the order of their full Redis keys, within opts->wait_ms in
 * all; a key given twice is taken once.  keys[i] is keylens[i] bytes; n: 1
 * to 64. */
LW_API int lw_acquire_keys_sized(const void *const *keys, const size_t *keylens,
                                 int n, const lw_lock_opts *opts,
                                 size_t opts_size, lw_lease **out);
#define lw_acquire_keys(keys, keylens, n, opts, out)                           \
    lw_acquire_keys_sized((keys), (keylens), (n), (opts),                      \
                          sizeof(lw_lock_opts), (out))

/* Give every key of lease back and free it: LW_OK when each was ours in
 * Redis to the end, else LW_ELOST, as lw_guard_leave() says (LW_EFORKED in
 * a forked child, which leaves the parent's locks alone); also in
 * lw_last_error().  From any thread, once: a second release is a
 * programming error like a double free().  NULL: LW_EINVAL. */
LW_API int lw_release(lw_lease *lease);

/* The fencing token of lease's key (with several keys, the first in the
 * order they were taken: use lw_lease_fence_of() for each); 0 under
 * Redlock.  Thread-safe. */
LW_API uint64_t lw_lease_fence(const lw_lease *lease);
LW_API uint64_t lw_lease_fence_of(const lw_lease *lease, const void *key,
                                  size_t keylen);

/* As lw_still_held() for lease: 0 once a renewal of any of its keys failed,
 * its lease ran out by the local clock, max_renew was used up, or in a
 * forked child; else 1.  Thread-safe. */
LW_API int lw_lease_held(const lw_lease *lease);

/* ------------------------------------------------------------------------ */
/* Event loops: acquiring and releasing without blocking the loop           */
/* ------------------------------------------------------------------------ */

/* lockweave's state on one event loop (one thread's loop).  Opaque. */
typedef struct lw_loop lw_loop;

/*
 * What lockweave needs of an event loop: to watch one file descriptor for
 * reading and, whenever it is readable, call lw_loop_dispatch() on the
 * loop's thread.  <lockweave/uv.h> (libuv) and <lockweave/event.h>
 * (libevent) fill it in; any other loop (epoll, ae, glib) does in a few
 * lines.  Zero it, then set the fields.
 */
typedef struct lw_loop_hooks {
    void *loop; /* the event loop, passed back to watch() */
    /* Start watching fd for reading, calling lw_loop_dispatch(lw) when it
     * is readable (level-triggered: until it has been drained).  Returns a
     * handle for unwatch(), or NULL when it cannot. */
    void *(*watch)(void *loop, int fd, lw_loop *lw);
    /* Stop watching (handle from watch()); lw_loop_free() calls it once. */
    void (*unwatch)(void *handle);
} lw_loop_hooks;

/* lockweave's state on the loop hooks describes (copied).  Requests run
 * on a few threads of its own, which never call back into the loop but
 * through the watched descriptor: nothing blocks the loop's thread.  NULL
 * when out of memory or when hooks cannot watch.  Call on the loop's
 * thread. */
LW_API lw_loop *lw_loop_new_sized(const lw_loop_hooks *hooks, size_t size);
#define lw_loop_new(hooks) lw_loop_new_sized((hooks), sizeof(lw_loop_hooks))

/* For the watcher: run the callbacks of the requests that have finished.
 * On the loop's thread. */
LW_API void lw_loop_dispatch(lw_loop *loop);

/* A request's end: lease is the lock (status LW_OK; NULL otherwise), to
 * be released later with lw_release_async() on its loop or lw_release()
 * from any thread; status as lw_acquire() gives it, or LW_ECANCELED. */
typedef void (*lw_acquired_fn)(lw_lease *lease, int status, void *ud);
typedef void (*lw_released_fn)(int status, void *ud);

/* Take key as lw_acquire() does, without blocking: returns at once.  LW_OK:
 * cb runs exactly once, later, on the loop's thread; any other code (bad
 * arguments: LW_EINVAL; a forked child: LW_EFORKED; out of memory): cb
 * never runs.  Two requests for one key exclude each other, as two
 * callers do.  On the loop's thread. */
LW_API int lw_acquire_async_sized(lw_loop *loop, const void *key, size_t keylen,
                                  const lw_lock_opts *opts, size_t opts_size,
                                  lw_acquired_fn cb, void *ud);
#define lw_acquire_async(loop, key, keylen, opts, cb, ud)                      \
    lw_acquire_async_sized((loop), (key), (keylen), (opts),                    \
                           sizeof(lw_lock_opts), (cb), (ud))

/* Several keys as one lease, as lw_acquire_keys() takes them. */
LW_API int lw_acquire_keys_async_sized(lw_loop *loop, const void *const *keys,
                                       const size_t *keylens, int n,
                                       const lw_lock_opts *opts,
                                       size_t opts_size, lw_acquired_fn cb,
                                       void *ud);
#define lw_acquire_keys_async(loop, keys, keylens, n, opts, cb, ud)            \
    lw_acquire_keys_async_sized((loop), (keys), (keylens), (n), (opts),        \
                                sizeof(lw_lock_opts), (cb), (ud))

/* Give lease (from lw_acquire_async() on this loop) back without blocking;
 * cb (may be NULL) runs later on the loop's thread with what lw_release()
 * would return.  LW_OK, or LW_EINVAL (cb never runs).  On the loop's
 * thread; the lease is gone once called. */
LW_API int lw_release_async(lw_lease *lease, lw_released_fn cb, void *ud);

/* End every pending request started on loop with ud: each callback runs
 * once, before this returns, with LW_ECANCELED; a lock one of them had
 * already won is given back (and a release still gives its lease back).
 * Returns how many (not counting those a callback's lw_loop_free() ended).
 * On the loop's thread. */
LW_API int lw_cancel_async(lw_loop *loop, void *ud);

/* End every pending request as lw_cancel_async() does, give back the
 * leases loop handed out that were not released (waiting for those
 * releases), stop watching, and free loop: no callback runs after it
 * returns.  A lw_release() on another thread of one of loop's leases
 * must end before this call or not be made (a second release).  On the
 * loop's thread, also from a callback; the callbacks it runs may not
 * start requests on loop (LW_EINVAL). */
LW_API void lw_loop_free(lw_loop *loop);

/* For the wrapper of a woven `loop =` function: take the keys guards
 * g[0..n) were given (lw_guard_init(), lw_guard_key_*(): each key with its
 * own options) as one lease on loop, as lw_acquire_keys_async() does;
 * every guard is finished, whatever it returns. */
LW_API int lw_acquire_guards_async(lw_loop *loop, lw_guard **g, int n,
                                   lw_acquired_fn cb, void *ud);

/* For the same wrapper, around the body it runs in the callback: begin
 * makes lease the body's (lw_fence(), lw_still_held(), lw_take_lease(),
 * and a guard of one of its keys is re-entry); end returns lease unless
 * the body took it (then NULL).  On the loop's thread. */
LW_API void lw_loop_body_begin(lw_lease *lease);
LW_API lw_lease *lw_loop_body_end(void);

/* Inside a woven `loop =` body: its lease, which is then the body's to
 * release (lw_release_async() on its loop, lw_release() from any thread)
 * instead of released when the body returns; NULL outside such a body and
 * on a second call. */
LW_API lw_lease *lw_take_lease(void);

/* Release held locks in Redis now and stop the runtime's threads (a
 * service's exit path, tests, leak checkers).  Guards still entered read as
 * lost: leaving one (releasing a lease) is LW_ELOST and changes nothing in
 * Redis.  Other
 * threads' waits end at once: lw_guard_enter() returns LW_ESHUTDOWN (the
 * waiter left its queue), as it does when called while lw_shutdown() runs;
 * releases in progress finish first.  The next call starts the runtime
 * again. */
LW_API void lw_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* LOCKWEAVE_H */

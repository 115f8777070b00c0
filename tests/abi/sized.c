/*
 * The sized entry points, given structs shorter and longer than this
 * library's (as programs built against older and newer headers pass them),
 * and the functions of the macros' own names, reached past the macros.
 */
#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "redis_harness.h"

#define FILL_BYTE 0x5A
#define EXTRA     32

/* Where each struct ends in 0.1.0: the functions of the macros' names read
 * and write that much. */
#define STATS_0_1_0  (offsetof(lw_stats, handed_locally) + sizeof(uint64_t))
#define CONFIG_0_1_0 (offsetof(lw_config, tls_insecure) + sizeof(int))

_Static_assert(sizeof(lw_guard) == 512, "lw_guard is 512 bytes");

/* A struct and the bytes after it, as one object. */
#define WITH_TAIL(type)                                                        \
    union {                                                                    \
        type v;                                                                \
        unsigned char b[sizeof(type) + 2 * EXTRA];                             \
    }

static void check_bytes(const unsigned char *p, size_t from, size_t to,
                        unsigned char want, int line)
{
    for (size_t i = from; i < to; i++)
        CHECK_MSG(p[i] == want, "line %d: byte %zu is 0x%02x, want 0x%02x",
                  line, i, p[i], want);
}

static int exists(rh_server *s, const char *key)
{
    return (int)rh_cmd_int(s, "EXISTS %s", key);
}

static void stats(void)
{
    WITH_TAIL(lw_stats) a;
    WITH_TAIL(lw_stats) b;
    void (*get)(lw_stats *) = &lw_stats_get;

    /* An older program's shorter struct: only its bytes are written. */
    memset(&a, FILL_BYTE, sizeof a);
    lw_stats_get_sized(&a.v, 2 * sizeof(uint64_t));
    check_bytes(a.b, 2 * sizeof(uint64_t), sizeof a.b, FILL_BYTE, __LINE__);

    /* A newer program's longer struct: counters this library lacks are 0,
     * nothing past the struct is written. */
    memset(&a, FILL_BYTE, sizeof a);
    lw_stats_get_sized(&a.v, sizeof(lw_stats) + EXTRA);
    check_bytes(a.b, sizeof(lw_stats), sizeof(lw_stats) + EXTRA, 0, __LINE__);
    check_bytes(a.b, sizeof(lw_stats) + EXTRA, sizeof a.b, FILL_BYTE, __LINE__);

    /* The macro and the function of its name agree on the 0.1.0 counters
     * (no lock is held, so none moves in between); the function writes no
     * more. */
    memset(&a, FILL_BYTE, sizeof a);
    lw_stats_get(&a.v);
    check_bytes(a.b, sizeof(lw_stats), sizeof a.b, FILL_BYTE, __LINE__);
    memset(&b, FILL_BYTE, sizeof b);
    (lw_stats_get)(&b.v);
    CHECK(memcmp(&a.v, &b.v, STATS_0_1_0) == 0);
    check_bytes(b.b, STATS_0_1_0, sizeof b.b, FILL_BYTE, __LINE__);
    memset(&b, FILL_BYTE, sizeof b);
    get(&b.v);
    CHECK(memcmp(&a.v, &b.v, STATS_0_1_0) == 0);
    check_bytes(b.b, STATS_0_1_0, sizeof b.b, FILL_BYTE, __LINE__);
}

static void config(rh_server *s)
{
    WITH_TAIL(lw_config) c;
    lw_guard g;
    lw_lock_opts o = {.expire_ms = 5000, .wait_ms = 1000, .max_renew = -1};

    /* init zeroes what the program has, newer fields too, and no more. */
    memset(&c, FILL_BYTE, sizeof c);
    lw_config_init_sized(&c.v, sizeof(lw_config) + EXTRA);
    check_bytes(c.b, 0, sizeof(lw_config) + EXTRA, 0, __LINE__);
    check_bytes(c.b, sizeof(lw_config) + EXTRA, sizeof c.b, FILL_BYTE,
                __LINE__);

    /* A newer program's fields, zero: their defaults. */
    c.v.redis_url = s->url;
    c.v.key_prefix = "new:";
    CHECK_RC(lw_configure_sized(&c.v, sizeof(lw_config) + EXTRA), LW_OK);
    CHECK_RC(lw_lock(&g, "k", 1, &o), LW_OK);
    CHECK_EQ(exists(s, "new:k"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* Set: a newer version's option this library cannot honour.  The
     * configuration in place stays. */
    c.b[sizeof(lw_config) + EXTRA - 1] = 1;
    c.v.key_prefix = "refused:";
    CHECK_RC(lw_configure_sized(&c.v, sizeof(lw_config) + EXTRA), LW_ECONFIG);
    CHECK_RC(lw_lock(&g, "k", 1, &o), LW_OK);
    CHECK_EQ(exists(s, "new:k"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* An older program's struct, ending before key_prefix: what lies
     * beyond is not read, and the prefix is the default. */
    memset(&c, FILL_BYTE, sizeof c);
    c.v.redis_url = s->url;
    CHECK_RC(lw_configure_sized(&c.v, offsetof(lw_config, key_prefix)), LW_OK);
    CHECK_RC(lw_lock(&g, "k", 1, &o), LW_OK);
    CHECK_EQ(exists(s, "lock:k"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* The functions of the macros' names. */
    memset(&c, FILL_BYTE, sizeof c);
    (lw_config_init)(&c.v);
    check_bytes(c.b, 0, CONFIG_0_1_0, 0, __LINE__);
    check_bytes(c.b, CONFIG_0_1_0, sizeof c.b, FILL_BYTE, __LINE__);
    /* What lies past the 0.1.0 struct is not read either. */
    c.v.redis_url = s->url;
    c.v.key_prefix = "old:";
    CHECK_RC((lw_configure)(&c.v), LW_OK);
    CHECK_RC(lw_lock(&g, "k", 1, &o), LW_OK);
    CHECK_EQ(exists(s, "old:k"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void opts(rh_server *s)
{
    WITH_TAIL(lw_lock_opts) o;
    lw_guard g;
    int (*lock)(lw_guard *, const char *, size_t, const lw_lock_opts *) =
        &lw_lock;

    /* An older program's options, ending before hold_at_least_ms: what lies
     * beyond (a hold longer than the lease, too many permits: both refused
     * if read) is not read. */
    memset(&o, 0, sizeof o);
    o.v.expire_ms = 5000;
    o.v.wait_ms = 1000;
    o.v.max_renew = -1;
    o.v.hold_at_least_ms = 60000;
    o.v.permits = LW_PERMITS_MAX + 1;
    lw_guard_init_sized(&g, &o.v, offsetof(lw_lock_opts, hold_at_least_ms));
    lw_guard_key_str(&g, "short");
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(exists(s, "old:short"), 0);
    CHECK_RC(lw_lock_sized(&g, "short", 5, &o.v,
                           offsetof(lw_lock_opts, hold_at_least_ms)),
             LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    o.v.hold_at_least_ms = 0;
    o.v.permits = 0;

    /* A newer program's options, zero: off. */
    CHECK_RC(lw_lock_sized(&g, "long", 4, &o.v, sizeof(lw_lock_opts) + EXTRA),
             LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    lw_guard_init_sized(&g, &o.v, sizeof(lw_lock_opts) + EXTRA);
    lw_guard_key_str(&g, "long");
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* Set: refused, and nothing reaches Redis. */
    o.b[sizeof(lw_lock_opts)] = 1;
    CHECK_RC(lw_lock_sized(&g, "long", 4, &o.v, sizeof(lw_lock_opts) + EXTRA),
             LW_EINVAL);
    CHECK_RC(lw_last_error(), LW_EINVAL);
    lw_guard_init_sized(&g, &o.v, sizeof(lw_lock_opts) + EXTRA);
    lw_guard_key_str(&g, "long");
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
    CHECK_EQ(exists(s, "old:long"), 0);
    o.b[sizeof(lw_lock_opts)] = 0;

    /* The macros with NULL options, and the functions of their names. */
    lw_guard_init(&g, NULL);
    lw_guard_key_str(&g, "k");
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
    CHECK_RC(lw_lock(&g, "k", 1, NULL), LW_EINVAL);
    (lw_guard_init)(&g, &o.v);
    lw_guard_key_str(&g, "fn");
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    CHECK_EQ(exists(s, "old:fn"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_RC((lw_lock)(&g, "fn", 2, &o.v), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_RC(lock(&g, "fn", 2, &o.v), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

int main(void)
{
    rh_server s;

    CHECK(rh_start(&s, NULL) == 0);
    stats();
    config(&s);
    opts(&s);
    lw_shutdown();
    rh_stop(&s);
    puts("ok");
    return 0;
}

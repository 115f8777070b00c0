/*
 * A program built against the 0.1.0 header (lockweave-0.1.0.h: that
 * version's <lockweave.h>, verbatim), linked with this library.  Every
 * function that takes an lw_config, lw_stats, lw_lock_opts or lw_guard must
 * read and write exactly that version's structs, whatever the library's
 * own have become: each struct here is followed by canary bytes (a write
 * past it changes them), and a second copy of each ends where an unmapped
 * page begins (a read or write past it faults).
 */
#include "lockweave-0.1.0.h" /* first: its include guard keeps any newer
                                <lockweave.h> out of this file */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "redis_harness.h"

#if defined(lw_stats_get) || LW_VERSION_NUM != 100
#error "lockweave-0.1.0.h is not the 0.1.0 header"
#endif

#define CANARY_LEN  64
#define CANARY_BYTE 0xA5
#define FILL_BYTE   0x5A

/* A struct with canary bytes right after it: a char array needs no padding
 * in front of it. */
#define FENCED(type)                                                           \
    struct {                                                                   \
        type v;                                                                \
        unsigned char canary[CANARY_LEN];                                      \
    }

#define FENCE_SET(f)                                                           \
    fence_set_((unsigned char *)&(f).v, sizeof(f).v, (f).canary)
#define FENCE_CHECK(f) fence_check_((f).canary, #f, __LINE__)

static void fence_set_(unsigned char *v, size_t size, unsigned char *canary)
{
    CHECK(v + size == canary);
    memset(canary, CANARY_BYTE, CANARY_LEN);
}

static void fence_check_(const unsigned char *canary, const char *what,
                         int line)
{
    for (size_t i = 0; i < CANARY_LEN; i++)
        CHECK_MSG(canary[i] == CANARY_BYTE,
                  "line %d: byte %zu past %s was written (0x%02x)", line, i,
                  what, canary[i]);
}

/* size bytes that end where an unmapped page begins. */
static void *at_page_end(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(p != MAP_FAILED);
    CHECK(mprotect(p + page, page, PROT_NONE) == 0);
    memset(p + page - size, FILL_BYTE, size);
    return p + page - size;
}

static int exists(rh_server *s, const char *key)
{
    return (int)rh_cmd_int(s, "EXISTS %s", key);
}

static void check_config_default(const lw_config *c)
{
    CHECK(c->redis_url == NULL && c->key_prefix == NULL);
    CHECK(c->connect_timeout_ms == 0 && c->command_timeout_ms == 0);
    CHECK(c->wait_replicas == 0 && c->wait_timeout_ms == 0);
    CHECK(c->tls_ca_file == NULL && c->tls_ca_dir == NULL);
    CHECK(c->tls_cert_file == NULL && c->tls_key_file == NULL);
    CHECK(c->tls_server_name == NULL && c->tls_insecure == 0);
}

/* lw_config_init() and lw_configure(); leaves lockweave on s, with the key
 * prefix "abi:" (which shows lw_configure() read it). */
static void config(rh_server *s)
{
    FENCED(lw_config) c;
    lw_config *e = at_page_end(sizeof *e);

    memset(&c.v, FILL_BYTE, sizeof c.v);
    FENCE_SET(c);
    lw_config_init(&c.v);
    check_config_default(&c.v);
    FENCE_CHECK(c);
    lw_config_init(e);
    check_config_default(e);

    /* TLS fields, past the middle of the struct, are read. */
    c.v.redis_url = "rediss://127.0.0.1:1";
    c.v.tls_ca_file = "/nonexistent/ca.pem";
    CHECK_RC(lw_configure(&c.v), LW_ECONFIG);
    c.v.tls_ca_file = NULL;
    c.v.redis_url = "nosuchscheme://127.0.0.1";
    CHECK_RC(lw_configure(&c.v), LW_ECONFIG);
    FENCE_CHECK(c);

    c.v.redis_url = s->url;
    c.v.key_prefix = "abi:";
    c.v.connect_timeout_ms = 1000;
    c.v.command_timeout_ms = 2000;
    c.v.tls_insecure = 1; /* the last field; no effect on redis:// */
    *e = c.v;
    CHECK_RC(lw_configure(e), LW_OK);
    CHECK_RC(lw_configure(&c.v), LW_OK);
    FENCE_CHECK(c);
}

static void opts_set(lw_lock_opts *o, uint32_t expire_ms)
{
    memset(o, 0, sizeof *o);
    o->expire_ms = expire_ms;
    o->wait_ms = 1000;
    o->max_renew = -1;
}

/* One guard through every key function, then the last fields of
 * lw_lock_opts (hold_at_least_ms, permits, flags) taking effect. */
static void guards(rh_server *s, int *acquired)
{
    FENCED(lw_lock_opts) o;
    FENCED(lw_guard) g;
    FENCED(lw_stats) st;
    lw_lock_opts *po = at_page_end(sizeof *po);
    lw_guard *pg = at_page_end(sizeof *pg);
    long long pttl;

    memset(&g.v, FILL_BYTE, sizeof g.v);
    FENCE_SET(g);
    opts_set(&o.v, 5000);
    FENCE_SET(o);
    FENCE_SET(st);
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "user:");
    lw_guard_key_i64(&g.v, -42);
    lw_guard_key_u64(&g.v, 7);
    lw_guard_key_bytes(&g.v, "!", 1);
    CHECK_RC(lw_guard_enter(&g.v), LW_OK);
    ++*acquired;
    CHECK(lw_fence() > 0);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(exists(s, "abi:user:-427!"), 1);
    lw_stats_get(&st.v);
    CHECK_EQ(st.v.held, 1);
    FENCE_CHECK(st);
    CHECK_RC(lw_guard_leave(&g.v), LW_OK);
    CHECK_RC(lw_last_error(), LW_OK);
    CHECK_EQ(exists(s, "abi:user:-427!"), 0);
    FENCE_CHECK(o);
    FENCE_CHECK(g);

    /* hold_at_least_ms: the key outlives the section. */
    o.v.hold_at_least_ms = 400;
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "hold");
    CHECK_RC(lw_guard_enter(&g.v), LW_OK);
    ++*acquired;
    CHECK_RC(lw_guard_leave(&g.v), LW_OK);
    /* The rest of the hold (a little more, rounded up), not the lease. */
    pttl = rh_cmd_int(s, "PTTL abi:hold");
    CHECK_RANGE(pttl, 1, 1000);
    o.v.hold_at_least_ms = 6000; /* more than the lease */
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "hold2");
    CHECK_RC(lw_guard_enter(&g.v), LW_EINVAL);
    o.v.hold_at_least_ms = 0;

    /* permits, the last field: too many is refused, two make a
     * semaphore. */
    o.v.permits = LW_PERMITS_MAX + 1;
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "sem");
    CHECK_RC(lw_guard_enter(&g.v), LW_EINVAL);
    o.v.permits = 2;
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "sem");
    CHECK_RC(lw_guard_enter(&g.v), LW_OK);
    ++*acquired;
    CHECK_RC(lw_guard_leave(&g.v), LW_OK);
    o.v.permits = 0;

    /* flags: a read lock; unknown flags are refused. */
    o.v.flags = LW_LOCK_READ;
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "doc");
    CHECK_RC(lw_guard_enter(&g.v), LW_OK);
    ++*acquired;
    CHECK_RC(lw_guard_leave(&g.v), LW_OK);
    o.v.flags = 0x80;
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "doc");
    CHECK_RC(lw_guard_enter(&g.v), LW_EINVAL);
    o.v.flags = 0;

    /* Initialised, never entered. */
    lw_guard_init(&g.v, &o.v);
    lw_guard_key_str(&g.v, "dropped");
    lw_guard_discard(&g.v);
    FENCE_CHECK(o);
    FENCE_CHECK(g);

    /* Against the unmapped page. */
    opts_set(po, 5000);
    lw_guard_init(pg, po);
    lw_guard_key_str(pg, "edge");
    CHECK_RC(lw_guard_enter(pg), LW_OK);
    ++*acquired;
    CHECK_EQ(exists(s, "abi:edge"), 1);
    CHECK_RC(lw_guard_leave(pg), LW_OK);
}

/* lw_lock(), the short form. */
static void lock_short(rh_server *s, int *acquired)
{
    FENCED(lw_lock_opts) o;
    FENCED(lw_guard) g;
    lw_lock_opts *po = at_page_end(sizeof *po);
    lw_guard *pg = at_page_end(sizeof *pg);

    opts_set(&o.v, 5000);
    FENCE_SET(o);
    FENCE_SET(g);
    CHECK_RC(lw_lock(&g.v, "short", 5, &o.v), LW_OK);
    ++*acquired;
    CHECK_EQ(exists(s, "abi:short"), 1);
    CHECK_RC(lw_guard_leave(&g.v), LW_OK);
    CHECK_RC(lw_lock(&g.v, "short", 5, NULL), LW_EINVAL);
    o.v.permits = LW_PERMITS_MAX + 1;
    CHECK_RC(lw_lock(&g.v, "short", 5, &o.v), LW_EINVAL);
    FENCE_CHECK(o);
    FENCE_CHECK(g);

    opts_set(po, 5000);
    po->hold_at_least_ms = 300;
    CHECK_RC(lw_lock(pg, "short-edge", 10, po), LW_OK);
    ++*acquired;
    CHECK_RC(lw_guard_leave(pg), LW_OK);
    CHECK_RANGE(rh_cmd_int(s, "PTTL abi:short-edge"), 1, 1000);
}

/* lw_guard_enter_all() and lw_guard_leave_all(): a key given twice is
 * re-entered. */
static void several(rh_server *s, int *acquired)
{
    FENCED(lw_lock_opts) o;
    FENCED(lw_guard) g1;
    FENCED(lw_guard) g2;
    FENCED(lw_guard) g3;
    lw_guard *pg = at_page_end(sizeof *pg);
    lw_guard *gs[4] = {&g1.v, &g2.v, pg, &g3.v};

    opts_set(&o.v, 5000);
    FENCE_SET(o);
    FENCE_SET(g1);
    FENCE_SET(g2);
    FENCE_SET(g3);
    lw_guard_init(&g1.v, &o.v);
    lw_guard_key_str(&g1.v, "acct:b");
    lw_guard_init(&g2.v, &o.v);
    lw_guard_key_str(&g2.v, "acct:a");
    lw_guard_init(pg, &o.v);
    lw_guard_key_str(pg, "acct:c");
    lw_guard_init(&g3.v, &o.v);
    lw_guard_key_str(&g3.v, "acct:b");
    CHECK_RC(lw_guard_enter_all(gs, 4), LW_OK);
    *acquired += 3;
    CHECK_EQ(exists(s, "abi:acct:a"), 1);
    CHECK_EQ(exists(s, "abi:acct:b"), 1);
    CHECK_EQ(exists(s, "abi:acct:c"), 1);
    CHECK_RC(lw_guard_leave_all(gs, 4), LW_OK);
    CHECK_EQ(exists(s, "abi:acct:a"), 0);
    CHECK_EQ(exists(s, "abi:acct:b"), 0);
    CHECK_EQ(exists(s, "abi:acct:c"), 0);
    FENCE_CHECK(o);
    FENCE_CHECK(g1);
    FENCE_CHECK(g2);
    FENCE_CHECK(g3);
}

static void check_stats_written(const lw_stats *st)
{
    const unsigned char *p = (const unsigned char *)st;
    size_t fill = 0;

    for (size_t i = 0; i < sizeof *st; i++)
        fill += p[i] == FILL_BYTE;
    CHECK_MSG(fill < sizeof *st / 2, "lw_stats_get() left %zu bytes unwritten",
              fill);
}

int main(void)
{
    rh_server s;
    FENCED(lw_stats) before;
    FENCED(lw_stats) after;
    lw_stats *edge = at_page_end(sizeof *edge);
    int acquired = 0;

    CHECK(rh_start(&s, NULL) == 0);
    memset(&before.v, FILL_BYTE, sizeof before.v);
    memset(&after.v, FILL_BYTE, sizeof after.v);
    FENCE_SET(before);
    FENCE_SET(after);
    lw_stats_get(&before.v);
    check_stats_written(&before.v);
    FENCE_CHECK(before);

    config(&s);
    guards(&s, &acquired);
    lock_short(&s, &acquired);
    several(&s, &acquired);

    lw_stats_get(&after.v);
    lw_stats_get(edge);
    check_stats_written(&after.v);
    FENCE_CHECK(after);
    CHECK_EQ(after.v.acquired - before.v.acquired, acquired);
    CHECK_EQ(after.v.reentered - before.v.reentered, 1);
    CHECK_EQ(after.v.held, 0);
    CHECK_EQ(after.v.timed_out, 0);
    CHECK_EQ(after.v.lost, 0);
    CHECK_EQ(after.v.handed_locally, 0); /* the last field */
    CHECK(memcmp(edge, &after.v, sizeof *edge) == 0);

    lw_shutdown();
    rh_stop(&s);
    puts("ok");
    return 0;
}

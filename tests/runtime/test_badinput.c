/* Bad keys and misused guards, against a live server: every case fails with
 * LW_EINVAL (lw_last_error() agrees, lw_strerror() names it), sends nothing
 * to Redis, leaves no key behind and no heap key (ASan), and the next good
 * call works.  Also binary keys with NULs and braces (hash tags) as the
 * exact, independent locks they name.  test_keys.c covers the happy paths of
 * long and binary keys; this file covers the edges and the refusals. */
#include "util.h"

#include <stdlib.h>
#include <string.h>

static rh_server srv;
static int failures; /* checks that let the rest run first */

/* Redis's own count of commands processed: a refused call sends none. */
static long long commands_processed(void)
{
    redisReply *r = rh_cmd(&srv, "INFO stats");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    const char *p = strstr(r->str, "total_commands_processed:");
    CHECK(p != NULL);
    long long n = atoll(p + strlen("total_commands_processed:"));
    freeReplyObject(r);
    return n;
}

static void expect_einval_text(void)
{
    CHECK_RC(lw_last_error(), LW_EINVAL);
    const char *t = lw_strerror(LW_EINVAL);
    CHECK(t != NULL && t[0] != '\0');
    CHECK_MSG(strcmp(t, lw_strerror(12345)) != 0, "EINVAL has no own text");
    CHECK_EQ(lw_still_held(), 0);
    CHECK_EQ(lw_fence(), 0);
}

/* One refused lw_lock(): EINVAL, no command reached Redis (the harness's
 * INFO itself counts one), nothing held. */
static void refused_lock(const char *what, const char *key, size_t n,
                         const lw_lock_opts *o)
{
    long long before = commands_processed();
    lw_stats st0, st1;
    lw_stats_get(&st0);
    lw_guard g;
    int rc = lw_lock(&g, key, n, o);
    printf("%-32s -> %s\n", what, lw_strerror(rc));
    CHECK_MSG(rc == LW_EINVAL, "%s: %s, expected LW_EINVAL", what,
              lw_strerror(rc));
    expect_einval_text();
    lw_guard_discard(&g); /* allowed, and a no-op, after a failed enter */
    CHECK_EQ(commands_processed(), before + 1);
    lw_stats_get(&st1);
    CHECK_EQ(st1.acquired, st0.acquired);
    CHECK_EQ(st1.held, 0);
}

static void null_and_empty(void)
{
    lw_lock_opts o = lock_opts(5000, 0, -1);
    refused_lock("NULL key, length 0", NULL, 0, &o);
    refused_lock("NULL key, length 5", NULL, 5, &o);
    refused_lock("empty key", "", 0, &o);
    refused_lock("non-empty pointer, length 0", "abc", 0, &o);
    /* NULL options: there is no lease to ask for. */
    refused_lock("NULL options", "k", 1, NULL);
    lw_lock_opts zero = lock_opts(0, 1000, -1);
    refused_lock("expire 0", "k", 1, &zero);
    CHECK_EQ(rh_cmd_int(&srv, "DBSIZE"), 0);
}

/* The guard keeps prefix + key within LW_KEY_MAX (64 KiB): the largest key
 * that fits works, one byte more and 1 MiB are refused, not truncated. */
static void sizes(void)
{
    const size_t max = 64 * 1024, prefix = strlen("lock:");
    size_t big = 1024 * 1024 + 1;
    char *k = malloc(big);
    CHECK(k != NULL);
    memset(k, 'm', big);
    lw_lock_opts o = lock_opts(5000, 0, -1);

    lw_guard g;
    CHECK_RC(lw_lock(&g, k, max - prefix, &o), LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "STRLEN lock:%b", k, max - prefix) > 0, 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    refused_lock("64 KiB + 1 with the prefix", k, max - prefix + 1, &o);
    refused_lock("exactly 64 KiB of key", k, max, &o);
    refused_lock("1 MiB key", k, 1024 * 1024, &o);
    refused_lock("1 MiB + 1 key", k, big, &o);

    /* Built in pieces: the append that crosses the limit poisons the guard,
     * later small appends do not repair it, and leave is refused too. */
    lw_guard_init(&g, &o);
    for (int i = 0; i < 70; i++)
        lw_guard_key_bytes(&g, k, 1000);
    lw_guard_key_str(&g, "x");
    int rc = lw_guard_enter(&g);
    printf("%-32s -> %s\n", "70 001 bytes in 1000-byte pieces",
           lw_strerror(rc));
    if (rc == LW_OK) {
        /* Reported at the end, after the other cases have run. */
        fprintf(stderr, "a key of 70 001 bytes built in pieces was accepted "
                        "(LW_KEY_MAX is 64 KiB)\n");
        failures++;
        lw_guard_leave(&g);
    } else {
        CHECK_RC(rc, LW_EINVAL);
        expect_einval_text();
        CHECK_RC(lw_guard_leave(&g), LW_EINVAL);
    }
    lw_guard_discard(&g);

    /* A poisoned guard that is discarded without entering frees its heap
     * key (ASan's leak check). */
    lw_guard_init(&g, &o);
    lw_guard_key_bytes(&g, k, 60000);
    lw_guard_key_bytes(&g, k, 60000);
    lw_guard_discard(&g);
    free(k);
    /* Only fence counters remain, never a lock key. */
    redisReply *r = rh_cmd(&srv, "KEYS lock:*");
    CHECK(r && r->type == REDIS_REPLY_ARRAY);
    CHECK_EQ(r->elements, 0);
    freeReplyObject(r);
}

/* Misused life cycles: each is refused with EINVAL and hurts nothing. */
static void misuse(void)
{
    lw_lock_opts o = lock_opts(5000, 0, -1);
    lw_guard g;

    /* Leave of a guard never entered. */
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "never");
    CHECK_RC(lw_guard_leave(&g), LW_EINVAL);
    lw_guard_discard(&g);

    /* Leave twice. */
    CHECK_RC(lock_str(&g, "twice", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_EINVAL);
    CHECK_EQ(lock_exists(&srv, "twice"), 0);

    /* Enter again after a failed enter (the guard is finished). */
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, NULL);
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
    lw_guard_discard(&g);
    lw_guard_discard(&g);

    /* NULL bytes with a length poison the key; NULL with 0 appends
     * nothing (like an empty string). */
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "nb");
    lw_guard_key_bytes(&g, NULL, 0);
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "nb"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "nb");
    lw_guard_key_bytes(&g, NULL, 3);
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
    CHECK_EQ(lock_exists(&srv, "nb"), 0);

    /* After all that, this thread holds nothing and locks normally. */
    CHECK_EQ(lw_still_held(), 0);
    CHECK_RC(lock_str(&g, "after-misuse", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

/* EXISTS on exact bytes. */
static long long exists_bytes(const void *key, size_t n)
{
    const char *argv[2] = {"EXISTS", key};
    size_t len[2] = {6, n};
    redisReply *r = rh_cmd_argv(&srv, 2, argv, len);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

struct bkey {
    const char *b;
    size_t n;
};
#define BK(lit)                                                                \
    {                                                                          \
        lit, sizeof lit - 1                                                    \
    }

/* Hold every key at once: distinct byte strings are distinct locks, whatever
 * NULs and braces they hold; each lands in Redis as exactly "lock:" + key. */
static void binary_and_braces(void)
{
    static const struct bkey keys[] = {
        BK("\0"),        BK("\0\0"),
        BK("a\0"),       BK("a\0b"),
        BK("a\0c"),      BK("{"),
        BK("}"),         BK("{}"),
        BK("}{"),        BK("{{}}"),
        BK("user:{42}"), BK("user:{42}x"),
        BK("user:{43}"), BK("x{\0}y"),
        BK("{\0"),       BK("\xff\xfe{7}"),
        BK("tag{a}{b}"), BK("tag{b}{a}"),
        BK("q:{}x{y}"),  BK("end}"),
        BK("lock:"),     BK("\r\n*1\r\n$4\r\nPING\r\n"),
    };
    enum { N = sizeof keys / sizeof keys[0] };
    lw_guard g[N];
    lw_lock_opts o = lock_opts(10000, 0, -1);
    for (int i = 0; i < N; i++) {
        int rc = lw_lock(&g[i], keys[i].b, keys[i].n, &o);
        CHECK_MSG(rc == LW_OK, "binary key #%d (%zu bytes): %s", i, keys[i].n,
                  lw_strerror(rc));
        CHECK(lw_fence() > 0);
        char full[64];
        memcpy(full, "lock:", 5);
        memcpy(full + 5, keys[i].b, keys[i].n);
        CHECK_MSG(exists_bytes(full, keys[i].n + 5) == 1,
                  "binary key #%d not in Redis as lock:<key>", i);
    }
    /* All held together: none was mistaken for a re-entry of another. */
    lw_stats st;
    lw_stats_get(&st);
    CHECK_EQ(st.held, N);
    for (int i = N - 1; i >= 0; i--)
        CHECK_RC(lw_guard_leave(&g[i]), LW_OK);
    for (int i = 0; i < N; i++) {
        char full[64];
        memcpy(full, "lock:", 5);
        memcpy(full + 5, keys[i].b, keys[i].n);
        CHECK_MSG(exists_bytes(full, keys[i].n + 5) == 0,
                  "binary key #%d still in Redis after leave", i);
    }
}

/* A lock's helper names start with '{' ("{1}lock:t{1}:q" for "t{1}",
 * docs/protocol.md), so none is the lock name of another user key.  Locking
 * "t{1}" and then "t{1}:q" — two different keys — must give two
 * independent locks. */
static void helper_names_are_not_lock_names(void)
{
    static const char *const suffixes[] = {":q", ":w:x", ":w:x:g", ":w:x:rel"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char base[32], other[48];
        snprintf(base, sizeof base, "hn%zu{1}", i);
        snprintf(other, sizeof other, "%s%s", base, suffixes[i]);
        lw_guard a, b;
        /* Both orders: the helper first, then the lock named like it, and
         * the reverse. */
        int rc1 = lock_str(&a, base, 5000, 0);
        if (rc1 == LW_OK)
            lw_guard_leave(&a);
        int rc2 = lock_str(&b, other, 5000, 0);
        if (rc2 == LW_OK)
            lw_guard_leave(&b);
        int rc3 = lock_str(&a, base, 5000, 0);
        if (rc3 == LW_OK)
            lw_guard_leave(&a);
        printf("\"%s\" then \"%s\" then \"%s\": %s, %s, %s\n", base, other,
               base, lw_strerror(rc1), lw_strerror(rc2), lw_strerror(rc3));
        if (rc1 != LW_OK || rc2 != LW_OK || rc3 != LW_OK) {
            fprintf(stderr,
                    "lock \"%s\" collides with a helper key of lock \"%s\"\n",
                    other, base);
            failures++;
        }
    }
}

/* Enter twice: the second enter is refused and must leave the first one
 * intact — still held, still renewed, released by one leave.  The key is
 * longer than the guard's inline buffer (a heap key) and the lease is
 * renewed meanwhile: a guard finished by mistake frees the key the watchdog
 * still renews (ASan: heap-use-after-free).  Last in main, its guard in
 * main's frame: when it goes wrong, the thread's guard stack is damaged. */
static void enter_twice(lw_guard *g)
{
    char key[LW_GUARD_INLINE_KEY + 72];
    memset(key, 't', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    CHECK_RC(lock_str(g, key, 600, 0), LW_OK);
    int rc = lw_guard_enter(g);
    CHECK_RC(rc, LW_EINVAL);
    sleep_ms(800); /* renewed at ~200, ~400, ~600 ms */
    int held = lock_exists(&srv, key), still = lw_still_held();
    rc = lw_guard_leave(g);
    int after = lock_exists(&srv, key);
    printf("after a refused second enter: held %d, lw_still_held %d, leave "
           "%s, key after leave %d\n",
           held, still, lw_strerror(rc), after);
    if (!held || !still || rc != LW_OK || after) {
        fprintf(stderr,
                "a refused second lw_guard_enter() broke the entered guard: "
                "lock key %s after 800 ms, lw_still_held() %d, leave "
                "returned %s, key %s after leave\n",
                held ? "held" : "expired", still, lw_strerror(rc),
                after ? "still there" : "gone");
        failures++;
    }
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    /* Connect (and load the scripts) first, so the counts below see only
     * what the refused calls send. */
    lw_guard g;
    CHECK_RC(lock_str(&g, "warm-up", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    freeReplyObject(rh_cmd(&srv, "FLUSHALL"));

    null_and_empty();
    sizes();
    misuse();
    binary_and_braces();
    helper_names_are_not_lock_names();
    lw_guard twice;
    enter_twice(&twice);
    CHECK_EQ(failures, 0);

    lw_shutdown();
    rh_stop(&srv);
    printf("badinput: ok\n");
    return 0;
}

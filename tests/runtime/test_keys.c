/* Key building: the exact bytes that reach Redis.  Long keys (past the
 * guard's inline buffer), binary keys, decimal parts, a NULL string, and a
 * configured prefix. */
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* EXISTS on exact bytes, binary-safe. */
static long long exists_bytes(rh_server *s, const void *key, size_t n)
{
    const char *argv[2] = {"EXISTS", key};
    size_t len[2] = {6, n};
    redisReply *r = rh_cmd_argv(s, 2, argv, len);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* Lock `key` given as raw bytes and check that exactly "lock:" + key exists
 * while held and is gone after. */
static void round_trip(rh_server *s, const char *key, size_t n)
{
    char *full = malloc(n + 5);
    CHECK(full != NULL);
    memcpy(full, "lock:", 5);
    memcpy(full + 5, key, n);

    lw_guard g;
    lw_lock_opts o = lock_opts(10000, 0, -1);
    CHECK_RC(lw_lock(&g, key, n, &o), LW_OK);
    CHECK_MSG(exists_bytes(s, full, n + 5) == 1,
              "key of %zu bytes not found in Redis", n);
    CHECK_EQ(rh_cmd_int(s, "DBSIZE") >= 1, 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(exists_bytes(s, full, n + 5), 0);
    free(full);
}

static void long_keys(rh_server *s)
{
    static const size_t sizes[] = {LW_GUARD_INLINE_KEY - 6,
                                   LW_GUARD_INLINE_KEY - 5,
                                   LW_GUARD_INLINE_KEY - 4,
                                   LW_GUARD_INLINE_KEY,
                                   LW_GUARD_INLINE_KEY + 1,
                                   200,
                                   5000,
                                   60000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char *k = malloc(n);
        CHECK(k != NULL);
        for (size_t j = 0; j < n; j++)
            k[j] = (char)('a' + (j * 7 + i) % 26);
        round_trip(s, k, n);
        free(k);
    }
}

/* Appended in pieces across the inline/heap boundary. */
static void long_key_in_pieces(rh_server *s)
{
    lw_guard g;
    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_guard_init(&g, &o);
    char want[1024] = "lock:";
    size_t wn = 5;
    for (int i = 0; i < 40; i++) {
        lw_guard_key_str(&g, "part");
        lw_guard_key_i64(&g, i);
        lw_guard_key_bytes(&g, ":", 1);
        wn += (size_t)snprintf(want + wn, sizeof want - wn, "part%d:", i);
    }
    CHECK(wn > LW_GUARD_INLINE_KEY);
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    CHECK_EQ(exists_bytes(s, want, wn), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(exists_bytes(s, want, wn), 0);
}

static void binary_keys(rh_server *s)
{
    static const char k1[] = {'a', '\0', 'b', '\r', '\n', ' ', '"', '\xff'};
    round_trip(s, k1, sizeof k1);
    /* Same prefix, different tail: must be different locks. */
    static const char k2[] = {'a', '\0', 'c'};
    round_trip(s, k2, sizeof k2);
    /* Looks like a command injection in an inline protocol: it is one key. */
    static const char k3[] = "x\r\nFLUSHALL\r\n";
    freeReplyObject(rh_cmd(s, "SET canary 1"));
    round_trip(s, k3, sizeof k3 - 1);
    CHECK_EQ(rh_cmd_int(s, "EXISTS canary"), 1);
}

static void numbers(rh_server *s)
{
    lw_guard g;
    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "n:");
    lw_guard_key_i64(&g, INT64_MIN);
    lw_guard_key_str(&g, ":");
    lw_guard_key_i64(&g, -1);
    lw_guard_key_str(&g, ":");
    lw_guard_key_i64(&g, 0);
    lw_guard_key_str(&g, ":");
    lw_guard_key_u64(&g, UINT64_MAX);
    lw_guard_key_str(&g, ":");
    lw_guard_key_i64(&g, 42);
    lw_guard_key_str(&g, ""); /* empty string: appends nothing, no error */
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    CHECK_EQ(lock_exists(s, "n:-9223372036854775808:-1:0:"
                            "18446744073709551615:42"),
             1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void null_string(rh_server *s)
{
    long long before = rh_cmd_int(s, "DBSIZE");
    lw_guard g;
    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "user:");
    lw_guard_key_str(&g, NULL);
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
    CHECK_RC(lw_last_error(), LW_EINVAL);
    CHECK_EQ(lw_still_held(), 0);
    lw_guard_discard(&g); /* allowed after a failed enter */
    CHECK_EQ(rh_cmd_int(s, "DBSIZE"), before);
    CHECK_EQ(lock_exists(s, "user:"), 0);

    /* Later appends do not repair it. */
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, NULL);
    lw_guard_key_str(&g, "more");
    CHECK_RC(lw_guard_enter(&g), LW_EINVAL);
}

static void discard_heap_key(void)
{
    /* Built past the inline size, never entered: discard frees it (valgrind
     * or ASan would see the leak otherwise). */
    char big[600];
    memset(big, 'k', sizeof big);
    lw_guard g;
    lw_lock_opts o = lock_opts(1000, 0, -1);
    lw_guard_init(&g, &o);
    lw_guard_key_bytes(&g, big, sizeof big);
    lw_guard_discard(&g);
}

static void custom_prefix(rh_server *s)
{
    lw_config cfg;
    lw_config_init(&cfg);
    cfg.redis_url = s->url;
    cfg.key_prefix = "app/locks/";
    CHECK_RC(lw_configure(&cfg), LW_OK);
    lw_guard g;
    CHECK_RC(lock_str(&g, "p1", 10000, 0), LW_OK);
    CHECK_EQ(rh_cmd_int(s, "EXISTS app/locks/p1"), 1);
    CHECK_EQ(lock_exists(s, "p1"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(rh_cmd_int(s, "EXISTS app/locks/p1"), 0);

    cfg.key_prefix = ""; /* no prefix at all */
    CHECK_RC(lw_configure(&cfg), LW_OK);
    CHECK_RC(lock_str(&g, "bare", 10000, 0), LW_OK);
    CHECK_EQ(rh_cmd_int(s, "EXISTS bare"), 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    use_server(s);
}

int main(void)
{
    rh_server s;
    CHECK_EQ(rh_start(&s, NULL), 0);
    use_server(&s);

    long_keys(&s);
    long_key_in_pieces(&s);
    binary_keys(&s);
    numbers(&s);
    null_string(&s);
    discard_heap_key();
    custom_prefix(&s);

    lw_shutdown();
    rh_stop(&s);
    printf("keys: ok\n");
    return 0;
}

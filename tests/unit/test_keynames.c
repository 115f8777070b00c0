/* A lock key's companion names (core/keynames.c): the exact names for each
 * of the three layouts (key with a hash tag, without one, without one but
 * holding a '}'), the shared fence counters (one per server, one per
 * Cluster slot), every name in the lock key's slot for many brace-heavy
 * keys, the inline buffer's edge and long keys on the heap.  Every process
 * locking a key must compute the same names, so they are pinned byte for
 * byte. */
#include <lockweave.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/keynames.h"
#include "topology/slot.h"

/* The names of key (a literal) must be "<head>:q" and "<head>:w:", with
 * the server's fence counter, "{lockweave}<prefix>fences", or its slot's,
 * "{<slot tag>}<prefix>fences" (prefix: "lock:" when key starts so). */
#define NAMES(key, head) names_are(key, sizeof key - 1, head, sizeof head - 1)

static size_t hex_tag(const char *key, size_t len, char *out);

static void names_are(const char *key, size_t len, const char *head,
                      size_t headlen)
{
    char *want = malloc(headlen + 8), fence[64], hex[16];
    size_t prefix = len >= 5 && memcmp(key, "lock:", 5) == 0 ? 5 : 0;
    struct lw_names n;

    CHECK(want != NULL);
    for (int per_slot = 0; per_slot < 2; per_slot++) {
        CHECK_RC(lw__names_init(&n, key, len, prefix, per_slot), LW_OK);
        memcpy(want, head, headlen);
        memcpy(want + headlen, ":q", 2);
        CHECK_MEM(n.queue, n.queuelen, want, headlen + 2);
        memcpy(want + headlen, ":w:", 3);
        CHECK_MEM(n.alive, n.alivelen, want, headlen + 3);
        memcpy(want + headlen, ":r", 2);
        CHECK_MEM(n.readers, n.readerslen, want, headlen + 2);
        size_t hl = per_slot ? hex_tag(key, len, hex)
                             : (size_t)snprintf(hex, sizeof hex, "lockweave");
        size_t fl = (size_t)snprintf(fence, sizeof fence, "{%.*s}%.*sfences",
                                     (int)hl, hex, (int)prefix, key);
        CHECK_MEM(n.fence, n.fencelen, fence, fl);
        lw__names_free(&n);
    }
    free(want);
}

/* The hex tag T that "{T}K..." uses for a key without a tag but with a '}',
 * and the fence counter of K's slot: the smallest n whose "%x" is in K's
 * slot. */
static size_t hex_tag(const char *key, size_t len, char *out)
{
    int slot = lw__key_slot(key, len);

    for (unsigned n = 0;; n++) {
        size_t l = (size_t)snprintf(out, 16, "%x", n);
        if (lw__key_slot(out, l) == slot)
            return l;
    }
}

static void layouts(void)
{
    char head[256], hex[16];
    size_t hl;

    /* A hash tag: it leads, the key follows whole. */
    NAMES("lock:stock:{42}", "{42}lock:stock:{42}");
    NAMES("{user1000}.following", "{user1000}{user1000}.following");
    NAMES("lock:{{a}}", "{{a}lock:{{a}}");
    NAMES("lock:{a}{b}", "{a}lock:{a}{b}");
    NAMES("lock:{\0}", "{\0}lock:{\0}");

    /* No tag and no '}': the whole key is the tag. */
    NAMES("lock:a", "{lock:a}");
    NAMES("lock:a{b", "{lock:a{b}");
    NAMES("x", "{x}");
    NAMES("lock:\0\xff\r\n", "{lock:\0\xff\r\n}");

    /* No tag but a '}' ("{}" is none): a hex tag in the key's slot, then
     * the key. */
    static const char *const closing[] = {"lock:a}b", "lock:{}", "}",
                                          "{}",       "lock:}{", "lock:{}{x}"};
    for (size_t i = 0; i < sizeof closing / sizeof *closing; i++) {
        const char *k = closing[i];
        size_t klen = strlen(k);
        hl = hex_tag(k, klen, hex);
        size_t headlen =
            (size_t)snprintf(head, sizeof head, "{%.*s}%s", (int)hl, hex, k);
        names_are(k, klen, head, headlen);
    }
    /* A key in the slot of "0", the first tag tried, gets "{0}". */
    char k[32];
    for (unsigned i = 0;; i++) {
        size_t klen = (size_t)snprintf(k, sizeof k, "lock:}%u", i);
        if (lw__key_slot(k, klen) == lw__key_slot("0", 1)) {
            size_t headlen = (size_t)snprintf(head, sizeof head, "{0}%s", k);
            names_are(k, klen, head, headlen);
            break;
        }
    }
}

/* key's names and what callers build from them (an alive key, its mailbox,
 * a release receipt) are all in key's slot, start with '{', and none is a
 * key under the "lock:" prefix. */
static void check_same_slot(const char *key, size_t len)
{
    int slot = lw__key_slot(key, len);
    struct lw_names n;
    char *buf;
    static const char *const after_alive[] = {
        "0123456789abcdef0123456789abcdef:1f",
        "0123456789abcdef0123456789abcdef:1f:g",
        "0123456789abcdef0123456789abcdef:1f:rel",
    };

    CHECK_RC(lw__names_init(&n, key, len, 5, 1), LW_OK);
    const char *names[] = {n.fence, n.queue, n.alive, n.readers};
    size_t lens[] = {n.fencelen, n.queuelen, n.alivelen, n.readerslen};
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(lw__key_slot(names[i], lens[i]) == slot,
                  "name %d of \"%.*s\" (%zu bytes) in slot %d, key in %d", i,
                  (int)len, key, len, lw__key_slot(names[i], lens[i]), slot);
        CHECK(lens[i] > 0 && names[i][0] == '{');
    }
    buf = malloc(n.alivelen + 64);
    CHECK(buf != NULL);
    for (size_t i = 0; i < sizeof after_alive / sizeof *after_alive; i++) {
        size_t l = strlen(after_alive[i]);
        memcpy(buf, n.alive, n.alivelen);
        memcpy(buf + n.alivelen, after_alive[i], l);
        CHECK_EQ(lw__key_slot(buf, n.alivelen + l), slot);
    }
    free(buf);
    /* The three names do not overlap (callers pass them as separate keys). */
    CHECK(n.fence + n.fencelen <= n.queue || n.queue + n.queuelen <= n.fence);
    CHECK(n.queue + n.queuelen <= n.alive || n.alive + n.alivelen <= n.queue);
    CHECK(n.fence + n.fencelen <= n.alive || n.alive + n.alivelen <= n.fence);
    lw__names_free(&n);
}

/* lw__names_companion(): every name lw__names_init() makes for key is a
 * companion under key's prefix (its first prefix bytes), the key itself is
 * not, and under another prefix none is. */
static void check_companions(const char *key, size_t len, size_t prefix)
{
    static const char token[] = "0123456789abcdef0123456789abcdef:1f";
    static const char *const waiter[] = {"", ":g", ":rel"};
    char *name = malloc(len + 128);
    struct lw_names n;

    CHECK(name != NULL);
    CHECK_EQ(lw__names_companion(key, len, key, prefix), 0);
    for (int per_slot = 0; per_slot < 2; per_slot++) {
        CHECK_RC(lw__names_init(&n, key, len, prefix, per_slot), LW_OK);
        CHECK_EQ(lw__names_companion(n.fence, n.fencelen, key, prefix), 1);
        CHECK_EQ(lw__names_companion(n.queue, n.queuelen, key, prefix), 1);
        CHECK_EQ(lw__names_companion(n.readers, n.readerslen, key, prefix), 1);
        CHECK_EQ(lw__names_companion(n.queue, n.queuelen, "other:", 6), 0);
        CHECK_EQ(lw__names_companion(n.fence, n.fencelen, "other:", 6), 0);
        for (int i = 0; i < 3; i++) {
            size_t l = n.alivelen;
            memcpy(name, n.alive, l);
            memcpy(name + l, token, sizeof token - 1);
            l += sizeof token - 1;
            memcpy(name + l, waiter[i], strlen(waiter[i]));
            l += strlen(waiter[i]);
            CHECK_EQ(lw__names_companion(name, l, key, prefix), 1);
            /* A token one digit short is nobody's. */
            memmove(name + n.alivelen, name + n.alivelen + 1,
                    l - n.alivelen - 1);
            CHECK_EQ(lw__names_companion(name, l - 1, key, prefix), 0);
        }
        /* The alive prefix alone, without a token, is no name. */
        CHECK_EQ(lw__names_companion(n.alive, n.alivelen, key, prefix), 0);
        lw__names_free(&n);
    }
    free(name);
}

static void companions(void)
{
    static const char *const keys[] = {
        "lock:stock:{42}", "lock:a{b",        "lock:a}b", "lock:{}",
        "lock:x:q",        "lock:w:fences",   "lock:",    "lock:{x}:w:1",
        "{lock:}a",        "lock:{lockweave}"};

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        check_companions(keys[i], strlen(keys[i]), 5);
    check_companions("}{", 2, 0);
    /* Look-alikes: another key's tag, a counter of no slot, a prefix that
     * is not the fence's. */
#define NOT_COMPANION(s)                                                       \
    CHECK_EQ(lw__names_companion(s, sizeof s - 1, "lock:", 5), 0)
    NOT_COMPANION("{42}lock:stock:{43}:q");
    NOT_COMPANION("{42}lock:stock:{43}:r");
    NOT_COMPANION("{zz}lock:fences");
    NOT_COMPANION("{ffff}lock:fences");
    NOT_COMPANION("{lockweave}app:fences");
    NOT_COMPANION("{lock:a}:w:0123:1");
    NOT_COMPANION("{app:a}:q");
    NOT_COMPANION("lock:a:q");
    NOT_COMPANION("{");
#undef NOT_COMPANION
    CHECK_EQ(lw__names_companion("{0}lock:fences", 14, "lock:", 5), 1);
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

static void random_keys(void)
{
    char key[64];
    size_t start, taglen;
    int layout[3] = {0, 0, 0}; /* tagged, no '}', a '}' but no tag */

    /* Few enough that the hex tags (searched once per slot) stay quick. */
    for (int i = 0; i < 1000; i++) {
        /* "lock:" and up to 40 bytes, a fifth '{' and a fifth '}'. */
        size_t len = 5 + rnd() % 41;
        memcpy(key, "lock:", 5);
        for (size_t j = 5; j < len; j++) {
            unsigned r = rnd() % 320;
            key[j] = r < 64 ? "{}"[r & 1] : (char)(r - 64);
        }
        check_same_slot(key, len);
        check_companions(key, len, 5);
        if (lw__hash_tag(key, len, &start, &taglen))
            layout[0]++;
        else
            layout[memchr(key, '}', len) == NULL ? 1 : 2]++;
    }
    printf("layouts: %d tagged, %d without '}', %d hex-tagged\n", layout[0],
           layout[1], layout[2]);
    for (int i = 0; i < 3; i++)
        CHECK_RANGE(layout[i], 50, 1000);
}

/* LW_NAMES_INLINE bytes hold the queue's and alive keys' names of short
 * keys; longer ones go to the heap, with the same names. */
static void inline_and_heap(void)
{
    struct lw_names n;
    static char key[200001];
    char *want;

    /* A key without '}' of length L needs, with the server's counter and
     * no prefix, 17 bytes for "{lockweave}fences" and 3 * (L + 2) + 7. */
    size_t fits = (LW_NAMES_INLINE - 17 - 7) / 3 - 2;
    memset(key, 'k', sizeof key);

    CHECK_RC(lw__names_init(&n, key, fits, 0, 0), LW_OK);
    CHECK(n.heap == NULL);
    CHECK(n.fence >= n.buf && n.readers + n.readerslen <= n.buf + sizeof n.buf);
    CHECK_EQ(n.queuelen, fits + 2 + 2);
    lw__names_free(&n);

    CHECK_RC(lw__names_init(&n, key, fits + 1, 0, 0), LW_OK);
    CHECK(n.heap != NULL);
    CHECK(n.fence >= n.heap && n.queue >= n.heap);
    CHECK_EQ(n.queuelen, fits + 3 + 2);
    lw__names_free(&n);
    CHECK(n.heap == NULL);
    lw__names_free(&n); /* twice is harmless */

    /* Long keys of each layout: exact names, and the same slot. */
    want = malloc(sizeof key + 32);
    CHECK(want != NULL);
    want[0] = '{';
    memcpy(want + 1, key, sizeof key);
    want[1 + sizeof key] = '}';
    names_are(key, sizeof key, want, sizeof key + 2);
    check_same_slot(key, sizeof key);

    key[100] = '{';
    key[102] = '}';
    check_same_slot(key, sizeof key);
    CHECK_RC(lw__names_init(&n, key, sizeof key, 0, 0), LW_OK);
    CHECK_MEM(n.queue, 3, "{k}", 3);
    CHECK_MEM(n.queue + 3, n.queuelen - 3 - 2, key, sizeof key);
    CHECK_EQ(n.queuelen, 3 + sizeof key + 2);
    lw__names_free(&n);

    key[102] = 'k';
    key[sizeof key - 1] = '}';
    check_same_slot(key, sizeof key);
    free(want);
}

/* Fences do not leave a key behind per lock key: every key of one slot
 * shares its slot's counter (and all keys share the server's one), so
 * however many keys are locked, at most LW_SLOTS counters exist. */
static void shared_fences(void)
{
    static char seen[LW_SLOTS][24];
    char key[32];
    int slots = 0;

    for (int i = 0; i < 100000; i++) {
        size_t len = (size_t)snprintf(key, sizeof key, "lock:order:%d", i);
        int slot = lw__key_slot(key, len);
        struct lw_names n;

        CHECK_RC(lw__names_init(&n, key, len, 5, 1), LW_OK);
        CHECK(n.fencelen < sizeof seen[0]);
        CHECK_EQ(lw__key_slot(n.fence, n.fencelen), slot);
        if (seen[slot][0] == '\0') {
            memcpy(seen[slot], n.fence, n.fencelen);
            slots++;
        } else {
            CHECK_MEM(n.fence, n.fencelen, seen[slot], strlen(seen[slot]));
        }
        lw__names_free(&n);
        CHECK_RC(lw__names_init(&n, key, len, 5, 0), LW_OK);
        CHECK_MEM(n.fence, n.fencelen, "{lockweave}lock:fences", 22);
        lw__names_free(&n);
    }
    printf("100000 keys: %d fence counters, one per slot met\n", slots);
}

int main(void)
{
    layouts();
    shared_fences();
    random_keys();
    inline_and_heap();
    companions();
    printf("unit_keynames: ok\n");
    return 0;
}

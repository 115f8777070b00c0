/*
 * Names of the keys that go with a lock key K, laid out so that every key
 * one script touches hashes to K's Redis Cluster slot (a script whose keys
 * span slots fails with CROSSSLOT).
 *
 * Fences come from a counter shared by many keys: one per server and key
 * prefix P, "{lockweave}Pfences" ("{lockweave}lock:fences"), or in a
 * cluster one per slot, "{S}Pfences", S being the slot's tag (the smallest
 * hex string that hashes to it).  Fences need only increase per key, and a
 * shared counter keeps that, while per-key counters would stay in Redis
 * forever, one for every key ever locked.  P in the name keeps an ACL that
 * grants "~*P*" sufficient.
 *
 * The other names are "{T}R<suffix>", T being what decides K's slot:
 *   K has a hash tag ("lock:stock:{42}")  ->  "{42}lock:stock:{42}:q"
 *   K has none and no '}' ("lock:a{b")    ->  "{lock:a{b}:q"
 *   K has none but holds a '}' ("lock:{}", "lock:a}b"): "{K}" would end the
 *   tag early, so T is S                  ->  "{1f3a}lock:a}b:q"
 * Starting with '{', none can be a lock key (those start with the prefix,
 * "lock:"), so locking "t{1}:q" never touches the queue of "t{1}"; and as
 * tokens are hex, no ":w:<token>" name ends in "fences".
 */
#include "core/keynames.h"

#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numfmt.h"
#include "topology/slot.h"

static const char *const suffixes[] = {":q", ":w:", ":r"};
static const size_t suffix_lens[] = {2, 3, 2};
#define NSUFFIXES    3
#define SUFFIXES_LEN (2 + 3 + 2)

#define SERVER_TAG   "lockweave"
#define FENCE_SUFFIX "fences"

/* For each slot, 1 + the smallest n whose "%x" hashes to it (0: not filled
 * yet).  Every client must pick the same tag for a slot, hence "smallest".
 * Threads racing to fill it store the same values, so relaxed atomics
 * suffice and no lock (nor fork handler) is needed. */
static uint32_t slot_tag_cache[LW_SLOTS];

/* Fills the whole cache in one pass: every slot is met by n < ~200k
 * (CRC16 spreads short strings evenly), a few milliseconds once, where a
 * search per slot would cost ~16k tries for each new slot. */
static void fill_slot_tags(void)
{
    /* Slots met in this pass: another thread may be filling the cache too,
     * so what is already there does not say what this pass has found. */
    uint64_t met[LW_SLOTS / 64] = {0};
    char buf[8];
    unsigned left = LW_SLOTS;

    for (uint32_t n = 0; left != 0; n++) {
        unsigned slot = lw__crc16(buf, lw__fmt_hex(buf, n)) % LW_SLOTS;
        if (met[slot / 64] & (UINT64_C(1) << (slot % 64)))
            continue;
        met[slot / 64] |= UINT64_C(1) << (slot % 64);
        __atomic_store_n(&slot_tag_cache[slot], n + 1, __ATOMIC_RELAXED);
        left--;
    }
}

/* A hash tag without braces whose slot is slot, in buf (8 bytes at least);
 * its length. */
static size_t slot_tag(int slot, char *buf)
{
    uint32_t n = __atomic_load_n(&slot_tag_cache[slot], __ATOMIC_RELAXED);

    if (n == 0) {
        fill_slot_tags();
        n = __atomic_load_n(&slot_tag_cache[slot], __ATOMIC_RELAXED);
    }
    return lw__fmt_hex(buf, n - 1);
}

int lw__names_init(struct lw_names *n, const char *key, size_t len,
                   size_t prefix_len, int per_slot)
{
    const char **out[] = {&n->queue, &n->alive, &n->readers};
    size_t *outlen[] = {&n->queuelen, &n->alivelen, &n->readerslen};
    size_t start, taglen, restlen = len, need, base, fencetag;
    const char *tag, *rest = key;
    char tagbuf[8], fencebuf[8], *p, *head;

    fencetag = per_slot ? slot_tag(lw__key_slot(key, len), fencebuf)
                        : sizeof SERVER_TAG - 1;
    if (lw__hash_tag(key, len, &start, &taglen)) {
        tag = key + start;
    } else if (memchr(key, '}', len) == NULL) {
        tag = key;
        taglen = len;
        restlen = 0;
    } else if (per_slot) {
        tag = fencebuf; /* S, made for the fence counter already */
        taglen = fencetag;
    } else {
        taglen = slot_tag(lw__key_slot(key, len), tagbuf);
        tag = tagbuf;
    }
    base = taglen + 2 + restlen;
    n->fencelen = fencetag + 2 + prefix_len + sizeof FENCE_SUFFIX - 1;
    need = n->fencelen + NSUFFIXES * base + SUFFIXES_LEN;
    n->heap = need > sizeof n->buf ? malloc(need) : NULL;
    if (need > sizeof n->buf && n->heap == NULL)
        return LW_ENOMEM;
    p = n->heap ? n->heap : n->buf;

    /* "{S}Pfences" or "{lockweave}Pfences". */
    n->fence = p;
    *p++ = '{';
    memcpy(p, per_slot ? fencebuf : SERVER_TAG, fencetag);
    p += fencetag;
    *p++ = '}';
    memcpy(p, key, prefix_len);
    p += prefix_len;
    memcpy(p, FENCE_SUFFIX, sizeof FENCE_SUFFIX - 1);
    p += sizeof FENCE_SUFFIX - 1;

    /* The queue's "{T}R" is written once and copied for the alive keys. */
    head = p;
    p[0] = '{';
    memcpy(p + 1, tag, taglen);
    p[1 + taglen] = '}';
    if (restlen != 0)
        memcpy(p + 2 + taglen, rest, restlen);
    for (int i = 0; i < NSUFFIXES; i++) {
        if (i > 0)
            memcpy(p, head, base);
        memcpy(p + base, suffixes[i], suffix_lens[i]);
        *out[i] = p;
        *outlen[i] = base + suffix_lens[i];
        p += base + suffix_lens[i];
    }
    return LW_OK;
}

void lw__names_free(struct lw_names *n)
{
    free(n->heap);
    n->heap = NULL;
}

/* Length of the run of lowercase hex digits ending at end (not before
 * start). */
static size_t hex_run_back(const char *start, const char *end)
{
    const char *p = end;

    while (p > start &&
           ((p[-1] >= '0' && p[-1] <= '9') || (p[-1] >= 'a' && p[-1] <= 'f')))
        p--;
    return (size_t)(end - p);
}

/* name ends with suffix: its length without it, else 0. */
static size_t strip(const char *name, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len > n && memcmp(name + len - n, suffix, n) == 0 ? len - n : 0;
}

/* "{tag}<prefix>fences" with tag "lockweave" or the slot tag of its own
 * slot (what slot_tag() makes: every client picks the same one). */
static int is_fence(const char *name, size_t len, size_t close,
                    const char *prefix, size_t prefix_len)
{
    const char *tag = name + 1;
    size_t taglen = close - 1;
    char buf[8];

    if (len != close + 1 + prefix_len + sizeof FENCE_SUFFIX - 1 ||
        memcmp(name + close + 1, prefix, prefix_len) != 0 ||
        memcmp(name + len - (sizeof FENCE_SUFFIX - 1), FENCE_SUFFIX,
               sizeof FENCE_SUFFIX - 1) != 0)
        return 0;
    if (taglen == sizeof SERVER_TAG - 1 && memcmp(tag, SERVER_TAG, taglen) == 0)
        return 1;
    if (taglen == 0 || taglen > 5 || hex_run_back(tag, tag + taglen) != taglen)
        return 0;
    return slot_tag(lw__crc16(tag, taglen) % LW_SLOTS, buf) == taglen &&
           memcmp(buf, tag, taglen) == 0;
}

int lw__names_companion(const char *name, size_t len, const char *prefix,
                        size_t prefix_len)
{
    const char *close;
    const char *key;
    size_t head, keylen, t;
    struct lw_names n;
    int same;

    if (len < 3 || name[0] != '{' ||
        (close = memchr(name + 1, '}', len - 1)) == NULL)
        return 0;
    if (is_fence(name, len, (size_t)(close - name), prefix, prefix_len))
        return 1;
    /* "{T}R" then ":q", or ":w:" and a token (32 hex digits, ':', a hex
     * sequence), alone (alive key) or with ":g" (mailbox) or ":rel"
     * (receipt). */
    if ((head = strip(name, len, ":q")) == 0)
        head = strip(name, len, ":r");
    if (head == 0) {
        if ((t = strip(name, len, ":g")) == 0 &&
            (t = strip(name, len, ":rel")) == 0)
            t = len;
        size_t seq = hex_run_back(name, name + t);
        if (seq == 0 || seq >= t || name[t - seq - 1] != ':')
            return 0;
        t -= seq + 1;
        if (hex_run_back(name, name + t) < 32)
            return 0;
        t -= 32;
        if ((head = strip(name, t, ":w:")) == 0)
            return 0;
    }
    if (head <= (size_t)(close - name))
        return 0;
    /* The lock key: R, or T when R is empty (a key without a hash tag and
     * without '}').  Its names, made again, must start with this head. */
    key = close + 1;
    keylen = head - (size_t)(close + 1 - name);
    if (keylen == 0) {
        key = name + 1;
        keylen = (size_t)(close - name) - 1;
    }
    if (keylen < prefix_len || memcmp(key, prefix, prefix_len) != 0)
        return 0;
    if (lw__names_init(&n, key, keylen, prefix_len, 0) != LW_OK)
        return LW_ENOMEM;
    same = n.queuelen == head + 2 && memcmp(n.queue, name, head) == 0;
    lw__names_free(&n);
    return same;
}

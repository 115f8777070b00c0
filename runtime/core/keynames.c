/*
 * Names of a lock's companion keys, laid out so that every key one script
 * touches hashes to the lock key's Redis Cluster slot (a script whose keys
 * span slots fails with CROSSSLOT).  Every name is "{T}R<suffix>", T being
 * what decides K's slot:
 *   K has a hash tag ("lock:stock:{42}")  ->  "{42}lock:stock:{42}:fence"
 *   K has none and no '}' ("lock:a{b")    ->  "{lock:a{b}:fence"
 *   K has none but holds a '}' ("lock:{}", "lock:a}b"): "{K}" would end the
 *   tag early, so T is a short hex string picked to hash to K's slot:
 *                                         ->  "{<hex>}lock:a}b:fence"
 * Starting with '{', a companion can never be a lock key (those start with
 * the prefix, "lock:"), so locking "t{1}:fence" never touches the fence of
 * "t{1}".
 */
#include "core/keynames.h"

#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/slot.h"

static const char *const suffixes[] = {":fence", ":q", ":w:"};
static const size_t suffix_lens[] = {6, 2, 3};
#define SUFFIXES_LEN (6 + 2 + 3)

/* For each slot, 1 + the smallest n whose "%x" hashes to it (0: not yet
 * looked for).  Racing threads compute the same value, so relaxed atomics
 * suffice. */
static uint32_t slot_tag_cache[LW_SLOTS];

/* A hash tag without braces whose slot is slot, in buf; its length. */
static size_t slot_tag(int slot, char *buf, size_t cap)
{
    uint32_t n = __atomic_load_n(&slot_tag_cache[slot], __ATOMIC_RELAXED);
    size_t len;

    if (n == 0) {
        /* CRC16 spreads short strings evenly: ~16k tries find any slot. */
        for (n = 1;; n++) {
            len = (size_t)snprintf(buf, cap, "%x", n - 1);
            if (lw__crc16(buf, len) % LW_SLOTS == (unsigned)slot)
                break;
        }
        __atomic_store_n(&slot_tag_cache[slot], n, __ATOMIC_RELAXED);
    }
    return (size_t)snprintf(buf, cap, "%x", n - 1);
}

int lw__names_init(struct lw_names *n, const char *key, size_t len)
{
    const char **out[] = {&n->fence, &n->queue, &n->alive};
    size_t *outlen[] = {&n->fencelen, &n->queuelen, &n->alivelen};
    size_t start, taglen, restlen = len, need, base;
    const char *tag, *rest = key;
    char hex[16], *p, *head;

    if (lw__hash_tag(key, len, &start, &taglen)) {
        tag = key + start;
    } else if (memchr(key, '}', len) == NULL) {
        tag = key;
        taglen = len;
        restlen = 0;
    } else {
        taglen = slot_tag(lw__key_slot(key, len), hex, sizeof hex);
        tag = hex;
    }
    base = taglen + 2 + restlen;
    need = 3 * base + SUFFIXES_LEN;
    n->heap = need > sizeof n->buf ? malloc(need) : NULL;
    if (need > sizeof n->buf && n->heap == NULL)
        return LW_ENOMEM;
    /* The first name's "{T}R" is written once and copied for the others. */
    head = p = n->heap ? n->heap : n->buf;
    p[0] = '{';
    memcpy(p + 1, tag, taglen);
    p[1 + taglen] = '}';
    if (restlen != 0)
        memcpy(p + 2 + taglen, rest, restlen);
    for (int i = 0; i < 3; i++) {
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

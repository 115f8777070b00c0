/* Redis Cluster key slots (topology/slot.c): CRC16-XMODEM against its
 * published check value and a bit-by-bit reference, the hash-tag rule on
 * the Redis Cluster specification's examples, and the slots a real Redis
 * (CLUSTER KEYSLOT, 7.0) gave for 320 pseudo-random keys heavy in braces.
 * tests/cluster/test_cluster_slots.c asks a live cluster too; this test
 * needs none. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "topology/slot.h"

/* CRC16-XMODEM one bit at a time, straight from its definition
 * (polynomial 0x1021, initial value 0, no reflection, no final xor): an
 * independent check of slot.c's table. */
static uint16_t crc16_bitwise(const char *buf, size_t len)
{
    uint16_t crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

static void crc16(void)
{
    char buf[64];

    CHECK_EQ(lw__crc16("123456789", 9), 0x31c3); /* the check value */
    CHECK_EQ(lw__crc16("", 0), 0);
    CHECK_EQ(lw__crc16("A", 1), 0x58e5);
    /* Every table entry: the CRC of one byte is its entry. */
    for (int c = 0; c < 256; c++) {
        buf[0] = (char)c;
        CHECK_MSG(lw__crc16(buf, 1) == crc16_bitwise(buf, 1),
                  "crc16 of byte 0x%02x: %#x, want %#x", c, lw__crc16(buf, 1),
                  crc16_bitwise(buf, 1));
    }
    /* Longer inputs, every byte value in every position. */
    for (int i = 0; i < 4096; i++) {
        size_t len = (size_t)(i % (int)sizeof buf);
        for (size_t j = 0; j < len; j++)
            buf[j] = (char)(i * 31 + (int)j * 7);
        CHECK_EQ(lw__crc16(buf, len), crc16_bitwise(buf, len));
    }
}

/* key (a string literal, NULs allowed) has its hash tag at [start,
 * start+len), or none when start < 0. */
#define TAG(key, start, len) tag_is(key, sizeof key - 1, start, len)

static void tag_is(const char *key, size_t keylen, int start, int len)
{
    size_t s = 12345, l = 12345;
    int has = lw__hash_tag(key, keylen, &s, &l);

    if (start < 0) {
        CHECK_MSG(has == 0, "\"%.*s\" has no tag, found [%zu, +%zu)",
                  (int)keylen, key, s, l);
        CHECK(s == 12345 && l == 12345); /* untouched */
        return;
    }
    CHECK_MSG(has == 1, "\"%.*s\": tag not found", (int)keylen, key);
    CHECK_MSG(s == (size_t)start && l == (size_t)len,
              "\"%.*s\": tag [%zu, +%zu), want [%d, +%d)", (int)keylen, key, s,
              l, start, len);
}

/* The specification's examples ("Hash tags"), and the edges around them. */
static void hash_tags(void)
{
    TAG("{user1000}.following", 1, 8);
    TAG("{user1000}.followers", 1, 8);
    TAG("foo{}{bar}", -1, 0);   /* "{}" first: the whole key */
    TAG("foo{{bar}}zap", 4, 4); /* "{bar" */
    TAG("foo{bar}{zap}", 4, 3); /* the first tag only */
    TAG("", -1, 0);
    TAG("plain", -1, 0);
    TAG("{", -1, 0);
    TAG("}", -1, 0);
    TAG("{}", -1, 0);
    TAG("}{", -1, 0);
    TAG("}{a}", 2, 1); /* a '}' before the '{' does not count */
    TAG("a{b", -1, 0);
    TAG("{a}", 1, 1);
    TAG("a{b}c", 2, 1);
    TAG("{\0}", 1, 1); /* binary-safe: a NUL is a tag */
    TAG("\0{x}", 2, 1);
    /* The length bounds the search: a tag past it is not seen. */
    CHECK_EQ(lw__hash_tag("ab{c}", 4, &(size_t){0}, &(size_t){0}), 0);
    CHECK_EQ(lw__hash_tag("ab{c}", 2, &(size_t){0}, &(size_t){0}), 0);
}

#define SLOT(key) lw__key_slot(key, sizeof key - 1)

/* Values from CLUSTER KEYSLOT. */
static void slots(void)
{
    CHECK_EQ(SLOT(""), 0);
    CHECK_EQ(SLOT("a"), 15495);
    CHECK_EQ(SLOT("foo"), 12182);
    CHECK_EQ(SLOT("bar"), 5061);
    CHECK_EQ(SLOT("123456789"), 12739); /* 0x31c3 & 16383 */
    CHECK_EQ(SLOT("{user1000}.following"), 3443);
    CHECK_EQ(SLOT("{user1000}.followers"), 3443);
    CHECK_EQ(SLOT("foo{}{bar}"), 8363);
    CHECK_EQ(SLOT("foo{{bar}}zap"), 4015);
    CHECK_EQ(SLOT("{bar"), 4015);
    CHECK_EQ(SLOT("foo{bar}{zap}"), 5061);
    CHECK_EQ(SLOT("{"), 4092);
    CHECK_EQ(SLOT("}"), 12090);
    CHECK_EQ(SLOT("{}"), 15257);
    CHECK_EQ(SLOT("}{"), 12793);
    CHECK_EQ(SLOT("{a}"), 15495);
    CHECK_EQ(SLOT("a{b}c"), 3300);
    CHECK_EQ(SLOT("lock:stock:{42}"), 8000);
    CHECK_EQ(SLOT("42"), 8000);
    CHECK_EQ(SLOT("\0"), 0);
    CHECK_EQ(SLOT("\xff"), 7920);
    CHECK_EQ(SLOT("\x01\x02"), 4979);
    CHECK_EQ(SLOT("\0\xff\x80{\x01\x02}"), 4979);
    CHECK_EQ(SLOT("key\0with\0nul"), 7451);
    CHECK_EQ(SLOT("{\0}"), 0);
    CHECK_EQ(SLOT("lock:a}b"), 7135);
    CHECK_EQ(SLOT("lock:a{b"), 12665);
    CHECK_EQ(SLOT("{lock:a{b}:fence"), 12665);

    char big[1000];
    memset(big, 'x', sizeof big);
    CHECK_EQ(lw__key_slot(big, sizeof big), 3195);
}

/* CLUSTER KEYSLOT of key i of random_key() below, from Redis 7.0. */
static const int redis_slots[320] = {
    3618,  15496, 0,     6283,  1228,  9902,  15284, 14684, 5975,  8315,  4048,
    14778, 13459, 1172,  6099,  8342,  9740,  15772, 4892,  3072,  16155, 11572,
    10706, 5717,  16097, 0,     8596,  9534,  14368, 8513,  5361,  0,     11467,
    12523, 5342,  15210, 13445, 10482, 187,   9479,  8680,  3182,  16056, 4975,
    5132,  15290, 9237,  7405,  7393,  14306, 6023,  0,     6021,  2804,  12945,
    0,     132,   14572, 16036, 4679,  1848,  3055,  15242, 14039, 11499, 338,
    6253,  13479, 12112, 8063,  0,     5185,  471,   3603,  10920, 2469,  9675,
    622,   5056,  12472, 7147,  14025, 6212,  9734,  8918,  11751, 14809, 8593,
    13301, 9467,  3077,  10637, 5346,  11958, 1506,  14337, 16224, 14136, 14621,
    12088, 2612,  3286,  6901,  2756,  4092,  1182,  7153,  14258, 7937,  15040,
    11765, 9112,  12938, 7814,  552,   16065, 62,    9286,  2410,  9484,  10382,
    16025, 12551, 2176,  3803,  1412,  6259,  301,   6598,  10367, 8754,  10017,
    7744,  3001,  11814, 8364,  0,     14423, 3732,  3861,  13350, 5104,  10286,
    9779,  4092,  2129,  3653,  2306,  8535,  7395,  10953, 1957,  11457, 6210,
    3126,  13460, 5105,  8654,  14513, 11972, 9285,  2639,  14791, 12410, 7237,
    10667, 16078, 2561,  14741, 13201, 4092,  4596,  3653,  765,   8465,  1328,
    1594,  3545,  2750,  15828, 6651,  12215, 1188,  6227,  10902, 16254, 0,
    0,     12650, 16026, 0,     9034,  0,     3831,  5808,  4092,  13841, 7461,
    9372,  2025,  369,   7014,  15630, 10281, 8460,  8205,  12347, 15813, 0,
    2547,  3808,  6062,  11945, 0,     13420, 14481, 547,   0,     12090, 9854,
    2640,  0,     7280,  2059,  13276, 12592, 4422,  0,     8009,  15265, 12792,
    11532, 4863,  7198,  8796,  8624,  14112, 15473, 396,   13471, 654,   87,
    5719,  11298, 6200,  12766, 0,     9181,  14798, 6231,  10521, 7527,  239,
    14897, 12712, 12806, 7033,  14944, 1702,  202,   7629,  8083,  14654, 2266,
    11027, 3603,  974,   6675,  14167, 10498, 7578,  2999,  8378,  0,     9714,
    9803,  8956,  5562,  2271,  8759,  0,     5478,  9400,  15018, 6011,  16149,
    11787, 6661,  7548,  12124, 5094,  7069,  6483,  804,   13850, 4627,  5925,
    9435,  160,   14094, 10666, 924,   6780,  13637, 14231, 8872,  16246, 2019,
    12221, 10242, 11401, 7846,  3954,  13648, 0,     11687, 9091,  3788,  4285,
    3329,
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

/* Up to 23 bytes, a fifth of them '{' and another fifth '}', the rest any
 * byte: many keys with tags, empty tags and unbalanced braces. */
static size_t random_key(char *key)
{
    size_t len = rnd() % 24;

    for (size_t i = 0; i < len; i++) {
        unsigned r = rnd() % 320;
        key[i] = (char)(r < 32 ? '{' : r < 64 ? '}' : r - 64);
    }
    return len;
}

static void random_keys(void)
{
    char key[32];
    size_t start, taglen;
    int tagged = 0, empty_tags = 0;

    for (int i = 0; i < 320; i++) {
        size_t len = random_key(key);
        int slot = lw__key_slot(key, len);

        CHECK_MSG(slot == redis_slots[i],
                  "key %d (%zu bytes): slot %d, CLUSTER KEYSLOT %d", i, len,
                  slot, redis_slots[i]);
        if (lw__hash_tag(key, len, &start, &taglen))
            tagged++;
        else if (memchr(key, '{', len) != NULL && memchr(key, '}', len) != NULL)
            empty_tags++;
    }
    printf("%d keys with a tag, %d with braces but no tag\n", tagged,
           empty_tags);
    /* The keys exercise the tag rule, not only plain CRCs. */
    CHECK_RANGE(tagged, 50, 320);
    CHECK_RANGE(empty_tags, 10, 320);
}

int main(void)
{
    crc16();
    hash_tags();
    slots();
    random_keys();
    printf("unit_slot: ok\n");
    return 0;
}

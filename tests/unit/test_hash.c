/* The runtime's key hash (base/hash.h): how keys spread over small tables
 * taken modulo its value (an event loop's two pumps, the cohort's
 * buckets).  FNV-1a's own low k bits depend only on the low k bits of the
 * bytes (it xors a byte in and multiplies): keys that differ only in their
 * bytes' higher bits ("k:0" and "k:8", "a" and "i") would share a pump, or
 * a bucket modulo 8. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "check.h"

/* 256 keys "stock:XY", X and Y each one of the 16 bytes 8 * i + low (the
 * same low three bits), into m buckets: each gets at least a quarter of
 * its share. */
static void high_bits(unsigned char low, unsigned m)
{
    int count[8] = {0};
    char key[] = "stock:XY";

    for (int x = 0; x < 16; x++)
        for (int y = 0; y < 16; y++) {
            key[6] = (char)(8 * x + low);
            key[7] = (char)(8 * (y + 16) + low);
            count[lw__hash_bytes(key, sizeof key - 1) % m]++;
        }
    for (unsigned b = 0; b < m; b++)
        CHECK_MSG(count[b] >= 256 / (int)m / 4,
                  "low bits %u: %d of 256 keys in bucket %u of %u", low,
                  count[b], b, m);
}

/* Keys as users name them, counting up: each bucket its share, roughly. */
static void counting(const char *fmt, int step, unsigned m)
{
    int count[8] = {0};
    char key[64];

    for (int i = 0; i < 1000; i++) {
        int len = snprintf(key, sizeof key, fmt, i * step);
        count[lw__hash_bytes(key, (size_t)len) % m]++;
    }
    for (unsigned b = 0; b < m; b++)
        CHECK_MSG(count[b] >= 1000 / (int)m / 4,
                  "%s, step %d: %d of 1000 keys in bucket %u of %u", fmt, step,
                  count[b], b, m);
}

int main(void)
{
    for (unsigned char low = 0; low < 8; low++) {
        high_bits(low, 2);
        high_bits(low, 8);
    }
    counting("stock:%d", 1, 2);
    counting("stock:%d", 2, 8);
    counting("bench:k:%d", 4, 2);
    printf("unit_hash: ok\n");
    return 0;
}

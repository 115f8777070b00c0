/* SHA-1 (FIPS 180-4, section 6.1), only to name Lua scripts the way Redis
 * does.  Scripts are a few kilobytes and hashed once per process. */
#include "base/sha1.h"

#include <stdint.h>
#include <string.h>

static uint32_t rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void block(uint32_t h[5], const unsigned char *b)
{
    uint32_t w[80], a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];

    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)b[4 * t] << 24 | (uint32_t)b[4 * t + 1] << 16 |
               (uint32_t)b[4 * t + 2] << 8 | b[4 * t + 3];
    for (int t = 16; t < 80; t++)
        w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    for (int t = 0; t < 80; t++) {
        uint32_t f, k, tmp;
        if (t < 20) {
            f = (bb & c) | (~bb & d);
            k = 0x5a827999;
        } else if (t < 40) {
            f = bb ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (t < 60) {
            f = (bb & c) | (bb & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = bb ^ c ^ d;
            k = 0xca62c1d6;
        }
        tmp = rol(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rol(bb, 30);
        bb = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void lw__sha1_hex(const void *p, size_t n, char hex[41])
{
    static const char digits[] = "0123456789abcdef";
    uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                     0xc3d2e1f0};
    const unsigned char *in = p;
    unsigned char last[128] = {0};
    uint64_t bits = (uint64_t)n * 8;
    size_t rest, tail;

    for (; n >= 64; n -= 64, in += 64)
        block(h, in);
    /* Padding: a 1 bit, zeros, then the length in bits, big-endian, to a
     * multiple of 64 bytes (one block, or two when the length does not fit
     * after the message's last bytes). */
    rest = n;
    memcpy(last, in, rest);
    last[rest] = 0x80;
    tail = rest + 1 + 8 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++)
        last[tail - 1 - i] = (unsigned char)(bits >> (8 * i));
    block(h, last);
    if (tail == 128)
        block(h, last + 64);
    for (int i = 0; i < 20; i++) {
        unsigned char byte = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
    hex[40] = '\0';
}

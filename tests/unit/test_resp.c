/* RESP encoding of commands (net/resp.c): the exact bytes of small commands,
 * appended commands, empty, binary and large arguments, a read-back through
 * an independent decoder for random argument vectors, and a failed
 * allocation leaving the buffer as it was (realloc is wrapped at link time,
 * see CMakeLists.txt); and the number formatter they use. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numfmt.h"
#include "check.h"
#include "net/resp.h"

/* The next realloc calls to fail: 0, none. */
static int fail_reallocs;

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_realloc(void *p, size_t n)
{
    if (fail_reallocs > 0) {
        fail_reallocs--;
        return NULL;
    }
    return __real_realloc(p, n);
}

/* Encode one command of C strings. */
static int cmd(struct lw_resp *b, int argc, const char *const *argv)
{
    size_t lens[16];

    CHECK(argc <= 16);
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return lw__resp_cmd(b, argc, argv, lens);
}

#define EXPECT(b, lit) CHECK_MEM((b)->p, (b)->len, lit, sizeof lit - 1)

static void small(void)
{
    struct lw_resp b = {NULL, 0, 0};
    static const char *const set[] = {"SET", "k", "v"};
    static const char *const ping[] = {"PING"};

    CHECK_EQ(cmd(&b, 3, set), 0);
    EXPECT(&b, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
    CHECK(b.cap >= b.len);

    /* Commands append: a pipeline is one buffer. */
    CHECK_EQ(cmd(&b, 1, ping), 0);
    EXPECT(&b, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n");

    /* Emptied by its owner, it is reused without reallocating. */
    char *p = b.p;
    size_t cap = b.cap;
    b.len = 0;
    CHECK_EQ(cmd(&b, 1, ping), 0);
    EXPECT(&b, "*1\r\n$4\r\nPING\r\n");
    CHECK(b.p == p && b.cap == cap);

    /* No arguments, and empty ones. */
    b.len = 0;
    CHECK_EQ(lw__resp_cmd(&b, 0, NULL, NULL), 0);
    EXPECT(&b, "*0\r\n");
    static const char *const empty[] = {"", "GET", ""};
    b.len = 0;
    CHECK_EQ(cmd(&b, 3, empty), 0);
    EXPECT(&b, "*3\r\n$0\r\n\r\n$3\r\nGET\r\n$0\r\n\r\n");

    lw__resp_free(&b);
    CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
    lw__resp_free(&b); /* twice is harmless */
}

/* Arguments are bytes: NUL, CR, LF, '$', '*' and 0xff go through as they
 * are, counted by their length. */
static void binary(void)
{
    struct lw_resp b = {NULL, 0, 0};
    const char *argv[] = {"EVALSHA", "a\0b", "\r\n", "$1\r\n*", "\xff\x00"};
    size_t lens[] = {7, 3, 2, 5, 2};

    CHECK_EQ(lw__resp_cmd(&b, 5, argv, lens), 0);
    EXPECT(&b, "*5\r\n$7\r\nEVALSHA\r\n$3\r\na\0b\r\n$2\r\n\r\n\r\n"
               "$5\r\n$1\r\n*\r\n$2\r\n\xff\x00\r\n");
    lw__resp_free(&b);
}

/* "$<len>\r\n" for lengths of many digits, and many arguments. */
static void large(void)
{
    struct lw_resp b = {NULL, 0, 0};
    static const size_t sizes[] = {9,   10,   99,    100,     255,
                                   256, 1000, 65536, 1000000, 12345678};
    char head[32];
    char *big = malloc(12345678);

    CHECK(big != NULL);
    for (size_t i = 0; i < 12345678; i++)
        big[i] = (char)(i * 131 + 7);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        const char *argv[] = {"SET", big};
        size_t lens[] = {3, sizes[i]};
        size_t hl = (size_t)snprintf(head, sizeof head, "$%zu\r\n", sizes[i]);

        b.len = 0;
        CHECK_EQ(lw__resp_cmd(&b, 2, argv, lens), 0);
        CHECK_EQ(b.len, 13 + hl + sizes[i] + 2);
        CHECK_MEM(b.p, 13, "*2\r\n$3\r\nSET\r\n", 13);
        CHECK_MEM(b.p + 13, hl, head, hl);
        CHECK_MEM(b.p + 13 + hl, sizes[i], big, sizes[i]);
        CHECK_MEM(b.p + 13 + hl + sizes[i], 2, "\r\n", 2);
        CHECK(b.cap >= b.len);
    }
    lw__resp_free(&b);
    free(big);

    /* 1000 arguments: "*1000". */
    const char **argv = malloc(1000 * sizeof *argv);
    size_t *lens = malloc(1000 * sizeof *lens);
    CHECK(argv != NULL && lens != NULL);
    for (int i = 0; i < 1000; i++) {
        argv[i] = "x";
        lens[i] = 1;
    }
    CHECK_EQ(lw__resp_cmd(&b, 1000, argv, lens), 0);
    CHECK_EQ(b.len, 7 + 1000 * 7);
    CHECK_MEM(b.p, 7, "*1000\r\n", 7);
    for (int i = 0; i < 1000; i++)
        CHECK_MEM(b.p + 7 + 7 * i, 7, "$1\r\nx\r\n", 7);
    lw__resp_free(&b);
    free(argv);
    free(lens);
}

/* An independent reader: the number at *pos up to "\r\n" after the type
 * byte want; advances *pos. */
static size_t read_number(const struct lw_resp *b, size_t *pos, char want)
{
    size_t n = 0, start;

    CHECK(*pos < b->len && b->p[*pos] == want);
    start = ++*pos;
    while (*pos < b->len && b->p[*pos] >= '0' && b->p[*pos] <= '9')
        n = n * 10 + (size_t)(b->p[(*pos)++] - '0');
    CHECK(*pos > start && *pos + 1 < b->len);
    CHECK(b->p[*pos] == '\r' && b->p[*pos + 1] == '\n');
    *pos += 2;
    return n;
}

static uint64_t rng = 0x853c49e6748fea9bULL;

static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

/* Random commands, several to a buffer, read back argument by argument. */
static void round_trip(void)
{
    struct lw_resp b = {NULL, 0, 0};
    static char bytes[8][600];
    const char *argv[8];
    size_t lens[8];

    for (int round = 0; round < 300; round++) {
        int ncmd = 1 + (int)(rnd() % 4), argcs[4];
        size_t all[4][8];

        b.len = 0;
        for (int c = 0; c < ncmd; c++) {
            argcs[c] = 1 + (int)(rnd() % 8);
            for (int i = 0; i < argcs[c]; i++) {
                lens[i] = rnd() % 600;
                all[c][i] = lens[i];
                argv[i] = bytes[i];
            }
            /* Contents known from (c, i, j) alone, checked below. */
            for (int i = 0; i < argcs[c]; i++)
                for (size_t j = 0; j < lens[i]; j++)
                    bytes[i][j] = (char)(round + c * 7 + i * 13 + (int)j);
            CHECK_EQ(lw__resp_cmd(&b, argcs[c], argv, lens), 0);
        }
        size_t pos = 0;
        for (int c = 0; c < ncmd; c++) {
            CHECK_EQ(read_number(&b, &pos, '*'), argcs[c]);
            for (int i = 0; i < argcs[c]; i++) {
                size_t n = read_number(&b, &pos, '$');
                CHECK_EQ(n, all[c][i]);
                CHECK(pos + n + 2 <= b.len);
                for (size_t j = 0; j < n; j++)
                    CHECK_EQ((unsigned char)b.p[pos + j],
                             (unsigned char)(round + c * 7 + i * 13 + (int)j));
                CHECK_MEM(b.p + pos + n, 2, "\r\n", 2);
                pos += n + 2;
            }
        }
        CHECK_EQ(pos, b.len);
    }
    lw__resp_free(&b);
}

/* Out of memory: -1, and the commands already in the buffer stay whole. */
static void no_memory(void)
{
    struct lw_resp b = {NULL, 0, 0};
    static const char *const ping[] = {"PING"};
    char *big = calloc(1, 4096);
    const char *argv[] = {"SET", big};
    size_t lens[] = {3, 4096};

    CHECK(big != NULL);
    fail_reallocs = 1;
    CHECK_EQ(cmd(&b, 1, ping), -1);
    CHECK(b.p == NULL && b.len == 0 && b.cap == 0);

    CHECK_EQ(cmd(&b, 1, ping), 0);
    char *p = b.p;
    size_t cap = b.cap;
    fail_reallocs = 1;
    CHECK_EQ(lw__resp_cmd(&b, 2, argv, lens), -1);
    CHECK(b.p == p && b.cap == cap);
    EXPECT(&b, "*1\r\n$4\r\nPING\r\n");

    CHECK_EQ(lw__resp_cmd(&b, 2, argv, lens), 0);
    CHECK_EQ(b.len, 14 + 13 + 7 + 4096 + 2);
    lw__resp_free(&b);
    free(big);
}

/* The number formatter every command's lengths and lock arguments go
 * through, against printf at the edges and at random. */
static void numbers(void)
{
    static const uint64_t edges[] = {
        0, 1, 9, 10, 15, 16, 99, 100, 4294967295u, 4294967296u, UINT64_MAX};
    char got[LW_FMT_U64_MAX], want[32];
    uint64_t v = 88172645463325252ull;

    for (size_t i = 0; i < sizeof edges / sizeof edges[0] + 1000; i++) {
        uint64_t n = i < sizeof edges / sizeof edges[0] ? edges[i] : v;
        v ^= v << 13, v ^= v >> 7, v ^= v << 17;
        snprintf(want, sizeof want, "%llu", (unsigned long long)n);
        CHECK_EQ(lw__fmt_dec(got, n), strlen(want));
        CHECK(strcmp(got, want) == 0);
        snprintf(want, sizeof want, "%llx", (unsigned long long)n);
        CHECK_EQ(lw__fmt_hex(got, n), strlen(want));
        CHECK(strcmp(got, want) == 0);
    }
}

int main(void)
{
    numbers();
    small();
    binary();
    large();
    round_trip();
    no_memory();
    printf("unit_resp: ok\n");
    return 0;
}

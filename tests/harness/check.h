/*
 * Tiny assertions for every C test program.  A failed check prints file:line
 * and what was compared, then exits with status 1 so ctest records a failure.
 * exit() (not abort()) so the harness's atexit hook still stops the
 * redis-servers this process started.
 */
#ifndef LW_TEST_CHECK_H
#define LW_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void check_escaped_(const char *p, size_t n)
{
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 512; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\r')
            fputs("\\r", stderr);
        else if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '"' || c == '\\')
            fprintf(stderr, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputs(n > 512 ? "\"..." : "\"", stderr);
}

static inline void check_mem_(const char *file, int line, const char *aexpr,
                              const char *bexpr, const char *a, size_t alen,
                              const char *b, size_t blen)
{
    if (alen == blen && (alen == 0 || memcmp(a, b, alen) == 0))
        return;
    fprintf(stderr, "%s:%d: CHECK failed: %s == %s\n  got  (%zu) ", file, line,
            aexpr, bexpr, alen);
    check_escaped_(a, alen);
    fprintf(stderr, "\n  want (%zu) ", blen);
    check_escaped_(b, blen);
    fputc('\n', stderr);
    fflush(stdout);
    fflush(stderr);
    exit(1);
}

#define CHECK_FAIL_(...)                                                       \
    do {                                                                       \
        fprintf(stderr, "%s:%d: CHECK failed: ", __FILE__, __LINE__);          \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        fflush(stdout);                                                        \
        fflush(stderr);                                                        \
        exit(1);                                                               \
    } while (0)

/* CHECK(cond): cond must hold. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            CHECK_FAIL_("%s", #cond);                                          \
    } while (0)

/* CHECK_MSG(cond, fmt, ...): cond must hold; the message explains why not. */
#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond))                                                           \
            CHECK_FAIL_(__VA_ARGS__);                                          \
    } while (0)

/* Integer equality, printing both values. */
#define CHECK_EQ(a, b)                                                         \
    do {                                                                       \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
        if (check_a_ != check_b_)                                              \
            CHECK_FAIL_("%s == %s (%lld != %lld)", #a, #b, check_a_,           \
                        check_b_);                                             \
    } while (0)

#define CHECK_NE(a, b)                                                         \
    do {                                                                       \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
        if (check_a_ == check_b_)                                              \
            CHECK_FAIL_("%s != %s (both %lld)", #a, #b, check_a_);             \
    } while (0)

/* lo <= v <= hi, printing the value: for generous timing bounds. */
#define CHECK_RANGE(v, lo, hi)                                                 \
    do {                                                                       \
        long long check_v_ = (long long)(v);                                   \
        long long check_lo_ = (long long)(lo), check_hi_ = (long long)(hi);    \
        if (check_v_ < check_lo_ || check_v_ > check_hi_)                      \
            CHECK_FAIL_("%s = %lld not in [%lld, %lld]", #v, check_v_,         \
                        check_lo_, check_hi_);                                 \
    } while (0)

/* Byte strings equal: [a, a+alen) and [b, b+blen), printing both escaped.
 * For bytes that may hold NULs, CR/LF or non-ASCII. */
#define CHECK_MEM(a, alen, b, blen)                                            \
    check_mem_(__FILE__, __LINE__, #a, #b, (a), (alen), (b), (blen))

/* C strings equal (either may be NULL). */
#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *check_sa_ = (a), *check_sb_ = (b);                         \
        if (check_sa_ == NULL || check_sb_ == NULL                             \
                ? check_sa_ != check_sb_                                       \
                : strcmp(check_sa_, check_sb_) != 0)                           \
            CHECK_FAIL_("%s == %s (\"%s\" != \"%s\")", #a, #b,                 \
                        check_sa_ ? check_sa_ : "(null)",                      \
                        check_sb_ ? check_sb_ : "(null)");                     \
    } while (0)

/* A lockweave call returned want, naming both codes.  Needs <lockweave.h>
 * and lw_strerror() where it is used. */
#define CHECK_RC(expr, want)                                                   \
    do {                                                                       \
        int check_rc_ = (expr), check_want_ = (want);                          \
        if (check_rc_ != check_want_)                                          \
            CHECK_FAIL_("%s returned %d (%s), expected %d (%s)", #expr,        \
                        check_rc_, lw_strerror(check_rc_), check_want_,        \
                        lw_strerror(check_want_));                             \
    } while (0)

#endif /* LW_TEST_CHECK_H */

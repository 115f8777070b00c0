/*
 * Tiny assertions for the test programs.  A failed check prints file:line and
 * what was compared, then exits with status 1 so ctest records a failure.
 * exit() (not abort()) so the harness's atexit hook still stops the
 * redis-servers this process started.
 */
#ifndef LW_TEST_CHECK_H
#define LW_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

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

#endif /* LW_TEST_CHECK_H */

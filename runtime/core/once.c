/*
 * Run once: what the woven wrapper stores after a run that succeeded, and
 * reads after a take that found one (lockweave.h, lw_once_done_i64()).
 * The outcome is text, "<type>:<value>", so that every version and
 * platform reads it the same way: i: and u: decimal 64-bit integers, d: a
 * double as %.17g (which reads back as the same double), v: none.
 */
#include <errno.h>
#include <lockweave.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/guard.h"
#include "core/outcome.h"

static void set(lw_guard *gu, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set(lw_guard *gu, const char *fmt, ...)
{
    struct lw_outcome *o = lw__outcome();
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(o->text, sizeof o->text, fmt, ap);
    va_end(ap);
    /* Every format below fits; one that did not would store a wrong value,
     * so it stores none (a failed run) instead. */
    o->hold = &lw__gimpl(gu)->lease;
    o->len = n > 0 && (size_t)n < sizeof o->text ? (uint8_t)n : 0;
}

void lw_once_done_i64(lw_guard *g, int64_t v)
{
    set(g, "i:%lld", (long long)v);
}

void lw_once_done_u64(lw_guard *g, uint64_t v)
{
    set(g, "u:%llu", (unsigned long long)v);
}

void lw_once_done_double(lw_guard *g, double v)
{
    set(g, "d:%.17g", v);
}

void lw_once_done_void(lw_guard *g)
{
    set(g, "v");
}

/* The outcome g's take found, if it is of type tag ('i', 'u', 'd'):
 * its value's text; else NULL. */
static const char *value_of(const lw_guard *g, char tag)
{
    const struct lw_outcome *o = lw__outcome();

    if (o->hold != &((const struct lw_gimpl *)(const void *)g)->lease ||
        o->len < 3 || o->text[0] != tag || o->text[1] != ':')
        return NULL;
    return o->text + 2;
}

int lw_once_outcome_i64(const lw_guard *g, int64_t *v)
{
    const char *s = value_of(g, 'i');
    char *end;
    long long x;

    if (s == NULL)
        return LW_EINVAL;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return LW_EINVAL;
    *v = (int64_t)x;
    return LW_OK;
}

int lw_once_outcome_u64(const lw_guard *g, uint64_t *v)
{
    const char *s = value_of(g, 'u');
    char *end;
    unsigned long long x;

    if (s == NULL || *s == '-')
        return LW_EINVAL;
    errno = 0;
    x = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return LW_EINVAL;
    *v = (uint64_t)x;
    return LW_OK;
}

int lw_once_outcome_double(const lw_guard *g, double *v)
{
    const char *s = value_of(g, 'd');
    char *end;
    double x;

    if (s == NULL)
        return LW_EINVAL;
    x = strtod(s, &end); /* ERANGE: a subnormal, stored as it was */
    if (*end != '\0')
        return LW_EINVAL;
    *v = x;
    return LW_OK;
}

/*
 * The REDIS_LOCK argument grammar:
 *   REDIS_LOCK(key, expire, wait [, option = value]...)
 * The scan hands us the arguments after macro expansion, stringized; the
 * written source is only consulted for diagnostic positions.
 */
#include "lwgen.h"

#include <lockweave.h> /* LW_PERMITS_MAX */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAXARGS 32

typedef struct span {
    size_t b, e; /* [b, e) after trimming */
} span;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

/* Skip whitespace, comments and line continuations starting at i. */
static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n) {
        if (is_space(s[i]))
            i++;
        else if (s[i] == '\\' && i + 1 < n &&
                 (s[i + 1] == '\n' || s[i + 1] == '\r'))
            i += 2;
        else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            const char *e = strstr(s + i + 2, "*/");
            i = e ? (size_t)(e - s) + 2 : n;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else
            break;
    }
    return i;
}

/* i at an opening quote: return the index after the closing one. */
static size_t skip_quoted(const char *s, size_t n, size_t i)
{
    char q = s[i++];
    while (i < n && s[i] != q && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n)
            i++;
        i++;
    }
    return i < n ? i + 1 : n;
}

/* Split s[i..n) at top-level commas up to the matching ')' (or the end when
 * stop_at_paren is 0).  Returns the number of arguments, or -1. */
static int split_args(const char *s, size_t n, size_t i, int stop_at_paren,
                      span *out, int max, size_t *end)
{
    int depth = 0, count = 0;
    size_t start = i;
    for (;;) {
        i = skip_ws(s, n, i);
        int at_end = i >= n;
        if (!at_end && (s[i] == '"' || s[i] == '\'')) {
            i = skip_quoted(s, n, i);
            continue;
        }
        char c = at_end ? 0 : s[i];
        if (!at_end && (c == '(' || c == '[' || c == '{')) {
            depth++;
            i++;
            continue;
        }
        int closing = !at_end && (c == ')' || c == ']' || c == '}');
        if (closing && depth > 0) {
            depth--;
            i++;
            continue;
        }
        if (at_end || (closing && stop_at_paren) || (c == ',' && depth == 0)) {
            if (at_end && stop_at_paren)
                return -1;
            if (count == max)
                return -1;
            size_t b = skip_ws(s, n, start), e = i;
            while (e > b && is_space(s[e - 1]))
                e--;
            out[count].b = b;
            out[count].e = e;
            count++;
            if (c != ',' || at_end) {
                if (end)
                    *end = i;
                break;
            }
            start = ++i;
            continue;
        }
        i++;
    }
    /* "REDIS_LOCK()" is one empty argument; call it none. */
    if (count == 1 && out[0].b == out[0].e)
        return 0;
    return count;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * Decode one or more adjacent plain string literals in s[b..e) (the C
 * escapes included).  map, when not NULL, gets for each output byte the
 * index in s of where it was written.  Returns -1 when the span is not only
 * string literals.
 */
static int decode_strings(const char *s, size_t b, size_t e, lw_buf *out,
                          size_t **map)
{
    size_t *m = NULL, mcap = 0;
    size_t i = b;
    int nlit = 0;
    while ((i = skip_ws(s, e, i)) < e) {
        if (s[i] == 'u' && i + 2 < e && s[i + 1] == '8' && s[i + 2] == '"')
            i += 2; /* u8"..." is plain bytes too */
        if (s[i] != '"')
            goto fail;
        nlit++;
        i++;
        while (i < e && s[i] != '"') {
            size_t at = i;
            unsigned char c = (unsigned char)s[i++];
            if (c == '\\' && i < e) {
                char x = s[i++];
                if (escape_char(x) >= 0)
                    c = (unsigned char)escape_char(x);
                else
                    switch (x) {
                    case 'x': {
                        unsigned v = 0;
                        while (i < e && hexval(s[i]) >= 0)
                            v = v * 16 + (unsigned)hexval(s[i++]);
                        c = (unsigned char)v;
                        break;
                    }
                    default:
                        if (x >= '0' && x <= '7') {
                            unsigned v = (unsigned)(x - '0');
                            for (int k = 0;
                                 k < 2 && i < e && s[i] >= '0' && s[i] <= '7';
                                 k++)
                                v = v * 8 + (unsigned)(s[i++] - '0');
                            c = (unsigned char)v;
                        } else
                            c = (unsigned char)x; /* \\ \" \' \? */
                    }
            }
            buf_putc(out, (char)c);
            if (map) {
                if (out->len > mcap) {
                    mcap = mcap ? mcap * 2 : 64;
                    m = xrealloc(m, mcap * sizeof *m);
                }
                m[out->len - 1] = at;
            }
        }
        if (i >= e)
            goto fail;
        i++;
    }
    if (!nlit)
        goto fail;
    buf_put(out, "", 0);
    if (map)
        *map = m;
    else
        free(m);
    return 0;
fail:
    free(m);
    return -1;
}

size_t annot_arg_off(const lw_annot *a, int i)
{
    return a->raw_ok && i < a->nraw ? a->raw_off[i] : a->at;
}

size_t annot_key_off(const lw_annot *a, size_t i)
{
    if (a->keymap && i < a->keylen)
        return a->keymap[i];
    if (a->keymap && a->keylen && i == a->keylen)
        return a->keymap[i - 1] + 1;
    return annot_arg_off(a, 0);
}

/* Find where the written REDIS_LOCK(...) puts each argument.  Only
 * positions: the values come from the expanded text. */
static void locate_raw(lw_annot *a, int nexp)
{
    const lw_src *src = a->src;
    a->raw_ok = 0;
    a->nraw = 0;
    if (!src || !src->text || a->at >= src->len)
        return;
    size_t i = a->at, n = src->len;
    static const char kw[] = "REDIS_LOCK";
    if (n - i < sizeof kw - 1 || memcmp(src->text + i, kw, sizeof kw - 1) != 0)
        return; /* invoked through a user macro: positions are that macro's */
    i = skip_ws(src->text, n, i + sizeof kw - 1);
    if (i >= n || src->text[i] != '(')
        return;
    span sp[MAXARGS];
    int cnt = split_args(src->text, n, i + 1, 1, sp, MAXARGS, NULL);
    if (cnt <= 0)
        return;
    for (int k = 0; k < cnt; k++)
        a->raw_off[k] = sp[k].b;
    a->nraw = cnt;
    a->raw_ok = cnt == nexp;
    if (a->raw_ok) {
        lw_buf tmp = {0};
        size_t *map = NULL;
        if (decode_strings(src->text, sp[0].b, sp[0].e, &tmp, &map) == 0)
            a->keymap = map;
        buf_free(&tmp);
    }
}

/* A duration: 500ms, 10s, 2m, 1h, or a bare integer meaning seconds. */
static int parse_duration(lw_annot *a, int argi, const char *what,
                          const char *s, size_t len, int allow_zero,
                          uint32_t *out)
{
    char *t = xstrndup(s, len);
    char *p = t;
    int rc = -1;
    size_t off = annot_arg_off(a, argi);
    /* A macro like #define TTL (10s) arrives parenthesized. */
    while (*p == '(' && len >= 2 && t[len - 1] == ')') {
        p++;
        t[--len] = 0;
        while (*p == ' ')
            p++;
    }
    if (*p == '-') {
        diag(LW_DIAG_ERROR, a->src, off, "%s must not be negative: '%s'", what,
             t);
        goto cleanup;
    }
    if (!isdigit((unsigned char)*p)) {
        diag(LW_DIAG_ERROR, a->src, off,
             "bad %s '%s': write a duration like 500ms, 10s or 2m (a bare "
             "number is seconds)",
             what, t);
        goto cleanup;
    }
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    /* Integer suffixes from macros such as #define TTL 10UL. */
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
        end++;
    unsigned long long mult;
    if (strcmp(end, "ms") == 0)
        mult = 1;
    else if (strcmp(end, "s") == 0 || *end == 0)
        mult = 1000;
    else if (strcmp(end, "m") == 0)
        mult = 60000;
    else if (strcmp(end, "h") == 0)
        mult = 3600000;
    else {
        diag(LW_DIAG_ERROR, a->src, off,
             "bad %s '%s': unknown unit '%s' (use ms, s, m or h)", what, t,
             end);
        goto cleanup;
    }
    if (errno || v > UINT32_MAX / mult) {
        diag(LW_DIAG_ERROR, a->src, off, "%s '%s' is too long (at most %u ms)",
             what, t, (unsigned)UINT32_MAX);
        goto cleanup;
    }
    if (v == 0 && !allow_zero) {
        diag(LW_DIAG_ERROR, a->src, off, "%s must be greater than zero", what);
        goto cleanup;
    }
    *out = (uint32_t)(v * mult);
    rc = 0;
cleanup:
    free(t);
    return rc;
}

/* val as a decimal integer (C suffixes u and l allowed) in [0, max], or
 * -1. */
static long long whole_number(const char *val, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
        end++;
    if (*end || errno || v < 0 || v > max || !isdigit((unsigned char)val[0]))
        return -1;
    return v;
}

enum {
    OPT_MAX_RENEW,
    OPT_ON_FAIL,
    OPT_SKIP_IF,
    OPT_HOLD,
    OPT_PERMITS,
    OPT_MODE,
    NOPTS
};
static const char *const option_names[NOPTS] = {
    "max_renew", "on_fail", "skip_if", "hold_at_least", "permits", "mode"};

int annot_parse(lw_annot *a)
{
    const char *s = a->text;
    size_t n = strlen(s);
    span sp[MAXARGS];
    int errs = diag_errors();
    int seen[NOPTS] = {-1, -1, -1, -1, -1, -1};

    a->max_renew = -1;
    int cnt = split_args(s, n, 0, 0, sp, MAXARGS, NULL);
    if (cnt < 0) {
        diag(LW_DIAG_ERROR, a->src, a->at,
             "cannot read the REDIS_LOCK arguments");
        return -1;
    }
    locate_raw(a, cnt);
    if (cnt < 3) {
        diag(LW_DIAG_ERROR, a->src, a->at,
             "REDIS_LOCK needs a key, an expire time and a wait time: "
             "REDIS_LOCK(\"key:{param}\", 10s, 5s)");
        return -1;
    }

    lw_buf key = {0};
    if (decode_strings(s, sp[0].b, sp[0].e, &key, NULL) != 0) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, 0),
             "the lock key must be a string literal, not '%.*s'",
             (int)(sp[0].e - sp[0].b), s + sp[0].b);
    } else {
        a->keylen = key.len;
        a->key = buf_take(&key);
    }
    buf_free(&key);

    parse_duration(a, 1, "expire time", s + sp[1].b, sp[1].e - sp[1].b, 0,
                   &a->expire_ms);
    parse_duration(a, 2, "wait time", s + sp[2].b, sp[2].e - sp[2].b, 1,
                   &a->wait_ms);

    for (int i = 3; i < cnt; i++) {
        const char *o = s + sp[i].b;
        size_t olen = sp[i].e - sp[i].b;
        size_t nlen = 0;
        while (nlen < olen &&
               (isalnum((unsigned char)o[nlen]) || o[nlen] == '_'))
            nlen++;
        size_t eq = nlen;
        while (eq < olen && is_space(o[eq]))
            eq++;
        if (nlen == 0 || eq >= olen || o[eq] != '=' ||
            (eq + 1 < olen && o[eq + 1] == '=')) {
            diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                 "expected 'option = value' after the wait time, not '%.*s'",
                 (int)olen, o);
            continue;
        }
        size_t vb = eq + 1;
        while (vb < olen && is_space(o[vb]))
            vb++;
        int which = -1;
        for (int k = 0; k < NOPTS; k++)
            if (strlen(option_names[k]) == nlen &&
                memcmp(option_names[k], o, nlen) == 0)
                which = k;
        if (which < 0) {
            diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                 "unknown REDIS_LOCK option '%.*s' (known: max_renew, on_fail, "
                 "skip_if, hold_at_least, permits, mode)",
                 (int)nlen, o);
            continue;
        }
        if (seen[which] >= 0) {
            diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                 "option '%s' given twice", option_names[which]);
            diag(LW_DIAG_NOTE, a->src, annot_arg_off(a, seen[which]),
                 "first given here");
            continue;
        }
        seen[which] = i;
        if (vb >= olen) {
            diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                 "option '%s' needs a value", option_names[which]);
            continue;
        }
        if (which == OPT_HOLD) {
            parse_duration(a, i, "hold_at_least", o + vb, olen - vb, 1,
                           &a->hold_ms);
            continue;
        }
        char *val = xstrndup(o + vb, olen - vb);
        if (which == OPT_MAX_RENEW) {
            long long v = whole_number(val, INT32_MAX);
            if (v < 0)
                diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                     "max_renew must be a whole number >= 0, not '%s'", val);
            else
                a->max_renew = (int32_t)v;
            free(val);
        } else if (which == OPT_MODE) {
            if (strcmp(val, "read") == 0 || strcmp(val, "write") == 0)
                a->read = val[0] == 'r';
            else
                diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                     "mode must be read or write, not '%s'", val);
            free(val);
        } else if (which == OPT_PERMITS) {
            long long v = whole_number(val, LW_PERMITS_MAX);
            if (v < 1)
                diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
                     "permits must be a whole number from 1 to %d, not '%s'",
                     LW_PERMITS_MAX, val);
            else
                a->permits = (uint32_t)v;
            free(val);
        } else if (which == OPT_ON_FAIL) {
            a->on_fail = val;
            a->on_fail_off = annot_arg_off(a, i);
            a->has_on_fail = 1;
        } else {
            a->skip_if = val;
            a->skip_if_off = annot_arg_off(a, i);
        }
    }
    if (a->read && seen[OPT_PERMITS] >= 0)
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, seen[OPT_PERMITS]),
             "permits cannot be given with mode = read: a semaphore's "
             "holders are all alike");
    /* The hold is kept by the key's TTL: it cannot outlast the lease. */
    if (seen[OPT_HOLD] >= 0 && a->hold_ms > a->expire_ms && a->expire_ms > 0)
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, seen[OPT_HOLD]),
             "hold_at_least (%u ms) is longer than the expire time (%u ms): "
             "the key cannot stay locked past its lease",
             (unsigned)a->hold_ms, (unsigned)a->expire_ms);
    return diag_errors() == errs ? 0 : -1;
}

void annot_free(lw_annot *a)
{
    free(a->text);
    free(a->keymap);
    free(a->key);
    free(a->on_fail);
    free(a->skip_if);
    memset(a, 0, sizeof *a);
}

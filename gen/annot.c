/*
 * The REDIS_LOCK argument grammar:
 *   REDIS_LOCK(key, expire, wait [, option = value]...)
 * and REDIS_ONCE's:
 *   REDIS_ONCE(key, window [, option = value]...)
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
    const char *kw = a->once ? "REDIS_ONCE" : "REDIS_LOCK";
    if (n - i < 10 || memcmp(src->text + i, kw, 10) != 0)
        return; /* invoked through a user macro: positions are that macro's */
    i = skip_ws(src->text, n, i + 10);
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

/* ---- the options ------------------------------------------------------ */

/* A semaphore's permits are alike: a shared holder has no meaning there. */
static void check_permits(const lw_annot *a, size_t off)
{
    if (a->opts.read)
        diag(LW_DIAG_ERROR, a->src, off,
             "permits cannot be given with mode = read: a semaphore's "
             "holders are all alike");
}

/* The hold is kept by the key's TTL: it cannot outlast the lease.  (An
 * expire time of 0 is an error of its own.) */
static void check_hold(const lw_annot *a, size_t off)
{
    if (a->opts.hold_ms > a->expire_ms && a->expire_ms > 0)
        diag(LW_DIAG_ERROR, a->src, off,
             "hold_at_least (%u ms) is longer than the expire time (%u ms): "
             "the key cannot stay locked past its lease",
             (unsigned)a->opts.hold_ms, (unsigned)a->expire_ms);
}

/* Run once: a dead run's lease must end within the window it blocks, or
 * callers would wait past the window on a run that can no longer finish
 * (docs/weaving.md). */
static void check_once_expire(const lw_annot *a, size_t off)
{
    if (a->opts.once_expire > a->window_ms && a->window_ms > 0)
        diag(LW_DIAG_ERROR, a->src, off,
             "expire (%u ms) is longer than the window (%u ms): a run that "
             "died would keep the key past its window",
             (unsigned)a->opts.once_expire, (unsigned)a->window_ms);
}

static const lw_optword modes[] = {
    {"read", 1, "LW_LOCK_READ"}, {"write", 0, NULL}, {NULL, 0, NULL}};

const lw_option lw_options[] = {
    {.name = "max_renew",
     .kind = LW_OPT_INT,
     .field = offsetof(lw_lockopts, max_renew),
     .def = -1,
     .range = {0, INT32_MAX},
     .only = LW_ONLY_LOCK,
     .woven = {"max_renew", NULL}},
    {.name = "on_fail",
     .kind = LW_OPT_EXPR,
     .field = offsetof(lw_func, on_fail),
     .needs_result = 1},
    {.name = "skip_if",
     .kind = LW_OPT_EXPR,
     .field = offsetof(lw_func, skip_if),
     .only = LW_ONLY_LOCK},
    {.name = "hold_at_least",
     .kind = LW_OPT_DURATION,
     .field = offsetof(lw_lockopts, hold_ms),
     .check = check_hold,
     .only = LW_ONLY_LOCK,
     .woven = {"hold_at_least_ms", "u"}},
    {.name = "permits",
     .kind = LW_OPT_INT,
     .field = offsetof(lw_lockopts, permits),
     .range = {1, LW_PERMITS_MAX},
     .check = check_permits,
     .only = LW_ONLY_LOCK,
     .woven = {"permits", "u"}},
    {.name = "mode",
     .kind = LW_OPT_WORD,
     .field = offsetof(lw_lockopts, read),
     .words = modes,
     .only = LW_ONLY_LOCK,
     .woven = {"flags", NULL}},
    /* The call asks for the lock on this loop and returns; the body runs
     * there once it is held.  One lease takes all of a function's keys, on
     * one loop: alias macros that each carry it may all give it. */
    {.name = "loop",
     .kind = LW_OPT_EXPR,
     .field = offsetof(lw_func, loop),
     .void_only = "its call returns before the body runs",
     .type = "lw_loop *",
     .agree = 1,
     .only = LW_ONLY_LOCK},
    /* REDIS_ONCE's: the mark's lease while a run goes (default 30 s, at
     * most the window), how long a caller waits for a run's outcome, and
     * when a run that returned failed (the key then free for a retry). */
    {.name = "expire",
     .kind = LW_OPT_DURATION,
     .field = offsetof(lw_lockopts, once_expire),
     .range = {1, 0},
     .check = check_once_expire,
     .only = LW_ONLY_ONCE},
    {.name = "wait",
     .kind = LW_OPT_DURATION,
     .field = offsetof(lw_lockopts, once_wait),
     .only = LW_ONLY_ONCE},
    {.name = "failed_if",
     .kind = LW_OPT_EXPR,
     .field = offsetof(lw_func, failed_if),
     .needs_result = 1,
     .cond = 1,
     .only = LW_ONLY_ONCE},
    {.name = NULL},
};

_Static_assert(sizeof lw_options / sizeof *lw_options - 1 <= LW_OPTIONS_MAX,
               "more options than LW_OPTIONS_MAX");

static void lockopt_set(lw_lockopts *v, const lw_option *o, int64_t x)
{
    *(int64_t *)((char *)v + o->field) = x;
}

size_t annot_option_off(const lw_annot *a, int k)
{
    return a->given[k] >= 0 ? annot_arg_off(a, a->given[k]) : a->at;
}

/* Option o's value val, written as argument i: a duration. */
static void parse_ms(lw_annot *a, int i, const lw_option *o, const char *val)
{
    uint32_t ms;
    if (parse_duration(a, i, o->name, val, strlen(val), o->range.min == 0,
                       &ms) == 0)
        lockopt_set(&a->opts, o, ms);
}

/* Option o's value val, written as argument i: a whole number. */
static void parse_int(lw_annot *a, int i, const lw_option *o, const char *val)
{
    long long v = whole_number(val, o->range.max);
    if (v >= o->range.min)
        lockopt_set(&a->opts, o, v);
    else if (o->range.max == INT32_MAX)
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
             "%s must be a whole number >= %lld, not '%s'", o->name,
             (long long)o->range.min, val);
    else
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
             "%s must be a whole number from %lld to %lld, not '%s'", o->name,
             (long long)o->range.min, (long long)o->range.max, val);
}

/* Option o's value val, written as argument i: one of its words. */
static void parse_word(lw_annot *a, int i, const lw_option *o, const char *val)
{
    const lw_optword *w = o->words;
    while (w->word && strcmp(val, w->word) != 0)
        w++;
    if (w->word) {
        lockopt_set(&a->opts, o, w->value);
        return;
    }
    lw_buf list = {0};
    for (w = o->words; w->word; w++) {
        if (w != o->words)
            buf_puts(&list, w[1].word ? ", " : " or ");
        buf_puts(&list, w->word);
    }
    diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i), "%s must be %s, not '%s'",
         o->name, list.p, val);
    buf_free(&list);
}

/* The value v[0..len) of option k of lw_options, written as argument i. */
static void parse_value(lw_annot *a, int i, int k, const char *v, size_t len)
{
    const lw_option *o = &lw_options[k];
    char *val = xstrndup(v, len);
    switch (o->kind) {
    case LW_OPT_DURATION:
        parse_ms(a, i, o, val);
        break;
    case LW_OPT_INT:
        parse_int(a, i, o, val);
        break;
    case LW_OPT_WORD:
        parse_word(a, i, o, val);
        break;
    case LW_OPT_EXPR:
        a->expr[k] = val; /* the compiler reads it, in the wrapper */
        return;
    }
    free(val);
}

/* Whether a (REDIS_LOCK or REDIS_ONCE) takes option o. */
static int takes(const lw_annot *a, const lw_option *o)
{
    return o->only == 0 || o->only == (a->once ? LW_ONLY_ONCE : LW_ONLY_LOCK);
}

/* The index in lw_options of the option named name[0..len), or -1. */
static int find_option(const char *name, size_t len)
{
    for (int k = 0; lw_options[k].name; k++)
        if (strlen(lw_options[k].name) == len &&
            memcmp(lw_options[k].name, name, len) == 0)
            return k;
    return -1;
}

static void report_unknown(const lw_annot *a, int i, const char *name,
                           size_t len)
{
    lw_buf known = {0};
    for (int k = 0; lw_options[k].name; k++)
        if (takes(a, &lw_options[k]))
            buf_printf(&known, "%s%s", known.len ? ", " : "",
                       lw_options[k].name);
    diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
         "unknown %s option '%.*s' (known: %s)",
         a->once ? "REDIS_ONCE" : "REDIS_LOCK", (int)len, name, known.p);
    buf_free(&known);
}

/* o[0..len) as "name = value": the length of the name and where the value
 * starts (len: none), or -1. */
static int split_option(const char *o, size_t len, size_t *nlen, size_t *vb)
{
    size_t n = 0;
    while (n < len && (isalnum((unsigned char)o[n]) || o[n] == '_'))
        n++;
    size_t eq = n;
    while (eq < len && is_space(o[eq]))
        eq++;
    if (n == 0 || eq >= len || o[eq] != '=' ||
        (eq + 1 < len && o[eq + 1] == '='))
        return -1;
    size_t v = eq + 1;
    while (v < len && is_space(o[v]))
        v++;
    *nlen = n;
    *vb = v;
    return 0;
}

/* Argument i, o[0..len): an option, given once, with a value. */
static void parse_option(lw_annot *a, int i, const char *o, size_t len)
{
    size_t nlen, vb;
    if (split_option(o, len, &nlen, &vb) != 0) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
             "expected 'option = value' after the wait time, not '%.*s'",
             (int)len, o);
        return;
    }
    int k = find_option(o, nlen);
    if (k >= 0 && a->once && lw_options[k].field == offsetof(lw_func, loop) &&
        lw_options[k].kind == LW_OPT_EXPR) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
             "REDIS_ONCE does not take loop = yet: run once blocks its "
             "caller; call the function from a worker thread instead");
        return;
    }
    if (k < 0 || !takes(a, &lw_options[k])) {
        report_unknown(a, i, o, nlen);
        return;
    }
    if (a->given[k] >= 0) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
             "option '%s' given twice", lw_options[k].name);
        diag(LW_DIAG_NOTE, a->src, annot_option_off(a, k), "first given here");
        return;
    }
    a->given[k] = i;
    if (vb >= len) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, i),
             "option '%s' needs a value", lw_options[k].name);
        return;
    }
    parse_value(a, i, k, o + vb, len - vb);
}

/* The checks that need all nargs arguments read, in the order the options
 * are written. */
static void check_options(const lw_annot *a, int nargs)
{
    for (int i = a->once ? 2 : 3; i < nargs; i++)
        for (int k = 0; lw_options[k].name; k++)
            if (a->given[k] == i && lw_options[k].check)
                lw_options[k].check(a, annot_arg_off(a, i));
}

static void parse_key(lw_annot *a, const char *s, span sp)
{
    lw_buf key = {0};
    if (decode_strings(s, sp.b, sp.e, &key, NULL) != 0) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, 0),
             "the lock key must be a string literal, not '%.*s'",
             (int)(sp.e - sp.b), s + sp.b);
    } else {
        a->keylen = key.len;
        a->key = buf_take(&key);
    }
    buf_free(&key);
}

/* The default lease of a run's mark, at most the window. */
#define ONCE_EXPIRE_MS 30000u

/* REDIS_ONCE(key, window [, option = value]...): sp[0..cnt) split. */
static int once_parse(lw_annot *a, const char *s, const span *sp, int cnt,
                      int errs)
{
    if (cnt < 2) {
        diag(LW_DIAG_ERROR, a->src, a->at,
             "REDIS_ONCE needs a key and a window: "
             "REDIS_ONCE(\"order:{id}\", 10m)");
        return -1;
    }
    parse_key(a, s, sp[0]);
    parse_duration(a, 1, "window", s + sp[1].b, sp[1].e - sp[1].b, 0,
                   &a->window_ms);
    for (int i = 2; i < cnt; i++)
        parse_option(a, i, s + sp[i].b, sp[i].e - sp[i].b);
    check_options(a, cnt);
    a->expire_ms = a->opts.once_expire > 0 ? (uint32_t)a->opts.once_expire
                   : a->window_ms < ONCE_EXPIRE_MS ? a->window_ms
                                                   : ONCE_EXPIRE_MS;
    a->wait_ms = (uint32_t)a->opts.once_wait;
    return diag_errors() == errs ? 0 : -1;
}

int annot_parse(lw_annot *a)
{
    const char *s = a->text;
    size_t n = strlen(s);
    span sp[MAXARGS];
    int errs = diag_errors();

    for (int k = 0; lw_options[k].name; k++) {
        a->given[k] = -1;
        if (lw_options[k].kind != LW_OPT_EXPR)
            lockopt_set(&a->opts, &lw_options[k], lw_options[k].def);
    }
    int cnt = split_args(s, n, 0, 0, sp, MAXARGS, NULL);
    if (cnt < 0) {
        diag(LW_DIAG_ERROR, a->src, a->at,
             "cannot read the REDIS_LOCK arguments");
        return -1;
    }
    locate_raw(a, cnt);
    if (a->once)
        return once_parse(a, s, sp, cnt, errs);
    if (cnt < 3) {
        diag(LW_DIAG_ERROR, a->src, a->at,
             "REDIS_LOCK needs a key, an expire time and a wait time: "
             "REDIS_LOCK(\"key:{param}\", 10s, 5s)");
        return -1;
    }
    parse_key(a, s, sp[0]);
    parse_duration(a, 1, "expire time", s + sp[1].b, sp[1].e - sp[1].b, 0,
                   &a->expire_ms);
    parse_duration(a, 2, "wait time", s + sp[2].b, sp[2].e - sp[2].b, 1,
                   &a->wait_ms);
    for (int i = 3; i < cnt; i++)
        parse_option(a, i, s + sp[i].b, sp[i].e - sp[i].b);
    check_options(a, cnt);
    return diag_errors() == errs ? 0 : -1;
}

void annot_free(lw_annot *a)
{
    free(a->text);
    free(a->keymap);
    free(a->key);
    for (int k = 0; k < LW_OPTIONS_MAX; k++)
        free(a->expr[k]);
    memset(a, 0, sizeof *a);
}

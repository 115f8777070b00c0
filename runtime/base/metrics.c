/*
 * Metrics per annotation site: the registry of sites and the Prometheus
 * text lw_metrics_write() renders (metrics.h).
 *
 * Sites are appended, never removed, to a list that readers walk without a
 * lock; the mutex only keeps two registrations from appending the same
 * labels twice (a woven file compiled into two libraries of one program),
 * since a series may appear once in the text.
 */
#include "base/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/fork.h"

static const uint64_t bounds_us[LW_METRICS_BUCKETS] = {
    100,    500,    1000,    5000,    10000,   25000,    50000,    100000,
    250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000};
static const char *const bounds_s[LW_METRICS_BUCKETS] = {
    "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25",   "0.5",    "1",     "2.5",   "5",    "10",    "30",   "60"};

struct lw_sitectr lw__site_unannotated = {
    .labels = "function=\"\",key=\"\",site=\"unannotated\""};

static struct {
    pthread_mutex_t mu;
    struct lw_sitectr **tail; /* where the next site goes */
} reg = {PTHREAD_MUTEX_INITIALIZER, &lw__site_unannotated.next};

/* s with the label escapes of the text format: backslash, double quote,
 * newline. */
static void put_escaped(char *out, size_t *n, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        const char *e = *s == '\\'   ? "\\\\"
                        : *s == '"'  ? "\\\""
                        : *s == '\n' ? "\\n"
                                     : NULL;
        if (e == NULL) {
            if (out != NULL)
                out[*n] = *s;
            (*n)++;
            continue;
        }
        if (out != NULL)
            memcpy(out + *n, e, 2);
        *n += 2;
    }
}

/* The labels of site, escaped, in one allocation; NULL when out of
 * memory. */
static char *labels_of(const lw_site *site)
{
    const char *file = site->file != NULL ? site->file : "";
    const char *slash = strrchr(file, '/');
    char line[16];
    size_t n = 0;
    char *out = NULL;

    if (slash != NULL)
        file = slash + 1; /* the path depends on where it was built */
    snprintf(line, sizeof line, ":%u", (unsigned)site->line);
    /* Twice: measure, then write. */
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
#define PUT(lit)                                                               \
    do {                                                                       \
        if (out != NULL)                                                       \
            memcpy(out + n, lit, strlen(lit));                                 \
        n += strlen(lit);                                                      \
    } while (0)
        PUT("function=\"");
        put_escaped(out, &n, site->function);
        PUT("\",key=\"");
        put_escaped(out, &n, site->key);
        PUT("\",site=\"");
        put_escaped(out, &n, file);
        PUT(line);
        PUT("\"");
#undef PUT
        if (out != NULL)
            break;
        out = malloc(n + 1);
        if (out == NULL)
            return NULL;
    }
    out[n] = '\0';
    return out;
}

struct lw_sitectr *lw__site_register(lw_site *site, size_t size)
{
    lw_site s;
    struct lw_sitectr *c, *found = NULL;
    char *labels;

    if (site == NULL)
        return &lw__site_unannotated;
    c = __atomic_load_n(&site->lw__impl, __ATOMIC_ACQUIRE);
    if (c != NULL)
        return c;
    /* A newer header's fields (past ours) are labels this version does
     * not render: ignored. */
    lw__struct_in(&s, sizeof s, site, size);
    labels = labels_of(&s);
    if (labels == NULL)
        return &lw__site_unannotated;
    lw__fork_register_mutex(&reg.mu);
    pthread_mutex_lock(&reg.mu);
    c = __atomic_load_n(&site->lw__impl, __ATOMIC_ACQUIRE);
    for (struct lw_sitectr *o = &lw__site_unannotated; c == NULL && o != NULL;
         o = o->next)
        if (strcmp(o->labels, labels) == 0)
            found = o;
    if (c == NULL && found == NULL) {
        found = calloc(1, sizeof *found);
        if (found != NULL) {
            found->labels = labels;
            labels = NULL;
            /* Release: a reader that sees it sees its labels. */
            __atomic_store_n(reg.tail, found, __ATOMIC_RELEASE);
            reg.tail = &found->next;
        } else {
            found = &lw__site_unannotated;
        }
    }
    if (c == NULL) {
        c = found;
        __atomic_store_n(&site->lw__impl, (void *)c, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&reg.mu);
    free(labels);
    return c;
}

void lw_site_register_sized(lw_site *site, size_t size)
{
    lw__site_register(site, size);
}

static void observe(uint64_t *buckets, uint64_t *sum, uint64_t us)
{
    int i = 0;

    while (i < LW_METRICS_BUCKETS && us > bounds_us[i])
        i++;
    __atomic_fetch_add(&buckets[i], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(sum, us, __ATOMIC_RELAXED);
}

void lw__site_wait(struct lw_sitectr *c, uint64_t us)
{
    observe(c->wait, &c->wait_sum_us, us);
}

void lw__site_hold(struct lw_sitectr *c, uint64_t us)
{
    observe(c->hold, &c->hold_sum_us, us);
}

/* ---- the text -------------------------------------------------------- */

/* What is written so far, as snprintf() counts it. */
struct out {
    char *buf;
    size_t size, len;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(room > 0 ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static const struct {
    const char *name, *help;
    size_t off;
} counters[] = {
    {"lockweave_acquired_total",
     "Locks taken (from Redis or handed on in this process), re-entries not "
     "counted.",
     offsetof(struct lw_sitectr, acquired)},
    {"lockweave_contended_total",
     "Acquisitions that found the lock busy at first.",
     offsetof(struct lw_sitectr, contended)},
    {"lockweave_timeouts_total",
     "Acquisitions that gave up when the wait ran out (LW_ETIMEOUT).",
     offsetof(struct lw_sitectr, timeouts)},
    {"lockweave_lost_total", "Locks found lost when released (LW_ELOST).",
     offsetof(struct lw_sitectr, lost)},
    {"lockweave_renewals_total", "Successful watchdog renewals of a lease.",
     offsetof(struct lw_sitectr, renewals)},
};

static struct lw_sitectr *first(void)
{
    return &lw__site_unannotated;
}

static struct lw_sitectr *next(const struct lw_sitectr *c)
{
    return __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
}

static void put_histogram(struct out *o, const char *name, const char *help,
                          size_t buckets_off, size_t sum_off)
{
    put(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (struct lw_sitectr *c = first(); c != NULL; c = next(c)) {
        const uint64_t *b =
            (const uint64_t *)(const void *)((const char *)c + buckets_off);
        const uint64_t *sum =
            (const uint64_t *)(const void *)((const char *)c + sum_off);
        uint64_t cum = 0;

        for (int i = 0; i <= LW_METRICS_BUCKETS; i++) {
            cum += __atomic_load_n(&b[i], __ATOMIC_RELAXED);
            put(o, "%s_bucket{%s,le=\"%s\"} %llu\n", name, c->labels,
                i < LW_METRICS_BUCKETS ? bounds_s[i] : "+Inf",
                (unsigned long long)cum);
        }
        uint64_t us = __atomic_load_n(sum, __ATOMIC_RELAXED);
        put(o, "%s_sum{%s} %llu.%06llu\n", name, c->labels,
            (unsigned long long)(us / 1000000),
            (unsigned long long)(us % 1000000));
        /* The +Inf bucket's value: the format wants them equal. */
        put(o, "%s_count{%s} %llu\n", name, c->labels, (unsigned long long)cum);
    }
}

size_t lw_metrics_write(char *buf, size_t size)
{
    struct out o = {buf, buf != NULL ? size : 0, 0};

    for (size_t k = 0; k < sizeof counters / sizeof counters[0]; k++) {
        put(&o, "# HELP %s %s\n# TYPE %s counter\n", counters[k].name,
            counters[k].help, counters[k].name);
        for (struct lw_sitectr *c = first(); c != NULL; c = next(c)) {
            const uint64_t *v =
                (const uint64_t *)(const void *)((const char *)c +
                                                 counters[k].off);
            put(&o, "%s{%s} %llu\n", counters[k].name, c->labels,
                (unsigned long long)__atomic_load_n(v, __ATOMIC_RELAXED));
        }
    }
    put_histogram(&o, "lockweave_wait_seconds",
                  "Time from asking for a lock to having it or giving up; 0 "
                  "when it was free.",
                  offsetof(struct lw_sitectr, wait),
                  offsetof(struct lw_sitectr, wait_sum_us));
    put_histogram(&o, "lockweave_hold_seconds",
                  "Time from acquiring a lock to releasing it.",
                  offsetof(struct lw_sitectr, hold),
                  offsetof(struct lw_sitectr, hold_sum_us));
    /* vsnprintf() terminated what fit, but a line cut short may have left
     * the terminator before the buffer's last byte: every byte up to it is
     * the text's. */
    if (o.size > 0 && o.len >= o.size)
        o.buf[o.size - 1] = '\0';
    return o.len;
}

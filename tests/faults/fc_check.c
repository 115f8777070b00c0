/*
 * The checker.  Every rule below is one a correct lockweave must keep under
 * the faults it claims to handle; the first few breaches of each are printed
 * with the sections involved.
 *
 *  exclusion  Two sections on one key that overlap in time (the later one
 *             started before the earlier one ended): the one with the lower
 *             fence — the stale holder — must have reported LW_ELOST.  A
 *             section killed inside counts as not reported.  Under a
 *             read/write lock two readers may overlap; a writer and anyone
 *             may not.  Under a semaphore of N: at no instant more than N
 *             sections inside their bodies that did not report LW_ELOST.
 *  order      mutex: sections that ended LW_OK (held the lock throughout),
 *             taken in the order they started: their fences strictly
 *             increase.  read/write: of two LW_OK sections that do not
 *             overlap, at least one a writer, the one that ended first has
 *             the lower fence; and no two LW_OK sections share a fence.
 *             semaphore: no two LW_OK sections share a fence (N holders at
 *             once take their fences in any order).
 *  stale      A section the store refused for a stale fence must have
 *             reported LW_ELOST: a newer holder got in while it ran (for a
 *             reader: a writer with a higher fence touched the key before
 *             the reader's first or second read).
 *  store      Per key, in the store's order: each accepted write is the
 *             previous value plus one (no increment lost), no section's write
 *             is accepted twice, every accepted write is one its section saw
 *             accepted and vice versa, and the final counter equals the
 *             number of accepted writes.
 *  unfinished A section that began and never ended, in a process the driver
 *             did not kill.
 *
 * Times are CLOCK_MONOTONIC, read inside the body: a section's interval is
 * when its body ran, which lies inside the time its caller held the lock.
 */
#include "fc_check.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lockweave.h>

#include "fd.h"
#include "fw_shared.h"

#define RC_KILLED 1000 /* not a lockweave code: the process was killed */
#define EXAMPLES  5
#define MAX_KILLS 4096

struct sec {
    uint64_t sid, fence;
    int64_t start, end;
    int key, rc, held, rd, wr;
    char role;  /* FW_ROLE_*: 'x' mutex, 'w' writer, 'r' reader, 's' permit */
    int body;   /* e record seen: the body finished at end */
    int ended;  /* E record seen, or killed */
    int stored; /* times the store log shows its write */
};

struct wr {
    uint64_t fence, sid;
    int64_t value;
    int key;
};

enum { V_EXCL, V_ORDER, V_STALE, V_STORE, V_UNFIN, V_N };
_Static_assert(V_N == FC_NRULES, "fc_check.h's FC_NRULES");
static const char *const vname[V_N] = {"exclusion", "order", "stale", "store",
                                       "unfinished"};

struct ck {
    FILE *out;
    struct sec *s;
    size_t n, cap;
    struct wr *w;
    size_t nw, capw;
    long long v[V_N];
    long long not_run[16], rejected, overlaps_lost, late, held_stale;
    long long lost, ok, killed, after_fault, shared_overlaps;
    int faults, want_faults, expect, seconds, procs, threads, keys, kind;
    char name[64];
    int64_t last_fault_end;
    struct {
        int pid;
        int64_t t;
    } kills[MAX_KILLS];
    int nkills;
    int64_t final_value[FW_MAX_KEYS];
    uint64_t final_writes[FW_MAX_KEYS];
    int have_final;
};

static void violation(struct ck *c, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void violation(struct ck *c, int kind, const char *fmt, ...)
{
    if (c->v[kind]++ < EXAMPLES) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(c->out, "  violation %s: ", vname[kind]);
        vfprintf(c->out, fmt, ap);
        fputc('\n', c->out);
        va_end(ap);
    }
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 4096;
    void *q = realloc(*p, ncap * size);
    if (q == NULL)
        return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

static int read_worker(struct ck *c, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t open = (size_t)-1; /* this thread's section awaiting its E */
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f)) {
        struct sec x;
        memset(&x, 0, sizeof x);
        x.role = FW_ROLE_MUTEX; /* records from before roles */
        if (line[0] == 'B' &&
            sscanf(line, "B %" SCNu64 " %d %" SCNu64 " %" SCNd64 " %c", &x.sid,
                   &x.key, &x.fence, &x.start, &x.role) >= 4) {
            if (grow((void **)&c->s, &c->cap, c->n, sizeof x) != 0)
                return -1;
            x.end = x.start;
            open = c->n;
            c->s[c->n++] = x;
        } else if (line[0] == 'e' && open != (size_t)-1) {
            struct sec *s = &c->s[open];
            uint64_t sid;
            if (sscanf(line, "e %" SCNu64 " %" SCNd64 " %d %d", &sid, &s->end,
                       &s->rd, &s->wr) == 4 &&
                sid == s->sid)
                s->body = 1;
        } else if (line[0] == 'E' && open != (size_t)-1) {
            struct sec *s = &c->s[open];
            uint64_t sid;
            if (sscanf(line, "E %" SCNu64 " %" SCNd64 " %d %d %d %d", &sid,
                       &s->end, &s->rc, &s->held, &s->rd, &s->wr) == 6 &&
                sid == s->sid)
                s->ended = 1;
            open = (size_t)-1;
        } else if (line[0] == 'F') {
            int key, rc;
            if (sscanf(line, "F %d %d", &key, &rc) == 2)
                c->not_run[-rc & 15]++;
        }
    }
    fclose(f);
    return 0;
}

static int read_driver(struct ck *c, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512], kind[64];
    long long t0, t1;
    int pid;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line,
                   "CASE %63s expect=%d faults=%d procs=%d threads=%d "
                   "keys=%d seconds=%d",
                   c->name, &c->expect, &c->want_faults, &c->procs, &c->threads,
                   &c->keys, &c->seconds) == 7) {
            const char *k = strstr(line, " kind=");
            c->kind = k == NULL                       ? FW_KIND_MUTEX
                      : strncmp(k + 6, "rw", 2) == 0  ? FW_KIND_RW
                      : strncmp(k + 6, "sem", 3) == 0 ? FW_KIND_SEM
                                                      : FW_KIND_MUTEX;
            continue;
        }
        if (sscanf(line, "FAULT %63s %lld %lld", kind, &t0, &t1) == 3) {
            c->faults++;
            if (t1 > c->last_fault_end)
                c->last_fault_end = t1;
        } else if (sscanf(line, "KILLED %d %lld", &pid, &t1) == 2 &&
                   c->nkills < MAX_KILLS) {
            c->kills[c->nkills].pid = pid;
            c->kills[c->nkills++].t = t1;
        } else if (strncmp(line, "STRAGGLER", 9) == 0 ||
                   strncmp(line, "WORKER-FAILED", 13) == 0 ||
                   strncmp(line, "FAULT-ERROR", 11) == 0) {
            fprintf(c->out, "  driver: %s", line);
        }
    }
    fclose(f);
    return c->name[0] ? 0 : -1;
}

static int read_store(struct ck *c, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256];
    if (f == NULL)
        return 0; /* no accepted write at all */
    while (fgets(line, sizeof line, f)) {
        struct wr w;
        if (sscanf(line, "W %d %" SCNu64 " %" SCNu64 " %" SCNd64, &w.key,
                   &w.fence, &w.sid, &w.value) != 4 ||
            w.key < 0 || w.key >= FW_MAX_KEYS)
            continue;
        if (grow((void **)&c->w, &c->capw, c->nw, sizeof w) != 0) {
            fclose(f);
            return -1;
        }
        c->w[c->nw++] = w;
    }
    fclose(f);
    return 0;
}

static int read_final(struct ck *c, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int key;
    long long v;
    unsigned long long mf, n;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "K %d %lld %llu %llu", &key, &v, &mf, &n) == 4 &&
            key >= 0 && key < FW_MAX_KEYS) {
            c->final_value[key] = v;
            c->final_writes[key] = n;
        }
    c->have_final = 1;
    fclose(f);
    return 0;
}

static int read_dir(struct ck *c, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024];
    int rc = 0;
    if (d == NULL)
        return -1;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != 'w' || len < 5 ||
            strcmp(e->d_name + len - 4, ".log") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rc = read_worker(c, path);
    }
    closedir(d);
    snprintf(path, sizeof path, "%s/driver.log", dir);
    if (rc == 0)
        rc = read_driver(c, path);
    snprintf(path, sizeof path, "%s/store.log", dir);
    if (rc == 0)
        rc = read_store(c, path);
    snprintf(path, sizeof path, "%s/final.txt", dir);
    if (rc == 0)
        rc = read_final(c, path);
    return rc;
}

static const struct sec *sort_base;

static int by_key_start(const void *a, const void *b)
{
    const struct sec *x = &sort_base[*(const size_t *)a];
    const struct sec *y = &sort_base[*(const size_t *)b];
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->sid < y->sid ? -1 : x->sid > y->sid;
}

static int by_sid(const void *a, const void *b)
{
    uint64_t x = sort_base[*(const size_t *)a].sid;
    uint64_t y = sort_base[*(const size_t *)b].sid;
    return x < y ? -1 : x > y;
}

/* Sections that never ended: killed (end at the reap) or unfinished. */
static void close_open_sections(struct ck *c)
{
    for (size_t i = 0; i < c->n; i++) {
        struct sec *s = &c->s[i];
        int pid = (int)(s->sid >> 32);
        if (s->ended)
            continue;
        for (int k = 0; k < c->nkills; k++)
            if (c->kills[k].pid == pid) {
                if (!s->body) /* still inside: it ended with the process */
                    s->end = c->kills[k].t;
                s->rc = RC_KILLED;
                s->ended = 1;
                c->killed++;
            }
        if (!s->ended)
            violation(c, V_UNFIN,
                      "section %" PRIu64 " (pid %d, key %d) began "
                      "and never ended",
                      s->sid, pid, s->key);
    }
}

static void describe(char *buf, size_t n, const struct sec *s)
{
    static const char *const roles[] = {"", "writer ", "reader ", "permit "};
    int role = s->role == FW_ROLE_WRITER   ? 1
               : s->role == FW_ROLE_READER ? 2
               : s->role == FW_ROLE_PERMIT ? 3
                                           : 0;
    snprintf(buf, n, "[%spid %d fence %" PRIu64 " %.3f..%.3f s rc %s]",
             roles[role], (int)(s->sid >> 32), s->fence, s->start / 1e9,
             s->end / 1e9, s->rc == RC_KILLED ? "killed" : lw_strerror(s->rc));
}

/* Semaphore: sj begins while the sections in active[0..na) are inside;
 * more than N of them, sj included, that were not told LW_ELOST is a
 * breach.  Checked at each start: the count only grows there. */
static void check_permits(struct ck *c, const size_t *active, size_t na,
                          const struct sec *sj)
{
    size_t told = 0, all = na + 1;
    char a[160];

    if (sj->rc == LW_ELOST)
        return; /* no more untold holders than just before */
    for (size_t q = 0; q < na; q++)
        told += c->s[active[q]].rc == LW_ELOST;
    if (all - told <= FW_SEM_PERMITS) {
        if (all > FW_SEM_PERMITS)
            c->overlaps_lost++;
        if (all - told > 1)
            c->shared_overlaps++; /* permits shared, as they may be */
        return;
    }
    if (c->v[V_EXCL] < EXAMPLES) {
        describe(a, sizeof a, sj);
        fprintf(c->out,
                "  violation exclusion: key %d: %zu holders of %d permits at "
                "once, not told LW_ELOST: %s begins inside",
                sj->key, all - told, FW_SEM_PERMITS, a);
        for (size_t q = 0; q < na; q++)
            if (c->s[active[q]].rc != LW_ELOST) {
                describe(a, sizeof a, &c->s[active[q]]);
                fprintf(c->out, " %s", a);
            }
        fputc('\n', c->out);
    }
    c->v[V_EXCL]++;
}

/* exclusion for every kind, and the mutex's order, per key in start
 * order. */
static void check_sections(struct ck *c, const size_t *idx)
{
    size_t *active = malloc((c->n + 1) * sizeof *active), na = 0;
    const struct sec *last_ok = NULL;
    char a[160], b[160];

    for (size_t j = 0; j < c->n && active; j++) {
        const struct sec *sj = &c->s[idx[j]];
        if (j > 0 && c->s[idx[j - 1]].key != sj->key) {
            na = 0;
            last_ok = NULL;
        }
        size_t keep = 0;
        for (size_t q = 0; q < na; q++) {
            const struct sec *si = &c->s[active[q]];
            if (si->end <= sj->start)
                continue;
            active[keep++] = active[q];
            if (c->kind == FW_KIND_SEM)
                continue; /* counted by check_permits() */
            if (si->role == FW_ROLE_READER && sj->role == FW_ROLE_READER) {
                c->shared_overlaps++; /* readers share the key */
                continue;
            }
            const struct sec *stale = si->fence <= sj->fence ? si : sj;
            if (si->fence > sj->fence)
                c->late++; /* began after a newer holder: entered stale */
            if (stale->rc == LW_ELOST && si->fence != sj->fence) {
                c->overlaps_lost++;
                continue;
            }
            describe(a, sizeof a, si);
            describe(b, sizeof b, sj);
            violation(c, V_EXCL, "key %d: %s overlaps %s", sj->key, a, b);
        }
        na = keep;
        if (c->kind == FW_KIND_SEM && sj->ended)
            check_permits(c, active, na, sj);
        if (sj->ended)
            active[na++] = idx[j];
        if (c->kind == FW_KIND_MUTEX && sj->ended && sj->rc == LW_OK) {
            if (last_ok && sj->fence <= last_ok->fence) {
                describe(a, sizeof a, last_ok);
                describe(b, sizeof b, sj);
                violation(c, V_ORDER, "key %d: %s then %s", sj->key, a, b);
            }
            last_ok = sj;
        }
    }
    free(active);
}

static int is_ok(const struct sec *s)
{
    return s->ended && s->rc == LW_OK;
}

static int by_end(const void *a, const void *b)
{
    const struct sec *x = *(const struct sec *const *)a;
    const struct sec *y = *(const struct sec *const *)b;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_key_fence(const void *a, const void *b)
{
    const struct sec *x = *(const struct sec *const *)a;
    const struct sec *y = *(const struct sec *const *)b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->fence < y->fence ? -1 : x->fence > y->fence;
}

/* read/write order on one key's LW_OK sections, ok[0..n) in start order:
 * for each writer W, every section that ended before W began has a lower
 * fence, and every reader that began after W ended a higher one (a writer
 * after W is checked as a W itself, so no pair is counted twice). */
static void check_order_rw_key(struct ck *c, const struct sec **ok, size_t n)
{
    const struct sec **ends = malloc((n + 1) * sizeof *ends);
    const struct sec **pmax = malloc((n + 1) * sizeof *pmax);
    const struct sec **smin = malloc((n + 1) * sizeof *smin);
    char a[160], b[160];

    if (ends == NULL || pmax == NULL || smin == NULL)
        goto out;
    memcpy(ends, ok, n * sizeof *ends);
    qsort(ends, n, sizeof *ends, by_end);
    for (size_t i = 0; i < n; i++)
        pmax[i] = i > 0 && pmax[i - 1]->fence >= ends[i]->fence ? pmax[i - 1]
                                                                : ends[i];
    smin[n] = NULL;
    for (size_t i = n; i-- > 0;) {
        smin[i] = smin[i + 1];
        if (ok[i]->role == FW_ROLE_READER &&
            (smin[i] == NULL || ok[i]->fence < smin[i]->fence))
            smin[i] = ok[i];
    }
    for (size_t i = 0; i < n; i++) {
        const struct sec *w = ok[i];
        size_t lo = 0, hi = n;
        if (w->role != FW_ROLE_WRITER)
            continue;
        /* Sections that ended at or before w began: ends[0..lo). */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ends[mid]->end <= w->start)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && pmax[lo - 1]->fence >= w->fence) {
            describe(a, sizeof a, pmax[lo - 1]);
            describe(b, sizeof b, w);
            violation(c, V_ORDER,
                      "key %d: %s ended before writer %s began, with a "
                      "fence not lower",
                      w->key, a, b);
        }
        /* Readers that began at or after w ended: from ok[lo] on. */
        lo = i + 1;
        hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ok[mid]->start < w->end)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (smin[lo] != NULL && smin[lo]->fence <= w->fence) {
            describe(a, sizeof a, w);
            describe(b, sizeof b, smin[lo]);
            violation(c, V_ORDER,
                      "key %d: writer %s ended before reader %s began, with "
                      "a fence not lower",
                      w->key, a, b);
        }
    }
out:
    free(ends);
    free(pmax);
    free(smin);
}

/* read/write and semaphore: the order rules above, and no fence twice. */
static void check_order_shared(struct ck *c, const size_t *idx)
{
    const struct sec **ok = malloc((c->n + 1) * sizeof *ok);
    size_t n = 0, first = 0;
    char a[160], b[160];

    if (ok == NULL)
        return;
    for (size_t j = 0; j < c->n; j++)
        if (is_ok(&c->s[idx[j]]))
            ok[n++] = &c->s[idx[j]];
    if (c->kind == FW_KIND_RW)
        for (size_t i = 1; i <= n; i++)
            if (i == n || ok[i]->key != ok[first]->key) {
                check_order_rw_key(c, ok + first, i - first);
                first = i;
            }
    qsort(ok, n, sizeof *ok, by_key_fence);
    for (size_t i = 1; i < n; i++)
        if (ok[i]->key == ok[i - 1]->key && ok[i]->fence == ok[i - 1]->fence) {
            describe(a, sizeof a, ok[i - 1]);
            describe(b, sizeof b, ok[i]);
            violation(c, V_ORDER, "key %d: %s and %s share a fence", ok[i]->key,
                      a, b);
        }
    free(ok);
}

static struct sec *find_sid(struct ck *c, const size_t *bysid, uint64_t sid)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t v = c->s[bysid[mid]].sid;
        if (v == sid)
            return &c->s[bysid[mid]];
        if (v < sid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void check_store(struct ck *c, const size_t *bysid)
{
    int64_t value[FW_MAX_KEYS] = {0};
    uint64_t count[FW_MAX_KEYS] = {0};

    for (size_t i = 0; i < c->nw; i++) {
        const struct wr *w = &c->w[i];
        struct sec *s = find_sid(c, bysid, w->sid);
        if (w->value != value[w->key] + 1)
            violation(c, V_STORE,
                      "key %d: write of %" PRId64 " after %" PRId64
                      " (fence %" PRIu64 "): an increment was lost",
                      w->key, w->value, value[w->key], w->fence);
        value[w->key] = w->value;
        count[w->key]++;
        if (s == NULL) {
            violation(c, V_STORE, "write by unknown section %" PRIu64, w->sid);
            continue;
        }
        if (s->stored++ > 0)
            violation(c, V_STORE, "section %" PRIu64 " applied twice", w->sid);
        if (s->ended && s->rc != RC_KILLED && s->wr != FW_ACCEPTED)
            violation(c, V_STORE,
                      "section %" PRIu64 " written but told otherwise", w->sid);
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct sec *s = &c->s[i];
        if (s->ended && s->rc != RC_KILLED && s->wr == FW_ACCEPTED &&
            s->stored == 0)
            violation(c, V_STORE,
                      "section %" PRIu64 " told accepted, "
                      "write missing",
                      s->sid);
    }
    for (int k = 0; c->have_final && k < c->keys && k < FW_MAX_KEYS; k++)
        if (c->final_value[k] != (int64_t)count[k] ||
            c->final_writes[k] != count[k])
            violation(c, V_STORE,
                      "key %d: final counter %" PRId64 ", %" PRIu64
                      " writes counted by the store, %" PRIu64 " logged",
                      k, c->final_value[k], c->final_writes[k], count[k]);
}

static void tally(struct ck *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct sec *s = &c->s[i];
        if (!s->ended || s->rc == RC_KILLED)
            continue;
        int refused = s->rd == FW_REJECTED || s->wr == FW_REJECTED;
        c->rejected += refused;
        c->lost += s->rc == LW_ELOST;
        c->ok += s->rc == LW_OK;
        if (refused && s->held == 1)
            c->held_stale++;
        if (refused && s->rc != LW_ELOST) {
            char a[160];
            describe(a, sizeof a, s);
            violation(c, V_STALE, "key %d: %s refused by the store", s->key, a);
        }
        if (s->rc == LW_OK && s->start > c->last_fault_end)
            c->after_fault++;
    }
}

/* Does the run meet its case's expectation?  Prints why not. */
static int verdict(struct ck *c)
{
    long long all = 0;
    for (int k = 0; k < V_N; k++)
        all += c->v[k];
    switch (c->expect) {
    case FD_EXPECT_OVERLAP:
        return c->v[V_EXCL] > 0 ? 0 : 1;
    case FD_EXPECT_LOST_UPDATE:
        return c->v[V_STORE] > 0 ? 0 : 1;
    case FD_EXPECT_STORE_SAFE:
        all = c->v[V_STORE] + c->v[V_UNFIN];
        break;
    default:
        break;
    }
    if (all > 0)
        return 1;
    if (c->n == 0 || (c->want_faults && c->faults == 0) ||
        c->after_fault == 0) {
        fprintf(c->out,
                "  nothing proven: %zu sections, %d faults, %lld "
                "sections after the last fault\n",
                c->n, c->faults, c->after_fault);
        return 1;
    }
    return 0;
}

static void report(struct ck *c, int fail, const char *results)
{
    static const char *const expect[] = {"clean", "store-safe", "must-overlap",
                                         "must-lose-update"};
    long long not_run = 0;
    for (int k = 0; k < 16; k++)
        not_run += c->not_run[k];
    fprintf(c->out,
            "case %s (%s, %s): %zu sections (%lld ok, %lld lost, %lld "
            "killed), %lld calls not run, %d faults\n",
            c->name, expect[c->expect >= 0 && c->expect <= 3 ? c->expect : 0],
            fw_kind_name(c->kind), c->n, c->ok, c->lost, c->killed, not_run,
            c->faults);
    for (int k = 1; k < 16; k++)
        if (c->not_run[k])
            fprintf(c->out, "  not run: %lld %s\n", c->not_run[k],
                    lw_strerror(-k));
    fprintf(c->out,
            "  violations: exclusion %lld, order %lld, stale %lld, store "
            "%lld, unfinished %lld\n",
            c->v[V_EXCL], c->v[V_ORDER], c->v[V_STALE], c->v[V_STORE],
            c->v[V_UNFIN]);
    fprintf(c->out,
            "  store: %zu writes accepted, %lld sections refused; overlaps "
            "with the stale side reported lost %lld; entered after a newer "
            "holder %lld; lw_still_held() said 1 to a refused section %lld\n",
            c->nw, c->rejected, c->overlaps_lost, c->late, c->held_stale);
    if (c->kind == FW_KIND_RW)
        fprintf(c->out, "  readers overlapping readers (allowed): %lld\n",
                c->shared_overlaps);
    if (c->kind == FW_KIND_SEM)
        fprintf(c->out,
                "  sections begun beside another holder (allowed up to %d "
                "at once): %lld\n",
                FW_SEM_PERMITS, c->shared_overlaps);
    fprintf(c->out, "  %s\n", fail ? "FAIL" : "PASS");
    if (results) {
        FILE *f = fopen(results, "a");
        if (f) {
            /* Tab-separated, header first: run.sh prints it as a table. */
            if (fseek(f, 0, SEEK_END) == 0 && ftell(f) == 0)
                fprintf(f, "case\tkind\texpect\tseconds\tsections\tok\tlost\t"
                           "killed\tnot_run\tfaults\taccepted\trefused\t"
                           "overlaps_lost\tlate\texclusion\torder\tstale\t"
                           "store\tunfinished\tverdict\n");
            fprintf(f,
                    "%s\t%s\t%s\t%d\t%zu\t%lld\t%lld\t%lld\t%lld\t%d\t%zu\t"
                    "%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%s\n",
                    c->name, fw_kind_name(c->kind),
                    expect[c->expect >= 0 && c->expect <= 3 ? c->expect : 0],
                    c->seconds, c->n, c->ok, c->lost, c->killed, not_run,
                    c->faults, c->nw, c->rejected, c->overlaps_lost, c->late,
                    c->v[V_EXCL], c->v[V_ORDER], c->v[V_STALE], c->v[V_STORE],
                    c->v[V_UNFIN], fail ? "FAIL" : "PASS");
            fclose(f);
        }
    }
}

int fc_check(const char *dir, FILE *out, const char *results)
{
    long long counts[FC_NRULES];
    return fc_check_counts(dir, out, results, counts);
}

int fc_check_counts(const char *dir, FILE *out, const char *results,
                    long long counts[FC_NRULES])
{
    memset(counts, 0, FC_NRULES * sizeof counts[0]);
    static struct ck zero;
    struct ck *c = malloc(sizeof *c);
    size_t *idx = NULL, *bysid = NULL;
    int rc = -1;

    if (c == NULL)
        return -1;
    *c = zero;
    c->out = out;
    if (read_dir(c, dir) != 0) {
        fprintf(out, "faults check: cannot read the records in %s\n", dir);
        goto cleanup;
    }
    close_open_sections(c);
    idx = malloc((c->n + 1) * sizeof *idx);
    bysid = malloc((c->n + 1) * sizeof *bysid);
    if (idx == NULL || bysid == NULL)
        goto cleanup;
    for (size_t i = 0; i < c->n; i++)
        idx[i] = bysid[i] = i;
    sort_base = c->s;
    qsort(idx, c->n, sizeof *idx, by_key_start);
    qsort(bysid, c->n, sizeof *bysid, by_sid);
    check_sections(c, idx);
    if (c->kind != FW_KIND_MUTEX)
        check_order_shared(c, idx);
    check_store(c, bysid);
    tally(c);
    rc = verdict(c);
    report(c, rc, results);
    for (int k = 0; k < V_N && k < FC_NRULES; k++)
        counts[k] = c->v[k];
cleanup:
    free(idx);
    free(bysid);
    free(c->s);
    free(c->w);
    free(c);
    return rc;
}

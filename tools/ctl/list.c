/* list [PATTERN]: the locks whose keys match, found with SCAN on every
 * master (never KEYS, which blocks the server for the whole keyspace),
 * lockweave's companion keys left out, each with its kind: a mutex's key
 * holds its holder's token, a read lock's the readers' mark, a
 * semaphore's is a sorted set, and the kinds (lw__admin_kind_of()) tell
 * which from what GET answers. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* One lock key as one master has it. */
struct entry {
    char *key;
    size_t len;
    int master;
    char *token; /* Redlock only: to find a quorum */
    size_t toklen;
    long long ttl;
    long long waiters;         /* -1: not counted (Redlock, or unknown) */
    struct lw_admin_kind kind; /* but under Redlock */
    long long holders;         /* 1 but for a kind several hold at once */
    long long permits;         /* a semaphore's N; -1: not known or none */
};

struct found {
    struct entry *v;
    size_t n, cap;
};

/* The MATCH pattern: the prefix with glob's special bytes escaped, then
 * the user's pattern. */
static char *match_pattern(const struct ctl *c, const char *pat, size_t n,
                           size_t *len)
{
    const char *pre = c->raw ? "" : c->cfg.prefix;
    size_t pl = strlen(pre);
    char *out = malloc(2 * pl + n + 1), *p = out;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < pl; i++) {
        if (strchr("*?[]\\", pre[i]) != NULL)
            *p++ = '\\';
        *p++ = pre[i];
    }
    memcpy(p, pat, n);
    p += n;
    *len = (size_t)(p - out);
    return out;
}

/* 1: a companion; 0: not; LW_ENOMEM. */
static int is_companion(const struct ctl *c, const char *key, size_t len)
{
    int rc = lw__admin_companion(key, len, c->cfg.prefix, c->cfg.prefix_len);

    /* With --raw, under any prefix: a queue or a waiter's key names its
     * lock key, whatever the prefix (fence counters name theirs). */
    if (rc == 0 && c->raw)
        rc = lw__admin_companion(key, len, "", 0);
    return rc;
}

static int add(struct found *f, const struct entry *e)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        struct entry *v = realloc(f->v, cap * sizeof *v);
        if (v == NULL)
            return LW_ENOMEM;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = *e;
    return LW_OK;
}

static void found_free(struct found *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->v[i].key);
        free(f->v[i].token);
    }
    free(f->v);
}

static char *dup_bytes(const char *p, size_t n)
{
    char *d = malloc(n + 1);

    if (d != NULL) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

/* One lock key of a SCAN page, and what its master says of it. */
struct pkey {
    const redisReply *key;       /* its SCAN entry */
    struct lw_admin_names names; /* but under Redlock */
    struct lw_admin_kind kind;   /* but under Redlock */
    long long holders;           /* 0: nobody holds it, or it is no lock */
    long long permits;
};

/* A SCAN page's lock keys, and the pipeline that asks about each: GET,
 * PTTL and (but under Redlock) ZCARD of its queue. */
struct page {
    int queues; /* not Redlock: keys have queues and kinds */
    int per;    /* commands per key */
    size_t n;
    struct pkey *k;
    struct lw_admin_cmd *cmds;
    const char **argv;
    size_t *lens;
    redisReply **r; /* per * n replies */
};

/* key into p with its commands, unless it is a companion. */
static int page_add(const struct ctl *c, struct page *p, const redisReply *key)
{
    struct pkey *pk = &p->k[p->n];
    struct lw_admin_cmd *cmd = p->cmds + p->per * p->n;
    const char **a = p->argv + 6 * p->n;
    size_t *l = p->lens + 6 * p->n;
    int comp;

    if (key->type != REDIS_REPLY_STRING)
        return LW_OK;
    comp = is_companion(c, key->str, key->len);
    if (comp != 0)
        return comp < 0 ? comp : LW_OK;
    a[0] = "GET", l[0] = 3, a[1] = key->str, l[1] = key->len;
    a[2] = "PTTL", l[2] = 4, a[3] = key->str, l[3] = key->len;
    cmd[0] = (struct lw_admin_cmd){2, a, l};
    cmd[1] = (struct lw_admin_cmd){2, a + 2, l + 2};
    if (p->queues) {
        if (lw__admin_names(&c->cfg, key->str, key->len, 0, &pk->names) !=
            LW_OK)
            return LW_ENOMEM;
        a[4] = "ZCARD", l[4] = 5;
        a[5] = pk->names.queue, l[5] = pk->names.queuelen;
        cmd[2] = (struct lw_admin_cmd){2, a + 4, l + 4};
    }
    pk->key = key;
    p->n++;
    return LW_OK;
}

/* The lock keys among a SCAN page's keys, into p (free it with
 * page_free() whatever this returns). */
static int page_init(const struct ctl *c, const redisReply *keys,
                     struct page *p)
{
    size_t n = keys->elements;
    int rc = LW_OK;

    memset(p, 0, sizeof *p);
    p->queues = c->cfg.topology != LW_ADMIN_REDLOCK;
    p->per = p->queues ? 3 : 2;
    p->k = calloc(n + 1, sizeof *p->k);
    p->cmds = calloc(3 * n + 1, sizeof *p->cmds);
    p->argv = calloc(6 * n + 1, sizeof *p->argv);
    p->lens = calloc(6 * n + 1, sizeof *p->lens);
    p->r = calloc(3 * n + 1, sizeof *p->r);
    if (p->k == NULL || p->cmds == NULL || p->argv == NULL || p->lens == NULL ||
        p->r == NULL)
        return LW_ENOMEM;
    for (size_t i = 0; rc == LW_OK && i < n; i++)
        rc = page_add(c, p, keys->element[i]);
    return rc;
}

static void page_free(struct page *p)
{
    if (p->r != NULL)
        lw__admin_replies_free(p->r, (int)(p->per * p->n));
    for (size_t i = 0; p->k != NULL && i < p->n; i++)
        lw__admin_names_free(&p->k[i].names);
    free(p->r);
    free(p->lens);
    free(p->argv);
    free(p->cmds);
    free(p->k);
}

/* Which key holds a lock, and of which kind, from what GET answered: a key
 * gone since the SCAN (or under Redlock, not a string) holds none. */
static void page_kinds(struct page *p)
{
    for (size_t i = 0; i < p->n; i++) {
        const redisReply *get = p->r[p->per * i];
        struct pkey *pk = &p->k[i];

        pk->permits = -1;
        if (p->queues)
            pk->holders = lw__admin_kind_of(get, &pk->kind);
        else
            pk->holders = get->type == REDIS_REPLY_STRING;
    }
}

/* How many hold each key of a kind several hold at once, in one more
 * round trip; a key Redis does not count as its kind says is no lock. */
static int page_count(struct page *p, const struct lw_url *u,
                      struct lw_conn **conn)
{
    struct ctl_count *q = calloc(p->n + 1, sizeof *q);
    struct lw_admin_cmd *cmds = calloc(2 * p->n + 1, sizeof *cmds);
    redisReply **r = calloc(2 * p->n + 1, sizeof *r);
    size_t *which = calloc(p->n + 1, sizeof *which), m = 0;
    int ncmds = 0, rc = LW_ENOMEM;

    if (q == NULL || cmds == NULL || r == NULL || which == NULL)
        goto cleanup;
    for (size_t i = 0; i < p->n; i++) {
        const struct pkey *pk = &p->k[i];

        if (pk->holders == 0 || !(pk->kind.flags & LW_ADMIN_KIND_SHARED))
            continue;
        ctl_count_init(&q[m], &pk->kind, pk->key->str, pk->key->len,
                       &pk->names);
        memcpy(cmds + ncmds, q[m].cmds, (size_t)q[m].ncmds * sizeof *cmds);
        ncmds += q[m].ncmds;
        which[m++] = i;
    }
    rc = ncmds == 0 ? LW_OK : lw__admin_send_to(u, conn, cmds, ncmds, r);
    for (size_t i = 0, at = 0; rc == LW_OK && i < m; at += q[i++].ncmds) {
        struct pkey *pk = &p->k[which[i]];

        if (ctl_count_read(&q[i], r + at, &pk->holders, &pk->permits) != LW_OK)
            pk->holders = 0;
    }
    lw__admin_replies_free(r, ncmds);

cleanup:
    free(which);
    free(r);
    free(cmds);
    free(q);
    return rc;
}

/* The page's held locks into f. */
static int page_keep(const struct page *p, int master, struct found *f)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct pkey *pk = &p->k[i];
        redisReply *const *r = p->r + p->per * i;
        struct entry e = {.master = master,
                          .ttl = -2,
                          .waiters = -1,
                          .kind = pk->kind,
                          .holders = pk->holders,
                          .permits = pk->permits};

        if (pk->holders <= 0)
            continue;
        ctl_reply_int(r[1], &e.ttl);
        if (p->queues)
            ctl_reply_int(r[2], &e.waiters);
        e.key = dup_bytes(pk->key->str, pk->key->len);
        e.len = pk->key->len;
        if (!p->queues) {
            e.token = dup_bytes(r[0]->str, r[0]->len);
            e.toklen = r[0]->len;
        }
        if (e.key == NULL || (!p->queues && e.token == NULL) ||
            add(f, &e) != LW_OK) {
            free(e.key);
            free(e.token);
            return LW_ENOMEM;
        }
    }
    return LW_OK;
}

/* What a page's lock keys hold, in a round trip (two when some are of a
 * kind several hold at once); the held ones go into f. */
static int read_page(const struct ctl *c, const struct lw_url *u,
                     struct lw_conn **conn, int master, const redisReply *keys,
                     struct found *f)
{
    struct page p;
    int rc = page_init(c, keys, &p);

    if (rc == LW_OK && p.n > 0)
        rc = lw__admin_send_to(u, conn, p.cmds, (int)(p.per * p.n), p.r);
    if (rc == LW_OK && p.n > 0)
        page_kinds(&p);
    if (rc == LW_OK && p.queues)
        rc = page_count(&p, u, conn);
    if (rc == LW_OK)
        rc = page_keep(&p, master, f);
    page_free(&p);
    return rc;
}

/* SCAN one master to the end. */
static int scan_master(const struct ctl *c, const struct lw_url *u, int master,
                       const char *match, size_t matchlen, struct found *f)
{
    struct lw_conn *conn = NULL;
    char cursor[32] = "0", count[24], text[512];
    /* Every type: a semaphore's key is a sorted set. */
    const char *argv[] = {"SCAN", cursor, "MATCH", match, "COUNT", count};
    size_t lens[] = {4, 1, 5, matchlen, 5, 0};
    struct lw_admin_cmd cmd = {6, argv, lens};
    int rc;

    lens[5] = (size_t)snprintf(count, sizeof count, "%ld", c->scan_count);
    do {
        redisReply *r = NULL;
        const redisReply *next;

        rc = lw__admin_send_to(u, &conn, &cmd, 1, &r);
        if (rc != LW_OK)
            break;
        if (r->type == REDIS_REPLY_ERROR) {
            ctl_error("SCAN: %s",
                      out_escape(text, sizeof text, r->str, r->len));
            rc = LW_EREDIS;
        } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                   (next = r->element[0])->type != REDIS_REPLY_STRING ||
                   next->len >= sizeof cursor ||
                   r->element[1]->type != REDIS_REPLY_ARRAY) {
            ctl_error("SCAN: unexpected reply");
            rc = LW_EREDIS;
        } else {
            memcpy(cursor, next->str, next->len);
            cursor[next->len] = '\0';
            lens[1] = next->len;
            rc = read_page(c, u, &conn, master, r->element[1], f);
        }
        freeReplyObject(r);
    } while (rc == LW_OK && strcmp(cursor, "0") != 0);
    lw__admin_conn_free(conn);
    return rc;
}

static int by_key(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int d = memcmp(x->key, y->key, n);

    if (d != 0)
        return d;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->master - y->master;
}

/* What list found: the masters, which of them were scanned, and the lock
 * keys, sorted by key, then master. */
struct listing {
    const struct lw_url **masters;
    int n;
    int *ok; /* ok[m]: master m was scanned to the end */
    int failed;
    char *match; /* the MATCH pattern */
    size_t matchlen;
    struct found f;
};

/* Who holds a lock of a kind several hold at once, for people. */
static void print_holders(const struct entry *e)
{
    const char *s = e->holders == 1 ? "" : "s";

    if ((e->kind.flags & LW_ADMIN_KIND_PERMITS) && e->permits >= 0)
        printf("%s, %lld of %lld permits, ", e->kind.name, e->holders,
               e->permits);
    else if (e->kind.flags & LW_ADMIN_KIND_PERMITS)
        printf("%s, %lld permit%s, ", e->kind.name, e->holders, s);
    else if (e->kind.flags & LW_ADMIN_KIND_READERS)
        printf("%s lock, %lld reader%s, ", e->kind.name, e->holders, s);
}

static void print_queue_json(struct ctl *c, const struct entry *e,
                             const struct lw_url *master)
{
    out_json_open(&c->j, NULL, '{');
    ctl_put_key(c, e->key, e->len);
    out_json_str(&c->j, "kind", e->kind.name);
    out_json_int(&c->j, "holders", e->holders);
    if (e->permits >= 0)
        out_json_int(&c->j, "permits", e->permits);
    out_json_int(&c->j, "ttl_ms", e->ttl);
    if (e->waiters >= 0)
        out_json_int(&c->j, "waiters", e->waiters);
    else
        out_json_null(&c->j, "waiters");
    ctl_put_url(c, "master", master);
    out_json_close(&c->j, '}');
}

/* One server or a Cluster: each key lives on one master, and every key
 * found is held.  Returns how many. */
static size_t print_queue_locks(struct ctl *c, const struct listing *ls)
{
    for (size_t i = 0; i < ls->f.n; i++) {
        const struct entry *e = &ls->f.v[i];

        if (c->json) {
            print_queue_json(c, e, ls->masters[e->master]);
            continue;
        }
        ctl_put_key(c, e->key, e->len);
        printf("  ");
        print_holders(e);
        if (e->ttl >= 0)
            printf("%lld ms left", e->ttl);
        else
            printf("no TTL");
        if (e->waiters > 0)
            printf(", %lld waiting", e->waiters);
        putchar('\n');
    }
    return ls->f.n;
}

/* One Redlock key: its entries, from v[0] to the last with its key. */
struct rkey {
    const struct entry *at[LW_ADMIN_MASTERS_MAX]; /* by master; NULL: none */
    const char *tok[LW_ADMIN_MASTERS_MAX];
    size_t len[LW_ADMIN_MASTERS_MAX];
    int best;    /* the master whose token most hold (-1: none) */
    int holders; /* how many hold it */
};

/* The key of v[0], with its entries v[0..return) (sorted together). */
static size_t redlock_key(const struct entry *v, size_t n, int masters,
                          struct rkey *rk)
{
    size_t end;

    memset(rk, 0, sizeof *rk);
    for (end = 0; end < n && v[end].len == v[0].len &&
                  memcmp(v[end].key, v[0].key, v[0].len) == 0;
         end++) {
        rk->at[v[end].master] = &v[end];
        rk->tok[v[end].master] = v[end].token;
        rk->len[v[end].master] = v[end].toklen;
    }
    rk->holders = ctl_majority(rk->tok, rk->len, masters, &rk->best);
    return end;
}

/* Master m's state for the key. */
static void print_redlock_master(struct ctl *c, const struct rkey *rk, int m,
                                 const struct lw_url *url)
{
    int b = rk->best;
    int state = rk->at[m] == NULL ? CTL_M_FREE
                : rk->len[m] == rk->len[b] &&
                        memcmp(rk->tok[m], rk->tok[b], rk->len[m]) == 0
                    ? CTL_M_HELD
                    : CTL_M_OTHER;

    if (c->json) {
        out_json_open(&c->j, NULL, '{');
        ctl_put_url(c, "url", url);
        out_json_str(&c->j, "state", ctl_master_state(state));
        if (rk->at[m] != NULL)
            out_json_int(&c->j, "ttl_ms", rk->at[m]->ttl);
        out_json_close(&c->j, '}');
        return;
    }
    printf("    ");
    ctl_put_url(c, NULL, url);
    printf("  %s", ctl_master_state(state));
    if (rk->at[m] != NULL)
        printf(", %lld ms left", rk->at[m]->ttl);
    putchar('\n');
}

/* Redlock: the entries of one key are together (sorted); a lock is held
 * when a quorum of masters hold one token.  Returns how many are held. */
static size_t print_redlock_locks(struct ctl *c, const struct listing *ls)
{
    int n = ls->n, quorum = n / 2 + 1;
    size_t held = 0;

    for (size_t i = 0; i < ls->f.n;) {
        const struct entry *e = &ls->f.v[i];
        struct rkey rk;

        i += redlock_key(e, ls->f.n - i, n, &rk);
        held += rk.holders >= quorum;
        if (c->json)
            out_json_open(&c->j, NULL, '{');
        ctl_put_key(c, e->key, e->len);
        if (c->json) {
            out_json_bool(&c->j, "held", rk.holders >= quorum);
            out_json_int(&c->j, "holders", rk.holders);
            out_json_open(&c->j, "masters", '[');
        } else {
            printf("  %s: %d of %d masters hold it with one token (quorum "
                   "%d)\n",
                   rk.holders >= quorum ? "held" : "not held", rk.holders, n,
                   quorum);
        }
        for (int m = 0; m < n; m++)
            print_redlock_master(c, &rk, m, ls->masters[m]);
        if (c->json) {
            out_json_close(&c->j, ']');
            out_json_close(&c->j, '}');
        }
    }
    return held;
}

/* SCAN every master; one that cannot be scanned is said on stderr and
 * counted.  LW_OK, or LW_ENOMEM. */
static int scan_all(const struct ctl *c, struct listing *ls)
{
    char where[512], text[1024];

    for (int m = 0; m < ls->n; m++) {
        int rc =
            scan_master(c, ls->masters[m], m, ls->match, ls->matchlen, &ls->f);

        ls->ok[m] = rc == LW_OK;
        if (rc == LW_ENOMEM)
            return rc;
        if (rc != LW_OK) {
            lw__admin_describe(ls->masters[m], where, sizeof where);
            ctl_error("could not scan %s: %s",
                      out_escape(text, sizeof text, where, strlen(where)),
                      lw_strerror(rc));
            ls->failed++;
        }
    }
    if (ls->f.n > 1)
        qsort(ls->f.v, ls->f.n, sizeof *ls->f.v, by_key);
    return LW_OK;
}

/* The JSON document's members before its locks, and the locks' array
 * opened. */
static void print_json_head(struct ctl *c, const struct listing *ls)
{
    static const char *const topologies[] = {"single", "cluster", "redlock"};

    out_json_open(&c->j, NULL, '{');
    out_json_str(&c->j, "topology", topologies[c->cfg.topology]);
    out_json_bytes(&c->j, "match", ls->match, ls->matchlen);
    out_json_open(&c->j, "masters", '[');
    for (int m = 0; m < ls->n; m++) {
        out_json_open(&c->j, NULL, '{');
        ctl_put_url(c, "url", ls->masters[m]);
        out_json_bool(&c->j, "scanned", ls->ok[m]);
        out_json_close(&c->j, '}');
    }
    out_json_close(&c->j, ']');
    out_json_open(&c->j, "locks", '[');
}

/* Everything found; returns how many locks are held. */
static size_t print_listing(struct ctl *c, const struct listing *ls)
{
    size_t listed;

    if (c->json)
        print_json_head(c, ls);
    listed = c->cfg.topology == LW_ADMIN_REDLOCK ? print_redlock_locks(c, ls)
                                                 : print_queue_locks(c, ls);
    if (c->json) {
        out_json_close(&c->j, ']');
        out_json_int(&c->j, "held", (long long)listed);
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
        return listed;
    }
    printf("%zu lock%s held", listed, listed == 1 ? "" : "s");
    if (ls->failed)
        printf(" on the masters that could be scanned (%d of %d)",
               ls->n - ls->failed, ls->n);
    putchar('\n');
    return listed;
}

int ctl_list(struct ctl *c, const char *pattern)
{
    struct listing ls = {0};
    char *pat = NULL;
    size_t patlen = strlen(pattern), listed;
    int rc;

    if (c->escaped) {
        pat = out_unescape(pattern, &patlen);
        if (pat == NULL) {
            ctl_error("bad escape in the pattern");
            return patlen == 0 ? CTL_REDIS : CTL_USAGE;
        }
        pattern = pat;
    }
    rc = lw__admin_masters(&c->cfg, &ls.masters, &ls.n);
    if (rc != LW_OK) {
        ctl_error("no master to scan: %s", lw_strerror(rc));
        rc = ctl_exit_for(rc);
        goto cleanup;
    }
    ls.match = match_pattern(c, pattern, patlen, &ls.matchlen);
    ls.ok = calloc((size_t)ls.n, sizeof *ls.ok);
    if (ls.match == NULL || ls.ok == NULL || scan_all(c, &ls) != LW_OK) {
        rc = CTL_REDIS;
        goto cleanup;
    }
    listed = print_listing(c, &ls);
    rc = ls.failed ? CTL_REDIS : listed > 0 ? CTL_OK : CTL_NONE;

cleanup:
    found_free(&ls.f);
    free(ls.masters);
    free(ls.ok);
    free(ls.match);
    free(pat);
    return rc;
}

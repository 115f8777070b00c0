/* list [PATTERN]: the locks whose keys match, found with SCAN on every
 * master (never KEYS, which blocks the server for the whole keyspace),
 * lockweave's companion keys left out. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "core/keynames.h"
#include "ctl.h"
#include "net/conn.h"

/* One lock key as one master has it. */
struct entry {
    char *key;
    size_t len;
    int master;
    char *token; /* Redlock only: to find a quorum */
    size_t toklen;
    long long ttl;
    long long waiters; /* -1: not counted (Redlock, or unknown) */
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
    const char *pre = c->raw ? "" : c->s->prefix;
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
    int rc = lw__names_companion(key, len, c->s->prefix, c->s->prefix_len);

    /* With --raw, under any prefix: a queue or a waiter's key names its
     * lock key, whatever the prefix (fence counters name theirs). */
    if (rc == 0 && c->raw)
        rc = lw__names_companion(key, len, "", 0);
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

/* GET, PTTL (and ZCARD of the queue, but under Redlock) of a page's lock
 * keys, in one round trip; the ones still there go into f. */
static int read_page(const struct ctl *c, const struct lw_url *u,
                     struct lw_conn **conn, int master, const redisReply *keys,
                     struct found *f)
{
    int queues = c->s->ep.topology != LW_TOPO_REDLOCK, per = queues ? 3 : 2;
    size_t n = keys->elements;
    struct lw_cmd *cmds = calloc(n * 3 + 1, sizeof *cmds);
    const char **argv = calloc(n * 6 + 1, sizeof *argv);
    size_t *lens = calloc(n * 6 + 1, sizeof *lens);
    struct lw_names *names = calloc(n + 1, sizeof *names);
    redisReply **r = calloc(n * 3 + 1, sizeof *r);
    size_t *which = calloc(n + 1, sizeof *which), m = 0, named = 0;
    int rc = LW_ENOMEM;

    if (cmds == NULL || argv == NULL || lens == NULL || names == NULL ||
        r == NULL || which == NULL)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = keys->element[i];
        const char **a = argv + 6 * m;
        size_t *l = lens + 6 * m;
        int comp;

        if (k->type != REDIS_REPLY_STRING)
            continue;
        comp = is_companion(c, k->str, k->len);
        if (comp < 0)
            goto cleanup;
        if (comp)
            continue;
        a[0] = "GET", l[0] = 3, a[1] = k->str, l[1] = k->len;
        a[2] = "PTTL", l[2] = 4, a[3] = k->str, l[3] = k->len;
        cmds[per * m] = (struct lw_cmd){2, a, l};
        cmds[per * m + 1] = (struct lw_cmd){2, a + 2, l + 2};
        if (queues) {
            if (lw__names_init(&names[m], k->str, k->len, 0, 0) != LW_OK)
                goto cleanup;
            named = m + 1;
            a[4] = "ZCARD", l[4] = 5;
            a[5] = names[m].queue, l[5] = names[m].queuelen;
            cmds[per * m + 2] = (struct lw_cmd){2, a + 4, l + 4};
        }
        which[m++] = i;
    }
    rc = m == 0 ? LW_OK : ctl_send_to(u, conn, cmds, (int)(per * m), r);
    for (size_t i = 0; rc == LW_OK && i < m; i++) {
        const redisReply *k = keys->element[which[i]];
        const redisReply *v = r[per * i];
        struct entry e = {.master = master, .waiters = -1, .ttl = -2};

        if (v->type != REDIS_REPLY_STRING)
            continue; /* gone since the SCAN */
        ctl_reply_int(r[per * i + 1], &e.ttl);
        if (queues)
            ctl_reply_int(r[per * i + 2], &e.waiters);
        e.key = dup_bytes(k->str, k->len);
        e.len = k->len;
        if (!queues) {
            e.token = dup_bytes(v->str, v->len);
            e.toklen = v->len;
        }
        if (e.key == NULL || (!queues && e.token == NULL) ||
            add(f, &e) != LW_OK) {
            free(e.key);
            free(e.token);
            rc = LW_ENOMEM;
        }
    }
    if (rc == LW_OK)
        lw__replies_free(r, (int)(per * m));

cleanup:
    for (size_t i = 0; names != NULL && i < named; i++)
        lw__names_free(&names[i]);
    free(which);
    free(r);
    free(names);
    free(lens);
    free(argv);
    free(cmds);
    return rc;
}

/* SCAN one master to the end. */
static int scan_master(const struct ctl *c, const struct lw_url *u, int master,
                       const char *match, size_t matchlen, struct found *f)
{
    struct lw_conn *conn = NULL;
    char cursor[32] = "0", count[24], text[512];
    const char *argv[] = {"SCAN",  cursor, "MATCH", match,
                          "COUNT", count,  "TYPE",  "string"};
    size_t lens[] = {4, 1, 5, matchlen, 5, 0, 4, 6};
    struct lw_cmd cmd = {8, argv, lens};
    int rc;

    lens[5] = (size_t)snprintf(count, sizeof count, "%ld", c->scan_count);
    do {
        redisReply *r = NULL;
        const redisReply *next;

        rc = ctl_send_to(u, &conn, &cmd, 1, &r);
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
    ctl_conn_free(conn);
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

/* One server or a Cluster: each key lives on one master. */
static size_t print_queue_locks(struct ctl *c, const struct found *f,
                                const struct lw_url *masters)
{

    for (size_t i = 0; i < f->n; i++) {
        const struct entry *e = &f->v[i];

        if (c->json) {
            out_json_open(&c->j, NULL, '{');
            ctl_put_key(c, e->key, e->len);
            out_json_int(&c->j, "ttl_ms", e->ttl);
            if (e->waiters >= 0)
                out_json_int(&c->j, "waiters", e->waiters);
            else
                out_json_null(&c->j, "waiters");
            ctl_put_url(c, "master", &masters[e->master]);
            out_json_close(&c->j, '}');
            continue;
        }
        ctl_put_key(c, e->key, e->len);
        if (e->ttl >= 0)
            printf("  %lld ms left", e->ttl);
        else
            printf("  no TTL");
        if (e->waiters > 0)
            printf(", %lld waiting", e->waiters);
        putchar('\n');
    }
    return f->n;
}

/* Redlock: the entries of one key are together (sorted); a lock is held
 * when a quorum of masters hold one token.  Returns how many are held. */
static size_t print_redlock_locks(struct ctl *c, const struct found *f,
                                  const struct lw_url *masters, int n)
{
    int quorum = n / 2 + 1;
    size_t held = 0;

    for (size_t i = 0, end; i < f->n; i = end) {
        const char *tok[LW_ENDPOINTS_MAX] = {NULL};
        size_t len[LW_ENDPOINTS_MAX] = {0};
        const struct entry *at[LW_ENDPOINTS_MAX] = {NULL};
        int best, holders;

        for (end = i; end < f->n && f->v[end].len == f->v[i].len &&
                      memcmp(f->v[end].key, f->v[i].key, f->v[i].len) == 0;
             end++) {
            at[f->v[end].master] = &f->v[end];
            tok[f->v[end].master] = f->v[end].token;
            len[f->v[end].master] = f->v[end].toklen;
        }
        holders = ctl_majority(tok, len, n, &best);
        held += holders >= quorum;
        if (c->json) {
            out_json_open(&c->j, NULL, '{');
            ctl_put_key(c, f->v[i].key, f->v[i].len);
            out_json_bool(&c->j, "held", holders >= quorum);
            out_json_int(&c->j, "holders", holders);
            out_json_open(&c->j, "masters", '[');
        } else {
            ctl_put_key(c, f->v[i].key, f->v[i].len);
            printf("  %s: %d of %d masters hold it with one token (quorum "
                   "%d)\n",
                   holders >= quorum ? "held" : "not held", holders, n, quorum);
        }
        for (int m = 0; m < n; m++) {
            int state =
                at[m] == NULL ? CTL_M_FREE
                : len[m] == len[best] && memcmp(tok[m], tok[best], len[m]) == 0
                    ? CTL_M_HELD
                    : CTL_M_OTHER;

            if (c->json) {
                out_json_open(&c->j, NULL, '{');
                ctl_put_url(c, "url", &masters[m]);
                out_json_str(&c->j, "state", ctl_master_state(state));
                if (at[m] != NULL)
                    out_json_int(&c->j, "ttl_ms", at[m]->ttl);
                out_json_close(&c->j, '}');
                continue;
            }
            printf("    ");
            ctl_put_url(c, NULL, &masters[m]);
            printf("  %s", ctl_master_state(state));
            if (at[m] != NULL)
                printf(", %lld ms left", at[m]->ttl);
            putchar('\n');
        }
        if (c->json) {
            out_json_close(&c->j, ']');
            out_json_close(&c->j, '}');
        }
    }
    return held;
}

int ctl_list(struct ctl *c, const char *pattern)
{
    const struct lw_url *masters;
    struct found f = {NULL, 0, 0};
    char *pat = NULL, *match = NULL, where[512], text[1024];
    size_t patlen = strlen(pattern), matchlen = 0, listed;
    int n = 0, failed = 0, *ok = NULL, redlock, rc;

    if (c->escaped) {
        pat = out_unescape(pattern, &patlen);
        if (pat == NULL) {
            ctl_error("bad escape in the pattern");
            return patlen == 0 ? CTL_REDIS : CTL_USAGE;
        }
        pattern = pat;
    }
    rc = ctl_masters(c, &masters, &n);
    if (rc != LW_OK) {
        ctl_error("no master to scan: %s", lw_strerror(rc));
        rc = ctl_exit_for(rc);
        goto cleanup;
    }
    redlock = c->s->ep.topology == LW_TOPO_REDLOCK;
    match = match_pattern(c, pattern, patlen, &matchlen);
    ok = calloc((size_t)n, sizeof *ok);
    if (match == NULL || ok == NULL) {
        rc = CTL_REDIS;
        goto cleanup;
    }
    for (int m = 0; m < n; m++) {
        rc = scan_master(c, &masters[m], m, match, matchlen, &f);
        ok[m] = rc == LW_OK;
        if (rc == LW_ENOMEM) {
            rc = CTL_REDIS;
            goto cleanup;
        }
        if (rc != LW_OK) {
            ctl_describe(&masters[m], where, sizeof where);
            ctl_error("could not scan %s: %s",
                      out_escape(text, sizeof text, where, strlen(where)),
                      lw_strerror(rc));
            failed++;
        }
    }
    if (f.n > 1)
        qsort(f.v, f.n, sizeof *f.v, by_key);

    if (c->json) {
        out_json_open(&c->j, NULL, '{');
        out_json_str(&c->j, "topology",
                     redlock                                ? "redlock"
                     : c->s->ep.topology == LW_TOPO_CLUSTER ? "cluster"
                                                            : "single");
        out_json_bytes(&c->j, "match", match, matchlen);
        out_json_open(&c->j, "masters", '[');
        for (int m = 0; m < n; m++) {
            out_json_open(&c->j, NULL, '{');
            ctl_put_url(c, "url", &masters[m]);
            out_json_bool(&c->j, "scanned", ok[m]);
            out_json_close(&c->j, '}');
        }
        out_json_close(&c->j, ']');
        out_json_open(&c->j, "locks", '[');
    }
    listed = redlock ? print_redlock_locks(c, &f, masters, n)
                     : print_queue_locks(c, &f, masters);
    if (c->json) {
        out_json_close(&c->j, ']');
        out_json_int(&c->j, "held", (long long)listed);
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    } else {
        printf("%zu lock%s held", listed, listed == 1 ? "" : "s");
        if (failed)
            printf(" on the masters that could be scanned (%d of %d)",
                   n - failed, n);
        putchar('\n');
    }
    rc = failed ? CTL_REDIS : listed > 0 ? CTL_OK : CTL_NONE;

cleanup:
    found_free(&f);
    free(ok);
    free(match);
    free(pat);
    return rc;
}

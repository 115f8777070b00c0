/* inspect KEY: the lock, its TTL, what can be known of its fence, and its
 * waiters in order, each alive or dead and how long it has waited. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "ctl.h"
#include "net/conn.h"

/* One queue member, "token|lease ms", scored by the server's clock in
 * microseconds when it joined (core/lua.h). */
struct waiter {
    const char *token;
    size_t toklen;
    long long lease_ms; /* -1: the member does not say */
    long long joined_us;
    int alive; /* 1, 0, or -1: unknown */
};

/* The lock's key, and for people its Redis key. */
static void print_head(struct ctl *c, const struct ctl_key *k)
{
    if (!c->json)
        printf("lock     ");
    ctl_put_key(c, k->key, k->len);
    if (c->json)
        return;
    if (!c->raw) {
        printf("  (Redis key ");
        out_quoted(stdout, k->key, k->len);
        putchar(')');
    }
    putchar('\n');
}

/* Split the queue's ZRANGE WITHSCORES reply into waiters. */
static int parse_queue(const redisReply *r, struct waiter **out, size_t *n)
{
    struct waiter *w;
    size_t m;

    *out = NULL;
    *n = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return LW_EREDIS;
    m = r->elements / 2;
    if (m == 0)
        return LW_OK;
    w = calloc(m, sizeof *w);
    if (w == NULL)
        return LW_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        const redisReply *mem = r->element[2 * i];
        const redisReply *score = r->element[2 * i + 1];
        const char *bar;
        char *end;

        if (mem->type != REDIS_REPLY_STRING ||
            score->type != REDIS_REPLY_STRING) {
            free(w);
            return LW_EREDIS;
        }
        bar = memchr(mem->str, '|', mem->len);
        w[i].token = mem->str;
        w[i].toklen = bar ? (size_t)(bar - mem->str) : mem->len;
        w[i].lease_ms = bar ? strtoll(bar + 1, &end, 10) : -1;
        w[i].joined_us = (long long)strtod(score->str, NULL);
        w[i].alive = -1;
    }
    *out = w;
    *n = m;
    return LW_OK;
}

/* EXISTS of each waiter's alive key, in one round trip. */
static int check_alive(const struct ctl *c, const struct ctl_key *k,
                       const struct lw_names *names, struct waiter *w, size_t n)
{
    struct lw_cmd *cmds = calloc(n, sizeof *cmds);
    const char **argv = calloc(2 * n, sizeof *argv);
    size_t *lens = calloc(2 * n, sizeof *lens);
    char **keys = calloc(n, sizeof *keys);
    redisReply **r = calloc(n, sizeof *r);
    int rc = LW_ENOMEM;

    if (cmds == NULL || argv == NULL || lens == NULL || keys == NULL ||
        r == NULL)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        keys[i] = malloc(names->alivelen + w[i].toklen);
        if (keys[i] == NULL)
            goto cleanup;
        memcpy(keys[i], names->alive, names->alivelen);
        memcpy(keys[i] + names->alivelen, w[i].token, w[i].toklen);
        argv[2 * i] = "EXISTS";
        lens[2 * i] = 6;
        argv[2 * i + 1] = keys[i];
        lens[2 * i + 1] = names->alivelen + w[i].toklen;
        cmds[i] = (struct lw_cmd){2, argv + 2 * i, lens + 2 * i};
    }
    rc = ctl_send_key(c, k->key, k->len, cmds, (int)n, r);
    if (rc == LW_OK)
        for (size_t i = 0; i < n; i++)
            if (r[i]->type == REDIS_REPLY_INTEGER)
                w[i].alive = r[i]->integer > 0;

cleanup:
    if (r != NULL && rc == LW_OK)
        lw__replies_free(r, (int)n);
    for (size_t i = 0; keys != NULL && i < n; i++)
        free(keys[i]);
    free(keys);
    free(r);
    free(lens);
    free(argv);
    free(cmds);
    return rc;
}

static void print_waiters(struct ctl *c, const struct waiter *w, size_t n,
                          long long now_us)
{
    static const char *const states[] = {"unknown", "dead", "alive"};

    if (c->json) {
        out_json_open(&c->j, "waiters", '[');
        for (size_t i = 0; i < n; i++) {
            out_json_open(&c->j, NULL, '{');
            out_json_int(&c->j, "position", (long long)i + 1);
            if (w[i].alive < 0)
                out_json_null(&c->j, "alive");
            else
                out_json_bool(&c->j, "alive", w[i].alive);
            out_json_int(&c->j, "waited_ms", (now_us - w[i].joined_us) / 1000);
            out_json_int(&c->j, "lease_ms", w[i].lease_ms);
            out_json_close(&c->j, '}');
        }
        out_json_close(&c->j, ']');
        return;
    }
    if (n == 0) {
        printf("waiters  none\n");
        return;
    }
    printf("waiters  %zu, first in line first\n", n);
    for (size_t i = 0; i < n; i++)
        printf("  %3zu  %-5s  waited %lld ms, lease %lld ms\n", i + 1,
               states[w[i].alive + 1], (now_us - w[i].joined_us) / 1000,
               w[i].lease_ms);
}

/* A lock of a kind several hold at once (LW_KIND_SHARED): its holders are
 * counted in its readers' set (LW_KIND_READERS) or in its key, a sorted set
 * whose member "n:<N>" says N (LW_KIND_PERMITS).  *holders: how many hold
 * it now; *permits: N, else -1.  LW_OK or an error. */
static int shared_holders(const struct ctl *c, const struct ctl_key *k,
                          const struct lw_names *names,
                          const struct lw_kind *kind, long long *holders,
                          long long *permits)
{
    int readers = (kind->flags & LW_KIND_READERS) != 0;
    int tagged = (kind->flags & LW_KIND_PERMITS) != 0;
    const char *count[] = {"ZCOUNT", readers ? names->readers : k->key, "-inf",
                           "(+inf"};
    const char *tag[] = {"ZRANGEBYSCORE", k->key, "+inf", "+inf"};
    size_t clens[] = {6, readers ? names->readerslen : k->len, 4, 5};
    size_t tlens[] = {13, k->len, 4, 4};
    struct lw_cmd cmds[2] = {{4, count, clens}, {4, tag, tlens}};
    redisReply *r[2] = {NULL};
    int rc = ctl_send_key(c, k->key, k->len, cmds, tagged ? 2 : 1, r);

    *permits = -1;
    if (rc != LW_OK)
        return rc;
    if (!ctl_reply_int(r[0], holders))
        rc = LW_EREDIS;
    if (tagged && rc == LW_OK && r[1]->type == REDIS_REPLY_ARRAY &&
        r[1]->elements == 1 && r[1]->element[0]->type == REDIS_REPLY_STRING &&
        strncmp(r[1]->element[0]->str, "n:", 2) == 0)
        *permits = strtoll(r[1]->element[0]->str + 2, NULL, 10);
    lw__replies_free(r, tagged ? 2 : 1);
    return rc;
}

/* One server or a Cluster: everything about a key is in its slot. */
static int inspect_queue(struct ctl *c, const struct ctl_key *k)
{
    int cluster = c->s->ep.topology == LW_TOPO_CLUSTER;
    struct lw_names names;
    const char *get[] = {"GET", k->key}, *pttl[] = {"PTTL", k->key};
    const char *zr[] = {"ZRANGE", NULL, "0", "-1", "WITHSCORES"};
    const char *tm[] = {"TIME"}, *fget[] = {"GET", NULL};
    size_t klens[] = {3, k->len}, plens[] = {4, k->len};
    size_t zlens[] = {6, 0, 1, 2, 10}, tlens[] = {4}, flens[] = {3, 0};
    struct lw_cmd cmds[5];
    redisReply *r[5] = {NULL};
    struct waiter *w = NULL;
    size_t nw = 0;
    long long ttl = -2, fence = -1, now_us = 0, holders = 1, permits = -1;
    const struct lw_kind *kind;
    char text[512];
    int rc, ncmds = k->prefixed ? 5 : 4, held;

    rc = lw__names_init(&names, k->key, k->len, k->prefix_len, cluster);
    if (rc != LW_OK)
        return ctl_exit_for(rc);
    zr[1] = names.queue;
    zlens[1] = names.queuelen;
    fget[1] = names.fence;
    flens[1] = names.fencelen;
    cmds[0] = (struct lw_cmd){2, get, klens};
    cmds[1] = (struct lw_cmd){2, pttl, plens};
    cmds[2] = (struct lw_cmd){5, zr, zlens};
    cmds[3] = (struct lw_cmd){1, tm, tlens};
    cmds[4] = (struct lw_cmd){2, fget, flens};
    rc = ctl_send_key(c, k->key, k->len, cmds, ncmds, r);
    if (rc != LW_OK)
        goto cleanup;
    /* The kinds say whose key it is (a key nobody holds shows as a mutex,
     * the kind every other builds on). */
    kind = lw__kind_of(r[0]);
    if (kind == NULL)
        kind = &lw__kind_mutex;
    if (kind->flags & LW_KIND_SHARED) {
        if (r[0]->type == REDIS_REPLY_ERROR) { /* a set: held while it is */
            freeReplyObject(r[0]);
            r[0] = NULL;
        }
        rc = shared_holders(c, k, &names, kind, &holders, &permits);
    }
    if (rc != LW_OK)
        goto cleanup;
    for (int i = 0; i < ncmds; i++)
        if (r[i] != NULL && r[i]->type == REDIS_REPLY_ERROR) {
            ctl_error("Redis answered: %s",
                      out_escape(text, sizeof text, r[i]->str, r[i]->len));
            rc = LW_EREDIS;
            goto cleanup;
        }
    held = r[0] == NULL ? holders > 0 : r[0]->type == REDIS_REPLY_STRING;
    ctl_reply_int(r[1], &ttl);
    if (ncmds == 5 && !ctl_reply_int(r[4], &fence))
        fence = -1;
    if (r[3]->type == REDIS_REPLY_ARRAY && r[3]->elements == 2)
        now_us = strtoll(r[3]->element[0]->str, NULL, 10) * 1000000 +
                 strtoll(r[3]->element[1]->str, NULL, 10);
    rc = parse_queue(r[2], &w, &nw);
    if (rc == LW_OK && nw > 0)
        rc = check_alive(c, k, &names, w, nw);
    if (rc != LW_OK)
        goto cleanup;

    if (c->json) {
        out_json_open(&c->j, NULL, '{');
        print_head(c, k);
        out_json_str(&c->j, "topology", cluster ? "cluster" : "single");
        out_json_bool(&c->j, "held", held);
        out_json_str(&c->j, "kind", kind->name);
        out_json_int(&c->j, "holders", held ? holders : 0);
        if (permits >= 0)
            out_json_int(&c->j, "permits", permits);
        if (held)
            out_json_int(&c->j, "ttl_ms", ttl);
        else
            out_json_null(&c->j, "ttl_ms");
        out_json_open(&c->j, "fence", '{');
        out_json_null(&c->j, "holder");
        if (k->prefixed) {
            out_json_bytes(&c->j, "counter", names.fence, names.fencelen);
            if (fence >= 0)
                out_json_int(&c->j, "counter_value", fence);
            else
                out_json_null(&c->j, "counter_value");
        }
        out_json_close(&c->j, '}');
        print_waiters(c, w, nw, now_us);
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    } else {
        print_head(c, k);
        if (!held)
            printf("held     no\n");
        else if (kind->flags & LW_KIND_PERMITS)
            printf("held     yes, %lld of %lld permits (%s), the last "
                   "lease ends in %lld ms\n",
                   holders, permits, kind->name, ttl);
        else if (kind->flags & LW_KIND_READERS)
            printf("held     yes, by %lld readers (%s lock), %lld ms left\n",
                   holders, kind->name, ttl);
        else if (ttl >= 0)
            printf("held     yes, %lld ms left\n", ttl);
        else
            printf("held     yes, with no TTL (not a lease lockweave set)\n");
        if (!k->prefixed)
            printf("fence    unknown: the key does not start with the "
                   "prefix (--prefix)\n");
        else if (fence < 0)
            printf("fence    not stored; the counter has not been created\n");
        else
            printf("fence    not stored with the lock; the holder's is at "
                   "most %lld,\n         the value of its counter ",
                   fence);
        if (k->prefixed && fence >= 0) {
            out_quoted(stdout, names.fence, names.fencelen);
            putchar('\n');
        }
        print_waiters(c, w, nw, now_us);
    }
    rc = held ? CTL_OK : CTL_NONE;

cleanup:
    if (rc < 0)
        ctl_error("inspect: %s", lw_strerror(rc));
    lw__replies_free(r, 5);
    lw__names_free(&names);
    free(w);
    return rc < 0 ? ctl_exit_for(rc) : rc;
}

/* Redlock: the key on every master; held when a quorum holds one token. */
static int inspect_redlock(struct ctl *c, const struct ctl_key *k)
{
    const struct lw_settings *s = c->s;
    struct lw_conn *conns[LW_ENDPOINTS_MAX] = {NULL};
    struct ctl_master m[LW_ENDPOINTS_MAX];
    int n = s->ep.n, quorum = n / 2 + 1, holders, told, held, rc;

    told = ctl_redlock_read(c, k, conns, m, &holders);
    held = holders >= quorum;
    if (c->json) {
        out_json_open(&c->j, NULL, '{');
        print_head(c, k);
        out_json_str(&c->j, "topology", "redlock");
        out_json_bool(&c->j, "held", held);
        out_json_int(&c->j, "holders", holders);
        out_json_int(&c->j, "quorum", quorum);
        out_json_null(&c->j, "fence");
        out_json_open(&c->j, "masters", '[');
        for (int i = 0; i < n; i++) {
            out_json_open(&c->j, NULL, '{');
            ctl_put_url(c, "url", m[i].url);
            out_json_str(&c->j, "state", ctl_master_state(m[i].state));
            if (m[i].state == CTL_M_HELD || m[i].state == CTL_M_OTHER)
                out_json_int(&c->j, "ttl_ms", m[i].ttl);
            if (m[i].error != NULL)
                out_json_bytes(&c->j, "error", m[i].error->str,
                               m[i].error->len);
            out_json_close(&c->j, '}');
        }
        out_json_close(&c->j, ']');
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    } else {
        print_head(c, k);
        printf("held     %s: %d of %d masters hold it with one token "
               "(quorum %d)\n",
               held ? "yes" : "no", holders, n, quorum);
        printf("fence    none: Redlock's masters give no fences\n");
        printf("masters\n");
        for (int i = 0; i < n; i++) {
            printf("  ");
            ctl_put_url(c, NULL, m[i].url);
            printf("  %s", ctl_master_state(m[i].state));
            if (m[i].state == CTL_M_HELD || m[i].state == CTL_M_OTHER)
                printf(", %lld ms left", m[i].ttl);
            if (m[i].state == CTL_M_OTHER)
                printf(" (another token)");
            if (m[i].error != NULL) {
                printf(": ");
                out_text(stdout, m[i].error->str, m[i].error->len);
            }
            putchar('\n');
        }
    }
    /* Fewer than a quorum answered: nobody can say it is free. */
    rc = held ? CTL_OK : told < quorum ? CTL_REDIS : CTL_NONE;
    ctl_redlock_free(m, conns, n);
    return rc;
}

int ctl_inspect(struct ctl *c, const char *arg)
{
    return ctl_key_run(c, arg, inspect_queue, inspect_redlock);
}

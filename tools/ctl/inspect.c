/* inspect KEY: the lock, its TTL, what can be known of its fence, and its
 * waiters in order, each alive or dead and how long it has waited. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

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
                       const struct lw_admin_names *names, struct waiter *w,
                       size_t n)
{
    struct lw_admin_cmd *cmds = calloc(n, sizeof *cmds);
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
        cmds[i] = (struct lw_admin_cmd){2, argv + 2 * i, lens + 2 * i};
    }
    rc = lw__admin_send_key(&c->cfg, k->key, k->len, cmds, (int)n, r);
    if (rc == LW_OK)
        for (size_t i = 0; i < n; i++)
            if (r[i]->type == REDIS_REPLY_INTEGER)
                w[i].alive = r[i]->integer > 0;

cleanup:
    if (r != NULL && rc == LW_OK)
        lw__admin_replies_free(r, (int)n);
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

/* What a key's server says of it and of its queue. */
struct state {
    struct lw_admin_holder holder; /* a mutex's: who took it from Redis */
    int holder_known; /* the server listed its clients (CLIENT LIST) */
    struct lw_admin_names names;
    struct lw_admin_kind kind;
    int held;
    long long ttl;     /* -2: no key */
    long long fence;   /* the counter's value; -1: not known */
    long long now_us;  /* the server's clock */
    long long holders; /* 1 but for a kind several hold at once */
    long long permits; /* a semaphore's N; -1: not known or not one */
    int once;          /* LW_ADMIN_ONCE_...: a run-once mark; 0: not one */
    const char *once_result; /* a done mark's, inside the GET's reply */
    size_t once_len;
    struct waiter *w; /* the queue, first in line first */
    size_t nw;
};

/* A lock of a kind several hold at once: how many hold it now. */
static int shared_holders(const struct ctl *c, const struct ctl_key *k,
                          struct state *st)
{
    struct ctl_count q;
    redisReply *r[2] = {NULL, NULL};
    int rc;

    ctl_count_init(&q, &st->kind, k->key, k->len, &st->names);
    rc = lw__admin_send_key(&c->cfg, k->key, k->len, q.cmds, q.ncmds, r);
    if (rc != LW_OK)
        return rc;
    rc = ctl_count_read(&q, r, &st->holders, &st->permits);
    lw__admin_replies_free(r, q.ncmds);
    return rc;
}

/* The key, its TTL, its queue, the server's clock, its clients (whose
 * names say who holds it) and (for a key that starts with the prefix) its
 * fence counter, in one round trip: r[0..6). */
static int query(const struct ctl *c, const struct ctl_key *k,
                 const struct state *st, redisReply **r)
{
    const char *get[] = {"GET", k->key}, *pttl[] = {"PTTL", k->key};
    const char *zr[] = {"ZRANGE", st->names.queue, "0", "-1", "WITHSCORES"};
    const char *tm[] = {"TIME"}, *fget[] = {"GET", st->names.fence};
    size_t klens[] = {3, k->len}, plens[] = {4, k->len};
    size_t zlens[] = {6, st->names.queuelen, 1, 2, 10}, tlens[] = {4};
    size_t flens[] = {3, st->names.fencelen};
    struct lw_admin_cmd cmds[] = {{2, get, klens},       {2, pttl, plens},
                                  {5, zr, zlens},        {1, tm, tlens},
                                  lw__admin_client_list, {2, fget, flens}};

    return lw__admin_send_key(&c->cfg, k->key, k->len, cmds,
                              k->prefixed ? 6 : 5, r);
}

/* Read query()'s replies into st: whose key it is (the kinds say; a key
 * nobody holds shows as a mutex, the kind every other builds on), whether
 * it is held, by how many, and its waiters, each alive or dead. */
static int read_state(const struct ctl *c, const struct ctl_key *k,
                      redisReply **r, struct state *st)
{
    int rc = LW_OK;

    lw__admin_kind_of(r[0], &st->kind);
    if (st->kind.flags & LW_ADMIN_KIND_SHARED) {
        if (r[0]->type == REDIS_REPLY_ERROR) { /* a set: held while it is */
            freeReplyObject(r[0]);
            r[0] = NULL;
        }
        rc = shared_holders(c, k, st);
    }
    /* r[4], CLIENT LIST, may be refused: then who holds is not known. */
    if (rc == LW_OK)
        rc = ctl_reply_errors(r, 4);
    if (rc == LW_OK)
        rc = ctl_reply_errors(r + 5, 1);
    if (rc != LW_OK)
        return rc;
    st->held =
        r[0] == NULL ? st->holders > 0 : r[0]->type == REDIS_REPLY_STRING;
    st->once = lw__admin_once(r[0], &st->once_result, &st->once_len);
    /* A done mark's run has ended: nobody holds it. */
    if (st->held && r[0] != NULL && st->once != LW_ADMIN_ONCE_DONE &&
        !(st->kind.flags & LW_ADMIN_KIND_SHARED))
        st->holder_known =
            lw__admin_holder(r[4], r[0]->str, r[0]->len, &st->holder) == LW_OK;
    ctl_reply_int(r[1], &st->ttl);
    if (!ctl_reply_int(r[5], &st->fence)) /* NULL: not asked */
        st->fence = -1;
    if (r[3]->type == REDIS_REPLY_ARRAY && r[3]->elements == 2)
        st->now_us = strtoll(r[3]->element[0]->str, NULL, 10) * 1000000 +
                     strtoll(r[3]->element[1]->str, NULL, 10);
    rc = parse_queue(r[2], &st->w, &st->nw);
    if (rc == LW_OK && st->nw > 0)
        rc = check_alive(c, k, &st->names, st->w, st->nw);
    return rc;
}

/* "holder": the holder's connection (h NULL: not known, or no one
 * holder: null). */
static void put_holder_json(struct ctl *c, const struct lw_admin_holder *h)
{
    if (h == NULL) {
        out_json_null(&c->j, "holder");
        return;
    }
    out_json_open(&c->j, "holder", '{');
    out_json_bool(&c->j, "connected", h->found);
    if (h->found) {
        out_json_bytes(&c->j, "host", h->host, strlen(h->host));
        out_json_int(&c->j, "pid", h->pid);
        out_json_int(&c->j, "thread", h->tid);
        out_json_bytes(&c->j, "addr", h->addr, strlen(h->addr));
        out_json_int(&c->j, "connected_s", h->age_s);
        out_json_int(&c->j, "idle_s", h->idle_s);
    }
    out_json_close(&c->j, '}');
}

/* For people: who holds it (h NULL: not known). */
static void print_holder(const struct lw_admin_holder *h, int known)
{
    if (!known) {
        printf("holder   not known: the server did not list its clients "
               "(CLIENT LIST)\n");
    } else if (!h->found) {
        printf("holder   not known: no connection of its thread is open "
               "(its process ended,\n         or it is reconnecting)\n");
    } else {
        printf("holder   process %ld, thread %ld, on host ", h->pid, h->tid);
        out_quoted(stdout, h->host, strlen(h->host));
        printf("\n         (its connection from ");
        out_text(stdout, h->addr, strlen(h->addr));
        printf(" is open, idle %lld s)\n", h->idle_s);
    }
}

static void print_json(struct ctl *c, const struct ctl_key *k,
                       const struct state *st)
{
    out_json_open(&c->j, NULL, '{');
    print_head(c, k);
    out_json_str(&c->j, "topology",
                 c->cfg.topology == LW_ADMIN_CLUSTER ? "cluster" : "single");
    out_json_bool(&c->j, "held", st->held);
    out_json_str(&c->j, "kind", st->kind.name);
    out_json_int(&c->j, "holders", st->held ? st->holders : 0);
    if (st->permits >= 0)
        out_json_int(&c->j, "permits", st->permits);
    if (st->held)
        out_json_int(&c->j, "ttl_ms", st->ttl);
    else
        out_json_null(&c->j, "ttl_ms");
    if (st->once) {
        /* "done": ttl_ms is what is left of its window; "running": of its
         * run's lease. */
        out_json_open(&c->j, "once", '{');
        out_json_str(&c->j, "state",
                     st->once == LW_ADMIN_ONCE_DONE ? "done" : "running");
        if (st->once == LW_ADMIN_ONCE_DONE)
            out_json_bytes(&c->j, "result", st->once_result, st->once_len);
        out_json_close(&c->j, '}');
    }
    put_holder_json(c, st->holder_known ? &st->holder : NULL);
    out_json_open(&c->j, "fence", '{');
    out_json_null(&c->j, "holder");
    if (k->prefixed) {
        out_json_bytes(&c->j, "counter", st->names.fence, st->names.fencelen);
        if (st->fence >= 0)
            out_json_int(&c->j, "counter_value", st->fence);
        else
            out_json_null(&c->j, "counter_value");
    }
    out_json_close(&c->j, '}');
    print_waiters(c, st->w, st->nw, st->now_us);
    out_json_close(&c->j, '}');
    out_json_end(&c->j);
}

static void print_held(const struct state *st)
{
    if (!st->held)
        printf("held     no\n");
    else if (st->once == LW_ADMIN_ONCE_DONE) {
        printf("once     done: its run returned ");
        ctl_once_result(stdout, st->once_result, st->once_len);
        printf(",\n         which every call for this key gets (LW_EDONE) for "
               "the rest\n         of its window, %lld ms; removing the mark "
               "(unlock) lets\n         the body run again\n",
               st->ttl);
    } else if (st->once == LW_ADMIN_ONCE_RUNNING)
        printf("once     running: a run-once mark whose run holds it, %lld ms "
               "left of\n         its lease; callers wait for its outcome\n",
               st->ttl);
    else if (st->kind.flags & LW_ADMIN_KIND_PERMITS)
        printf("held     yes, %lld of %lld permits (%s), the last "
               "lease ends in %lld ms\n",
               st->holders, st->permits, st->kind.name, st->ttl);
    else if (st->kind.flags & LW_ADMIN_KIND_READERS)
        printf("held     yes, by %lld readers (%s lock), %lld ms left\n",
               st->holders, st->kind.name, st->ttl);
    else if (st->ttl >= 0)
        printf("held     yes, %lld ms left\n", st->ttl);
    else
        printf("held     yes, with no TTL (not a lease lockweave set)\n");
}

static void print_fence(const struct ctl_key *k, const struct state *st)
{
    if (!k->prefixed) {
        printf("fence    unknown: the key does not start with the "
               "prefix (--prefix)\n");
    } else if (st->fence < 0) {
        printf("fence    not stored; the counter has not been created\n");
    } else {
        printf("fence    not stored with the lock; the holder's is at "
               "most %lld,\n         the value of its counter ",
               st->fence);
        out_quoted(stdout, st->names.fence, st->names.fencelen);
        putchar('\n');
    }
}

static void print_text(struct ctl *c, const struct ctl_key *k,
                       const struct state *st)
{
    print_head(c, k);
    print_held(st);
    if (st->held && st->once != LW_ADMIN_ONCE_DONE &&
        !(st->kind.flags & LW_ADMIN_KIND_SHARED))
        print_holder(&st->holder, st->holder_known);
    print_fence(k, st);
    print_waiters(c, st->w, st->nw, st->now_us);
}

/* One server or a Cluster: everything about a key is in its slot. */
static int inspect_queue(struct ctl *c, const struct ctl_key *k)
{
    struct state st = {.ttl = -2, .fence = -1, .holders = 1, .permits = -1};
    redisReply *r[6] = {NULL};
    int rc = lw__admin_names(&c->cfg, k->key, k->len, k->prefix_len, &st.names);

    if (rc != LW_OK)
        return ctl_exit_for(rc);
    rc = query(c, k, &st, r);
    if (rc == LW_OK)
        rc = read_state(c, k, r, &st);
    if (rc == LW_OK) {
        if (c->json)
            print_json(c, k, &st);
        else
            print_text(c, k, &st);
        rc = st.held ? CTL_OK : CTL_NONE;
    }
    if (rc < 0)
        ctl_error("inspect: %s", lw_strerror(rc));
    lw__admin_replies_free(r, 6);
    lw__admin_names_free(&st.names);
    free(st.w);
    return rc < 0 ? ctl_exit_for(rc) : rc;
}

/* Who holds a Redlock lock: its token's connection on the first master
 * that holds it and lists it.  1 when some master listed its clients. */
static int redlock_holder(const struct ctl_redlock *rl,
                          struct lw_admin_holder *h)
{
    int known = 0;

    memset(h, 0, sizeof *h);
    for (int i = 0; i < rl->n && !h->found; i++) {
        const struct ctl_master *m = &rl->m[i];
        if (m->state == CTL_M_HELD && m->clients != NULL &&
            lw__admin_holder(m->clients, m->token->str, m->token->len, h) ==
                LW_OK)
            known = 1;
    }
    return known;
}

static void print_redlock_json(struct ctl *c, const struct ctl_key *k,
                               const struct ctl_redlock *rl)
{
    struct lw_admin_holder h;
    int known = rl->holders >= rl->quorum && redlock_holder(rl, &h);

    out_json_open(&c->j, NULL, '{');
    print_head(c, k);
    out_json_str(&c->j, "topology", "redlock");
    out_json_bool(&c->j, "held", rl->holders >= rl->quorum);
    out_json_int(&c->j, "holders", rl->holders);
    out_json_int(&c->j, "quorum", rl->quorum);
    put_holder_json(c, known ? &h : NULL);
    out_json_null(&c->j, "fence");
    out_json_open(&c->j, "masters", '[');
    for (int i = 0; i < rl->n; i++) {
        const struct ctl_master *m = &rl->m[i];

        out_json_open(&c->j, NULL, '{');
        ctl_put_url(c, "url", m->url);
        out_json_str(&c->j, "state", ctl_master_state(m->state));
        if (m->state == CTL_M_HELD || m->state == CTL_M_OTHER)
            out_json_int(&c->j, "ttl_ms", m->ttl);
        if (m->error != NULL)
            out_json_bytes(&c->j, "error", m->error->str, m->error->len);
        out_json_close(&c->j, '}');
    }
    out_json_close(&c->j, ']');
    out_json_close(&c->j, '}');
    out_json_end(&c->j);
}

static void print_redlock_text(struct ctl *c, const struct ctl_key *k,
                               const struct ctl_redlock *rl)
{
    print_head(c, k);
    printf("held     %s: %d of %d masters hold it with one token "
           "(quorum %d)\n",
           rl->holders >= rl->quorum ? "yes" : "no", rl->holders, rl->n,
           rl->quorum);
    if (rl->holders >= rl->quorum) {
        struct lw_admin_holder h;
        int known = redlock_holder(rl, &h);
        print_holder(&h, known);
    }
    printf("fence    none: Redlock's masters give no fences\n");
    printf("masters\n");
    for (int i = 0; i < rl->n; i++) {
        const struct ctl_master *m = &rl->m[i];

        printf("  ");
        ctl_put_url(c, NULL, m->url);
        printf("  %s", ctl_master_state(m->state));
        if (m->state == CTL_M_HELD || m->state == CTL_M_OTHER)
            printf(", %lld ms left", m->ttl);
        if (m->state == CTL_M_OTHER)
            printf(" (another token)");
        if (m->error != NULL) {
            printf(": ");
            out_text(stdout, m->error->str, m->error->len);
        }
        putchar('\n');
    }
}

/* Redlock: the key on every master; held when a quorum holds one token. */
static int inspect_redlock(struct ctl *c, const struct ctl_key *k)
{
    struct ctl_redlock rl;
    int rc = ctl_redlock_read(c, k, &rl);

    if (rc != LW_OK) {
        ctl_error("inspect: %s", lw_strerror(rc));
        rc = ctl_exit_for(rc);
    } else {
        if (c->json)
            print_redlock_json(c, k, &rl);
        else
            print_redlock_text(c, k, &rl);
        /* Fewer than a quorum answered: nobody can say it is free. */
        rc = rl.holders >= rl.quorum ? CTL_OK
             : rl.told < rl.quorum   ? CTL_REDIS
                                     : CTL_NONE;
    }
    ctl_redlock_free(&rl);
    return rc;
}

int ctl_inspect(struct ctl *c, const char *arg)
{
    return ctl_key_run(c, arg, inspect_queue, inspect_redlock);
}

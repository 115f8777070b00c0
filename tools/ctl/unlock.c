/* unlock --force KEY: break a lock as its holder's own release would, with
 * the holder's token read first, so that a lock which changed hands in the
 * meantime is left alone; the next waiter is handed the lock or woken. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/config.h"
#include "core/keynames.h"
#include "core/kind.h"
#include "core/queue.h"
#include "core/scripts.h"
#include "ctl.h"
#include "net/conn.h"

/* Ask on the terminal.  1: yes. */
static int confirm(const struct ctl *c, const struct ctl_key *k,
                   const char *what)
{
    const char *p;
    size_t n;
    char line[64];

    ctl_key_shown(c, k->key, k->len, &p, &n);
    fprintf(stderr, "Unlock ");
    out_quoted(stderr, p, n);
    fprintf(stderr,
            " (%s)?  Its holder keeps running without the lock. "
            "[y/N] ",
            what);
    fflush(stderr);
    if (fgets(line, sizeof line, stdin) == NULL)
        return 0;
    line[strcspn(line, "\r\n")] = '\0';
    return strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0;
}

static void report(struct ctl *c, const struct ctl_key *k, const char *result,
                   const char *text, long long waiters)
{
    ctl_put_key(c, k->key, k->len);
    if (!c->json) {
        printf(": %s\n", text);
        return;
    }
    out_json_str(&c->j, "result", result);
    if (waiters >= 0)
        out_json_int(&c->j, "waiters", waiters);
}

/* One server or a Cluster: the release script, as the holder would send
 * it, with the token it holds now. */
static int unlock_queue(struct ctl *c, const struct ctl_key *k)
{
    int cluster = c->s->ep.topology == LW_TOPO_CLUSTER;
    struct lw_names names;
    const char *get[] = {"GET", k->key}, *pttl[] = {"PTTL", k->key};
    const char *zc[] = {"ZCARD", NULL};
    size_t glens[] = {3, k->len}, plens[] = {4, k->len}, zlens[] = {5, 0};
    struct lw_cmd cmds[3];
    redisReply *r[3] = {NULL}, *rel = NULL;
    const struct lw_kind *kind;
    long long ttl = -2, waiters = -1, verdict;
    char what[96], text[512];
    int rc, replayed = 0;

    rc = lw__names_init(&names, k->key, k->len, k->prefix_len, cluster);
    if (rc != LW_OK)
        return ctl_exit_for(rc);
    zc[1] = names.queue;
    zlens[1] = names.queuelen;
    cmds[0] = (struct lw_cmd){2, get, glens};
    cmds[1] = (struct lw_cmd){2, pttl, plens};
    cmds[2] = (struct lw_cmd){2, zc, zlens};
    rc = ctl_send_key(c, k->key, k->len, cmds, 3, r);
    if (rc != LW_OK)
        goto cleanup;
    /* A kind several hold at once: breaking it is not a release any of
     * them would send. */
    kind = lw__kind_of(r[0]);
    if (kind != NULL && (kind->flags & LW_KIND_SHARED)) {
        ctl_error("the key is %s: unlock --force breaks a lock of one "
                  "holder, not one shared by several; their leases end it",
                  kind->noun);
        rc = CTL_SHARED;
        goto cleanup;
    }
    if (r[0]->type == REDIS_REPLY_ERROR) {
        ctl_error("Redis answered: %s",
                  out_escape(text, sizeof text, r[0]->str, r[0]->len));
        rc = CTL_REDIS;
        goto cleanup;
    }
    ctl_reply_int(r[1], &ttl);
    ctl_reply_int(r[2], &waiters);
    if (c->json)
        out_json_open(&c->j, NULL, '{');
    if (r[0]->type != REDIS_REPLY_STRING) {
        report(c, k, "not_held", "not held", waiters);
        rc = CTL_NONE;
        goto done;
    }
    snprintf(what, sizeof what, "%lld ms left, %lld waiting", ttl,
             waiters < 0 ? 0 : waiters);
    if (!c->yes && !confirm(c, k, what)) {
        report(c, k, "declined", "not unlocked", waiters);
        rc = CTL_DECLINED;
        goto done;
    }
    /* No receipt: the holder's own release must read "lost". */
    rc = lw__release_send(c->s, k->key, k->len, r[0]->str, r[0]->len, &names,
                          LW_RELEASE_NO_RECEIPT, 0, &rel, &replayed);
    if (rc != LW_OK || !ctl_reply_int(rel, &verdict)) {
        ctl_error("the release failed: %s",
                  lw_strerror(rc != LW_OK ? rc : LW_EREDIS));
        report(c, k, "error", "not known to be unlocked", waiters);
        rc = CTL_REDIS;
    } else if (verdict == 1) {
        report(c, k, "unlocked",
               waiters > 0 ? "unlocked; the next waiter was told" : "unlocked",
               waiters);
        rc = CTL_OK;
    } else if (replayed) {
        /* Sent twice (the connection broke): the first may have done it. */
        report(c, k, "unknown",
               "the connection broke during the release: see inspect", waiters);
        rc = CTL_REDIS;
    } else if (verdict == -1) {
        report(c, k, "changed_hands",
               "changed hands before the release; left alone", waiters);
        rc = CTL_CHANGED;
    } else {
        report(c, k, "not_held", "released or expired before the release",
               waiters);
        rc = CTL_NONE;
    }

done:
    if (c->json) {
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    }
cleanup:
    if (rc < 0)
        ctl_error("unlock: %s", lw_strerror(rc));
    if (rel != NULL)
        freeReplyObject(rel);
    lw__replies_free(r, 3);
    lw__names_free(&names);
    return rc < 0 ? ctl_exit_for(rc) : rc;
}

/* Redlock: on every master that has the key, compare and delete the token
 * it has there (the runtime's one-key script, as a Redlock release). */
static int unlock_redlock(struct ctl *c, const struct ctl_key *k)
{
    const struct lw_settings *s = c->s;
    struct lw_conn *conns[LW_ENDPOINTS_MAX] = {NULL};
    struct ctl_master m[LW_ENDPOINTS_MAX];
    const char *result[LW_ENDPOINTS_MAX];
    int n = s->ep.n, quorum = n / 2 + 1, holders, told, has = 0;
    int failed = 0, changed = 0, deleted = 0, rc;
    char what[96];

    told = ctl_redlock_read(c, k, conns, m, &holders);
    for (int i = 0; i < n; i++) {
        has += m[i].token != NULL;
        failed += m[i].state == CTL_M_DOWN || m[i].state == CTL_M_ERROR;
        result[i] = ctl_master_state(m[i].state); /* until unlocked */
    }
    if (c->json)
        out_json_open(&c->j, NULL, '{');
    if (has == 0) {
        report(c, k, "not_held", "not held on any master that answered", -1);
        rc = told < quorum ? CTL_REDIS : CTL_NONE;
        goto done;
    }
    snprintf(what, sizeof what, "held on %d of %d masters, quorum %d", has, n,
             quorum);
    if (!c->yes && !confirm(c, k, what)) {
        report(c, k, "declined", "not unlocked", -1);
        rc = CTL_DECLINED;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const char *argv[] = {k->key, NULL};
        size_t lens[] = {k->len, 0};
        struct lw_request q = {.script = &lw__script_onekey,
                               .nkeys = 1,
                               .nargs = 1,
                               .argv = argv,
                               .lens = lens};
        redisReply *r = NULL;
        long long v;

        if (m[i].token == NULL)
            continue;
        argv[1] = m[i].token->str;
        lens[1] = m[i].token->len;
        if (ctl_request_to(m[i].url, &conns[i], &q, &r) != LW_OK ||
            !ctl_reply_int(r, &v)) {
            result[i] = "error";
            failed++;
        } else {
            result[i] = v == 1 ? "unlocked" : v == 0 ? "free" : "changed_hands";
            deleted += v == 1;
            changed += v == -1;
        }
        if (r != NULL)
            freeReplyObject(r);
    }
    report(c, k,
           failed    ? "partial"
           : changed ? "changed_hands"
           : deleted ? "unlocked"
                     : "not_held",
           failed    ? "not every master could be asked"
           : changed ? "changed hands on some master before the release; "
                       "left alone there"
           : deleted ? "unlocked"
                     : "released or expired before the release",
           -1);
    rc = failed    ? CTL_REDIS
         : changed ? CTL_CHANGED
         : deleted ? CTL_OK
                   : CTL_NONE;

done:
    if (c->json)
        out_json_open(&c->j, "masters", '[');
    for (int i = 0; i < n; i++) {
        if (c->json) {
            out_json_open(&c->j, NULL, '{');
            ctl_put_url(c, "url", m[i].url);
            out_json_str(&c->j, "result", result[i]);
            out_json_close(&c->j, '}');
        } else {
            printf("  ");
            ctl_put_url(c, NULL, m[i].url);
            printf("  %s\n", result[i]);
        }
    }
    if (c->json) {
        out_json_close(&c->j, ']');
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    }
    ctl_redlock_free(m, conns, n);
    return rc;
}

int ctl_unlock(struct ctl *c, const char *arg)
{
    /* Checked before Redis is asked anything: a script that forgot --yes
     * learns it at once, whatever the lock's state. */
    if (!c->yes && !isatty(STDIN_FILENO)) {
        ctl_error("unlock: standard input is not a terminal to confirm on; "
                  "add --yes");
        return CTL_DECLINED;
    }
    return ctl_key_run(c, arg, unlock_queue, unlock_redlock);
}

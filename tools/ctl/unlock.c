/* unlock --force KEY: break a lock as its holder's own release would, with
 * the holder's token read first, so that a lock which changed hands in the
 * meantime is left alone; the next waiter is handed the lock or woken. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ctl.h"

/* What breaking a lock does to its holder (what happens next, for a
 * run-once mark). */
#define HOLDER_GOES_ON "Its holder keeps running without the lock."
#define ONCE_DONE_GOES                                                         \
    "Removing it lets the next call for this key run the body again, "         \
    "within its window."
#define ONCE_RUN_GOES                                                          \
    "Its run goes on without the mark (its result is not stored), and the "    \
    "next caller runs the body again beside it."

/* Ask on the terminal.  1: yes. */
static int confirm(const struct ctl *c, const struct ctl_key *k,
                   const char *what, const char *then)
{
    const char *p;
    size_t n;
    char line[64];

    ctl_key_shown(c, k->key, k->len, &p, &n);
    fprintf(stderr, "Unlock ");
    out_quoted(stderr, p, n);
    fprintf(stderr, " (%s)?  %s [y/N] ", what, then);
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

/* What the lock holds now: its GET, PTTL and queue length, into r[0..3).
 * CTL_OK; or a lock of a kind several hold at once, or an error reply,
 * which end the command here: its exit status; or why Redis could not
 * be asked (LW_E...). */
static int read_lock(const struct ctl *c, const struct ctl_key *k,
                     const struct lw_admin_names *names, redisReply **r)
{
    const char *get[] = {"GET", k->key}, *pttl[] = {"PTTL", k->key};
    const char *zc[] = {"ZCARD", names->queue};
    size_t glens[] = {3, k->len}, plens[] = {4, k->len};
    size_t zlens[] = {5, names->queuelen};
    struct lw_admin_cmd cmds[] = {
        {2, get, glens}, {2, pttl, plens}, {2, zc, zlens}};
    struct lw_admin_kind kind;
    int rc = lw__admin_send_key(&c->cfg, k->key, k->len, cmds, 3, r);

    if (rc != LW_OK)
        return rc;
    /* A kind several hold at once: breaking it is not a release any of
     * them would send. */
    if (lw__admin_kind_of(r[0], &kind) && (kind.flags & LW_ADMIN_KIND_SHARED)) {
        ctl_error("the key is %s: unlock --force breaks a lock of one "
                  "holder, not one shared by several; their leases end it",
                  kind.noun);
        return CTL_SHARED;
    }
    return ctl_reply_errors(r, 1) == LW_OK ? CTL_OK : CTL_REDIS;
}

/* Release token, the holder's, as its own release would but leaving no
 * receipt (its release must then read "lost"), and say how it went.
 * Returns the exit status. */
static int release(struct ctl *c, const struct ctl_key *k,
                   const struct lw_admin_names *names, const redisReply *token,
                   long long waiters)
{
    redisReply *rel = NULL;
    long long verdict;
    int replayed = 0, rc;

    rc = lw__admin_release(&c->cfg, k->key, k->len, token->str, token->len,
                           names, &rel, &replayed);
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
    if (rel != NULL)
        freeReplyObject(rel);
    return rc;
}

/* One server or a Cluster: the release script, as the holder would send
 * it, with the token it holds now. */
static int unlock_queue(struct ctl *c, const struct ctl_key *k)
{
    struct lw_admin_names names;
    redisReply *r[3] = {NULL};
    long long ttl = -2, waiters = -1;
    const char *res, *then = HOLDER_GOES_ON;
    size_t reslen;
    char what[192], shown[64];
    int once = 0;
    int rc = lw__admin_names(&c->cfg, k->key, k->len, k->prefix_len, &names);

    if (rc != LW_OK)
        return ctl_exit_for(rc);
    rc = read_lock(c, k, &names, r);
    if (rc != CTL_OK)
        goto cleanup;
    ctl_reply_int(r[1], &ttl);
    ctl_reply_int(r[2], &waiters);
    snprintf(what, sizeof what, "%lld ms left, %lld waiting", ttl,
             waiters < 0 ? 0 : waiters);
    once = lw__admin_once(r[0], &res, &reslen);
    if (once == LW_ADMIN_ONCE_DONE) {
        /* Ours are printable ("i:42"); anything else is not shown raw. */
        for (size_t i = 0; i < reslen && i < sizeof shown - 1; i++)
            shown[i] = res[i] >= 0x20 && res[i] < 0x7f ? res[i] : '?';
        shown[reslen < sizeof shown - 1 ? reslen : sizeof shown - 1] = '\0';
        snprintf(what, sizeof what,
                 "a done run-once mark: its run returned %s; %lld ms left "
                 "of its window",
                 shown, ttl);
        then = ONCE_DONE_GOES;
    } else if (once == LW_ADMIN_ONCE_RUNNING) {
        snprintf(what, sizeof what,
                 "a run-once mark, its run going: %lld ms left of its lease, "
                 "%lld waiting",
                 ttl, waiters < 0 ? 0 : waiters);
        then = ONCE_RUN_GOES;
    }
    if (c->json)
        out_json_open(&c->j, NULL, '{');
    if (r[0]->type != REDIS_REPLY_STRING) {
        report(c, k, "not_held", "not held", waiters);
        rc = CTL_NONE;
    } else if (!c->yes && !confirm(c, k, what, then)) {
        report(c, k, "declined", "not unlocked", waiters);
        rc = CTL_DECLINED;
    } else {
        rc = release(c, k, &names, r[0], waiters);
        if (rc == CTL_OK && once == LW_ADMIN_ONCE_DONE && !c->json)
            printf("  the done mark is gone: the next call for this key runs "
                   "the body again\n");
    }
    if (c->json && once)
        out_json_str(&c->j, "once",
                     once == LW_ADMIN_ONCE_DONE ? "done" : "running");
    if (c->json) {
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    }

cleanup:
    if (rc < 0)
        ctl_error("unlock: %s", lw_strerror(rc));
    lw__admin_replies_free(r, 3);
    lw__admin_names_free(&names);
    return rc < 0 ? ctl_exit_for(rc) : rc;
}

/* What the release did on the masters. */
struct tally {
    int failed;  /* masters that could not be asked, or failed */
    int changed; /* masters where the key had changed hands */
    int deleted; /* masters where it was deleted */
};

/* On every master that has the key, compare and delete the token it has
 * there; result[i]: what master i did. */
static void release_masters(const struct ctl_key *k, struct ctl_redlock *rl,
                            const char **result, struct tally *t)
{
    for (int i = 0; i < rl->n; i++) {
        struct ctl_master *m = &rl->m[i];
        redisReply *r = NULL;
        long long v;

        if (m->token == NULL)
            continue;
        if (lw__admin_release_one(m->url, &m->conn, k->key, k->len,
                                  m->token->str, m->token->len, &r) != LW_OK ||
            !ctl_reply_int(r, &v)) {
            result[i] = "error";
            t->failed++;
        } else {
            result[i] = v == 1 ? "unlocked" : v == 0 ? "free" : "changed_hands";
            t->deleted += v == 1;
            t->changed += v == -1;
        }
        if (r != NULL)
            freeReplyObject(r);
    }
}

/* Say how the release went on the masters together; the exit status. */
static int report_tally(struct ctl *c, const struct ctl_key *k,
                        const struct tally *t)
{
    report(c, k,
           t->failed    ? "partial"
           : t->changed ? "changed_hands"
           : t->deleted ? "unlocked"
                        : "not_held",
           t->failed    ? "not every master could be asked"
           : t->changed ? "changed hands on some master before the release; "
                          "left alone there"
           : t->deleted ? "unlocked"
                        : "released or expired before the release",
           -1);
    return t->failed    ? CTL_REDIS
           : t->changed ? CTL_CHANGED
           : t->deleted ? CTL_OK
                        : CTL_NONE;
}

/* Each master and what it did, and the end of the JSON document. */
static void print_masters(struct ctl *c, const struct ctl_redlock *rl,
                          const char *const *result)
{
    if (c->json)
        out_json_open(&c->j, "masters", '[');
    for (int i = 0; i < rl->n; i++) {
        if (c->json) {
            out_json_open(&c->j, NULL, '{');
            ctl_put_url(c, "url", rl->m[i].url);
            out_json_str(&c->j, "result", result[i]);
            out_json_close(&c->j, '}');
        } else {
            printf("  ");
            ctl_put_url(c, NULL, rl->m[i].url);
            printf("  %s\n", result[i]);
        }
    }
    if (c->json) {
        out_json_close(&c->j, ']');
        out_json_close(&c->j, '}');
        out_json_end(&c->j);
    }
}

/* Redlock: on every master that has the key, compare and delete the token
 * it has there (the runtime's one-key script, as a Redlock release). */
static int unlock_redlock(struct ctl *c, const struct ctl_key *k)
{
    struct ctl_redlock rl;
    const char *result[LW_ADMIN_MASTERS_MAX];
    struct tally t = {0, 0, 0};
    char what[96];
    int has = 0, rc = ctl_redlock_read(c, k, &rl);

    if (rc != LW_OK) {
        ctl_error("unlock: %s", lw_strerror(rc));
        ctl_redlock_free(&rl);
        return ctl_exit_for(rc);
    }
    for (int i = 0; i < rl.n; i++) {
        has += rl.m[i].token != NULL;
        t.failed += rl.m[i].state == CTL_M_DOWN || rl.m[i].state == CTL_M_ERROR;
        result[i] = ctl_master_state(rl.m[i].state); /* until unlocked */
    }
    snprintf(what, sizeof what, "held on %d of %d masters, quorum %d", has,
             rl.n, rl.quorum);
    if (c->json)
        out_json_open(&c->j, NULL, '{');
    if (has == 0) {
        report(c, k, "not_held", "not held on any master that answered", -1);
        rc = rl.told < rl.quorum ? CTL_REDIS : CTL_NONE;
    } else if (!c->yes && !confirm(c, k, what, HOLDER_GOES_ON)) {
        report(c, k, "declined", "not unlocked", -1);
        rc = CTL_DECLINED;
    } else {
        release_masters(k, &rl, result, &t);
        rc = report_tally(c, k, &t);
    }
    print_masters(c, &rl, result);
    ctl_redlock_free(&rl);
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

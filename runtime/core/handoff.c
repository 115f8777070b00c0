/*
 * What the queue backend does in Redis for a lock handed on between threads
 * of one process (cohort.c) or requests of one event loop (loop/turn.c):
 * mint fences for a run of hand-offs, and tell whether the lock is still
 * ours when a handed section ends (for a loop, with more fences while
 * nobody else waits).  Both read the
 * key itself, never our clock: a lock removed behind its holder's back (a
 * forced unlock, an eviction) is gone however much lease our clock says is
 * left, and another caller may hold it already.
 */
#include <lockweave.h>
#include <string.h>

#include "base/config.h"
#include "base/numfmt.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/queue.h"
#include "core/scripts.h"
#include "core/send.h"

/*
 * n fences for sections l is handed on to, in one script that counts them
 * only while the key holds l's token (kind_mutex.c, handfences_lua): each is
 * above the fence of every holder before, and below the next holder's,
 * whose fence is minted only once the key has left our token.  A replayed
 * script leaves a gap only.  With more, the script also reads the key's
 * queue, and mints nothing while someone waits there (handmore_lua).
 */
static int fences_request(struct lw_fences *f, const struct lw_hold *l,
                          uint32_t n, int more)
{
    int k = 0;

    if (lw__names_init(&f->names, l->key, l->keylen, l->prefix_len,
                       l->cfg->ep.topology == LW_TOPO_CLUSTER) != LW_OK)
        return LW_ENOMEM;
    f->n = n;
    f->argv[k] = l->key;
    f->lens[k++] = l->keylen;
    if (more) {
        f->argv[k] = f->names.queue;
        f->lens[k++] = f->names.queuelen;
    }
    f->argv[k] = f->names.fence;
    f->lens[k++] = f->names.fencelen;
    f->argv[k] = l->token;
    f->lens[k++] = (size_t)l->toklen;
    f->argv[k] = f->num;
    f->lens[k++] = lw__fmt_dec(f->num, n);
    f->q = (struct lw_request){.script = more ? &lw__script_handmore
                                              : &lw__script_handfences,
                               .nkeys = k - 2,
                               .nargs = 2,
                               .argv = f->argv,
                               .lens = f->lens};
    return LW_OK;
}

int lw__queue_fences_request(struct lw_fences *f, const struct lw_hold *l,
                             uint32_t n)
{
    return fences_request(f, l, n, 0);
}

int lw__queue_fences_reply(struct lw_fences *f, int rc, redisReply *r,
                           uint64_t *first)
{
    lw__names_free(&f->names);
    if (rc != LW_OK)
        return rc;
    rc = LW_EREDIS;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
        rc = LW_ELOST;
    } else if (r->type == REDIS_REPLY_INTEGER && r->integer == -1 &&
               f->q.script == &lw__script_handmore) {
        rc = LW_R_BUSY;
    } else if (r->type == REDIS_REPLY_INTEGER &&
               r->integer >= LW_FENCE_FLOOR + (long long)f->n) {
        *first = (uint64_t)r->integer - f->n + 1;
        rc = LW_OK;
    }
    freeReplyObject(r);
    return rc;
}

/* l's fences (more: unless someone waits), in a round trip of their own. */
static int send_fences(struct lw_hold *l, uint32_t n, int more, uint64_t *first)
{
    struct lw_fences f;
    struct lw_target to;
    redisReply *r = NULL;
    int replayed, rc;

    rc = lw__target_for(&to, l->cfg, l->key, l->keylen);
    if (rc != LW_OK)
        return rc;
    rc = fences_request(&f, l, n, more);
    if (rc != LW_OK)
        return rc;
    rc = lw__send(&to, &f.q, 0, &r, &replayed);
    return lw__queue_fences_reply(&f, rc, r, first);
}

int lw__queue_fences(struct lw_hold *l, uint32_t n, uint64_t *first)
{
    return send_fences(l, n, 0, first);
}

int lw__queue_more(struct lw_hold *l, uint32_t n, uint64_t *first)
{
    return send_fences(l, n, 1, first);
}

/* Does the key still hold l's token?  A plain GET, or in a slot being
 * migrated (ASK: a plain command is not followed) one script.  A mutex's
 * lease only: cohorts carry no other. */
int lw__queue_check(struct lw_hold *l)
{
    const char *argv[] = {"GET", l->key, l->token};
    size_t lens[] = {3, l->keylen, (size_t)l->toklen};
    struct lw_cmd cmd = {2, argv, lens};
    struct lw_target to;
    redisReply *r;
    int replayed, rc;

    rc = lw__target_for(&to, l->cfg, l->key, l->keylen);
    if (rc == LW_OK)
        rc = lw__send(&to, &(struct lw_request){.cmds = &cmd, .ncmds = 1}, 0,
                      &r, &replayed);
    if (rc == LW_R_ASKED)
        rc = lw__send(&to,
                      &(struct lw_request){.script = &lw__script_owned,
                                           .nkeys = 1,
                                           .nargs = 1,
                                           .argv = argv + 1,
                                           .lens = lens + 1},
                      0, &r, &replayed);
    if (rc != LW_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING)
        rc =
            r->len == (size_t)l->toklen && memcmp(r->str, l->token, r->len) == 0
                ? LW_OK
                : LW_ELOST;
    else if (r->type == REDIS_REPLY_INTEGER)
        rc = r->integer == 1 ? LW_OK : LW_ELOST;
    else
        rc = r->type == REDIS_REPLY_NIL ? LW_ELOST : LW_EREDIS;
    freeReplyObject(r);
    return rc;
}

/* Taking and giving back one key's lock (take.h): alone, or many of them
 * at once in one pipeline (lw__take_batch()). */
#include "core/take.h"

#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/gate.h"
#include "base/result.h"
#include "core/backend.h"
#include "core/batch.h"
#include "core/cohort.h"
#include "core/kind.h"
#include "core/queue.h"
#include "core/release.h"
#include "core/send.h"
#include "core/watchdog.h"

int lw__opts_check(const lw_lock_opts *o)
{
    /* Run once: a mark, not a lock of any other kind, and a dead run's
     * lease may not outlast the window it blocks. */
    if (o->once_window_ms > 0 &&
        (o->permits > 0 || o->flags != 0 || o->hold_at_least_ms > 0 ||
         o->expire_ms > o->once_window_ms))
        return LW_EINVAL;
    if (o->expire_ms == 0 || o->hold_at_least_ms > o->expire_ms ||
        o->permits > LW_PERMITS_MAX || (o->flags & ~LW_LOCK_READ) != 0 ||
        ((o->flags & LW_LOCK_READ) && o->permits > 0))
        return LW_EINVAL;
    return LW_OK;
}

/* Stop renewing first: a renewal in flight after the release could
 * otherwise extend a key someone else just created. */
static int give_back(struct lw_hold *h)
{
    lw__watchdog_remove(h);
    return lw__cohort_release(h);
}

/* What follows a take's answer rc (h held when LW_OK), in the gate: the
 * watchdog renews it from now on and its minimum hold starts.  The one
 * tail of lw__take() and lw__take_batch().  A lock won while lw_shutdown()
 * waits for us is given back at once: the body must not start under a
 * runtime being taken down, and whatever made the wait fail then, the
 * caller's answer is the shutdown. */
static int taken(struct lw_hold *h, int rc)
{
    int held = rc == LW_OK;

    if (held)
        rc = lw__gate_closing() ? LW_ESHUTDOWN : lw__watchdog_add(h);
    if (held && rc == LW_OK)
        lw__hold_acquired(h); /* a lock given back below is not held at
                                 least for anything */
    if (held && rc != LW_OK)
        give_back(h);
    if (rc != LW_OK && lw__gate_closing())
        rc = LW_ESHUTDOWN;
    return rc;
}

int lw__take(struct lw_hold *h, const char *key, size_t keylen,
             size_t prefix_len, const lw_lock_opts *opts, uint64_t *fence)
{
    const struct lw_settings *cfg;
    int rc = lw__gate_enter();

    if (rc != LW_OK)
        return rc;
    cfg = lw__settings();
    rc = cfg->error;
    if (rc == LW_OK) {
        lw__hold_init(h, lw__backend_for(cfg), cfg, key, keylen, prefix_len,
                      opts);
        rc = taken(h, lw__cohort_acquire(h, opts, fence));
    }
    lw__gate_exit();
    return rc;
}

int lw__give_back(struct lw_hold *h)
{
    int rc;

    lw__gate_pass(); /* a release finishes even while lw_shutdown() waits:
                        it gives back what shutdown would */
    rc = give_back(h);
    lw__gate_exit();
    return rc;
}

int lw__take_handed(struct lw_hold *h, struct lw_hold *from, const char *key,
                    size_t keylen, size_t prefix_len, const lw_lock_opts *opts)
{
    int rc = lw__gate_enter();

    if (rc != LW_OK)
        return rc;
    /* from given back by a lw_shutdown() (the watchdog's last act) or its
     * configuration replaced, whenever that ran: nothing of it is copied,
     * its configuration may be freed. */
    if (__atomic_load_n(&from->ended, __ATOMIC_ACQUIRE) ||
        from->cfg != lw__settings()) {
        lw__gate_exit();
        return LW_ESHUTDOWN;
    }
    lw__hold_init(h, from->be, from->cfg, key, keylen, prefix_len, opts);
    memcpy(h->token, from->token, sizeof h->token);
    h->toklen = from->toklen;
    h->valid_until_ms =
        __atomic_load_n(&from->valid_until_ms, __ATOMIC_RELAXED);
    h->drift_ms = from->drift_ms;
    rc = taken(h, LW_OK);
    lw__gate_exit();
    return rc;
}

int lw__take_batchable(const struct lw_settings *cfg, const char *key,
                       size_t keylen, const lw_lock_opts *opts)
{
    const struct lw_kind *k = lw__kind_for(opts);

    /* Cluster, Sentinel and Redlock route each key (or vote): their
     * requests go alone.  A minimum hold's release keeps the key, and
     * wait_replicas waits after the take: both the blocking path's.  A key
     * a thread of this process holds or waits for goes through the cohort
     * (cohort.c), in turn, rather than race it to Redis. */
    return cfg->error == LW_OK && cfg->ep.topology == LW_TOPO_SINGLE &&
           cfg->wait_replicas == 0 && opts->hold_at_least_ms == 0 &&
           opts->once_window_ms == 0 && k->try_free != NULL &&
           k->release_script != NULL && lw__cohort_idle(cfg, key, keylen);
}

int lw__give_batchable(const struct lw_hold *h)
{
    /* Ended (lw_shutdown() ran: h->cfg is gone) or lost: lw__give_back()
     * says so without a round trip, or logs it once. */
    return !__atomic_load_n(&h->ended, __ATOMIC_ACQUIRE) && !lw__hold_lost(h) &&
           h->cohort == NULL && h->hold_ms == 0 && h->cfg == lw__settings() &&
           h->cfg->ep.topology == LW_TOPO_SINGLE &&
           h->kind->release_script != NULL;
}

/* One op's request while the batch is built. */
struct work {
    union {
        struct lw_try t;
        struct lw_give g;
    } u;
    struct lw_fences f; /* a take's fences, right behind its try */
    int sent;           /* in the pipeline */
    int fenced;         /* f too */
    int fold;           /* 1 + its call in the batch's folds (fold()),
                           0: sent alone */
    int leads;          /* the first op of its fold: the call goes where
                           it would have */
};

/* Build op's request into w (in the gate, entered here): 1 when it is to
 * be sent, 0 when op is already over (op->rc set, out of the gate). */
static int prepare(struct lw_take_op *op, struct work *w)
{
    const struct lw_settings *cfg;
    int rc;

    if (op->give) {
        lw__gate_pass(); /* as lw__give_back() */
        if (__atomic_load_n(&op->h->ended, __ATOMIC_ACQUIRE)) {
            op->rc = LW_ELOST; /* as cohort.c's release() */
            lw__gate_exit();
            return 0;
        }
        /* Before the release is sent: a renewal in flight after it could
         * extend a key someone else just created. */
        lw__watchdog_remove(op->h);
        rc = lw__queue_give_request(&w->u.g, op->h);
        if (rc == LW_OK)
            return 1;
        op->rc = lw__queue_give_reply(&w->u.g, rc, NULL);
        lw__gate_exit();
        return 0;
    }
    rc = lw__gate_enter();
    if (rc != LW_OK) {
        op->rc = rc;
        return 0;
    }
    cfg = lw__settings();
    rc = cfg->error;
    if (rc == LW_OK && !lw__take_batchable(cfg, op->key, op->keylen, op->opts))
        rc = LW_R_BUSY; /* the configuration changed: the slow path */
    if (rc == LW_OK) {
        lw__hold_init(op->h, lw__backend_for(cfg), cfg, op->key, op->keylen,
                      op->prefix_len, op->opts);
        rc = lw__queue_try_request(&w->u.t, op->h);
        if (rc == LW_OK)
            return 1;
        rc = lw__queue_try_reply(&w->u.t, rc, NULL, 0, op->fence);
    }
    op->rc = rc;
    lw__gate_exit();
    return 0;
}

/* Every op ends with rc, unsent (out of memory for the batch): a give
 * back goes alone instead. */
static void alone(struct lw_take_op *ops, int n, int rc)
{
    for (int i = 0; i < n; i++)
        ops[i].rc = ops[i].give ? lw__give_back(ops[i].h) : rc;
}

static const struct lw_request *request_of(const struct lw_take_op *op,
                                           const struct work *w)
{
    return op->give ? &w->u.g.q : &w->u.t.q;
}

/* Ops in one call of a batch script at most: Redis runs a script to its
 * end, serving no other client meanwhile, and 64 ops are a few hundred
 * microseconds of its time. */
#define FOLD_MAX 64

/* One call of a batch script and where its answer is. */
struct fold {
    struct lw_batch b;
    int at;   /* its place in the pipeline */
    int next; /* its next op's answer, in b */
};

/* Fold the sent tries and releases of the first kind that has a batch
 * script into calls of it, FOLD_MAX ops each, in the order they came
 * (*folds, *nf of them; each op folded says which).  The other ops, a
 * call's lone op and any op when memory runs out go as requests of their
 * own. */
static void fold(struct lw_take_op *ops, struct work *w, int n,
                 struct fold **folds, int *nf)
{
    const struct lw_request **q = malloc((size_t)n * sizeof *q);
    char *letters = malloc((size_t)n);
    int *which = malloc((size_t)n * sizeof *which);
    struct lw_script *script = NULL;
    int m = 0;

    *nf = 0;
    *folds = NULL;
    for (int i = 0; i < n && q != NULL && letters != NULL && which != NULL;
         i++) {
        const struct lw_request *r = request_of(&ops[i], &w[i]);
        if (!w[i].sent || !lw__batch_fits(r) || ops[i].h->kind->batch == NULL)
            continue;
        if (script == NULL)
            script = ops[i].h->kind->batch;
        if (ops[i].h->kind->batch != script)
            continue;
        letters[m] = ops[i].give ? 'r' : 't';
        which[m] = i;
        q[m++] = r;
    }
    if (m >= 2)
        *folds = calloc((size_t)(m + FOLD_MAX - 1) / FOLD_MAX, sizeof **folds);
    for (int at = 0; *folds != NULL && m - at >= 2; at += FOLD_MAX) {
        int k = m - at < FOLD_MAX ? m - at : FOLD_MAX;
        if (lw__batch_fold(&(*folds)[*nf].b, script, q + at, letters + at, k) !=
            LW_OK)
            continue;
        ++*nf;
        for (int j = 0; j < k; j++)
            w[which[at + j]].fold = *nf;
        w[which[at]].leads = 1;
    }
    free(q);
    free(letters);
    free(which);
}

void lw__take_batch(struct lw_take_op *ops, int n)
{
    struct work *w = calloc((size_t)n, sizeof *w);
    const struct lw_request **q = malloc(2 * (size_t)n * sizeof *q);
    redisReply **out = malloc(2 * (size_t)n * sizeof *out);
    int *rcs = malloc(2 * (size_t)n * sizeof *rcs), m = 0, replayed, rc = LW_OK;
    const struct lw_settings *cfg = NULL;
    struct lw_target to = {0};
    struct fold *folds = NULL;
    int nf = 0;

    for (int i = 0; i < n; i++)
        ops[i].fences_rc = LW_R_BUSY; /* none minted, unless said below */
    if (w == NULL || q == NULL || out == NULL || rcs == NULL) {
        alone(ops, n, LW_ENOMEM);
        goto out;
    }
    for (int i = 0; i < n; i++)
        if ((w[i].sent = prepare(&ops[i], &w[i])) != 0) {
            cfg = ops[i].h->cfg;
            w[i].fenced = !ops[i].give && ops[i].fences > 0 &&
                          lw__queue_fences_request(&w[i].f, ops[i].h,
                                                   ops[i].fences) == LW_OK;
        }
    fold(ops, w, n, &folds, &nf);
    /* Each op where it came, a fold's call where its first op did: a
     * take's fences still go behind its try. */
    for (int i = 0; i < n; i++) {
        if (!w[i].sent)
            continue;
        if (w[i].fold == 0)
            q[m++] = request_of(&ops[i], &w[i]);
        else if (w[i].leads)
            q[folds[w[i].fold - 1].at = m++] = &folds[w[i].fold - 1].b.q;
        if (w[i].fenced)
            q[m++] = &w[i].f.q;
    }
    /* One server: this thread's own connection, whichever op's settings
     * (each is that server's, lw__take_batchable() said). */
    if (m > 0)
        rc = lw__target_for(&to, cfg, NULL, 0);
    if (m > 0 && rc == LW_OK)
        lw__send_many(&to, q, m, out, rcs, &replayed);
    if (rc != LW_OK) /* no connection */
        for (int k = 0; k < m; k++) {
            out[k] = NULL;
            rcs[k] = rc;
        }
    for (int f = 0; f < nf; f++)
        lw__batch_split(&folds[f].b, rcs[folds[f].at], out[folds[f].at]);
    for (int i = 0, k = 0; i < n; i++) {
        struct lw_take_op *op = &ops[i];
        int orc;
        redisReply *r;
        if (!w[i].sent)
            continue;
        if (w[i].fold != 0) {
            struct fold *f = &folds[w[i].fold - 1];
            orc = f->b.rcs[f->next];
            r = f->b.out[f->next++];
            k += w[i].leads; /* the call's own slot */
        } else {
            orc = rcs[k];
            r = out[k++];
        }
        if (op->give)
            op->rc = lw__queue_give_reply(&w[i].u.g, orc, r);
        else
            op->rc = taken(op->h, lw__queue_try_reply(&w[i].u.t, orc, r,
                                                      to.sent_us, op->fence));
        if (w[i].fenced) {
            op->fences_rc =
                lw__queue_fences_reply(&w[i].f, rcs[k], out[k], &op->first);
            k++;
        }
        lw__gate_exit();
    }
out:
    for (int f = 0; f < nf; f++)
        lw__batch_free(&folds[f].b);
    free(folds);
    free(w);
    free(q);
    free(out);
    free(rcs);
}

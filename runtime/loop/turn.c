/*
 * Turns: an event loop's requests for one key (loop/loop.c).
 *
 * Requests of the loop for one key, with the same options, are served in
 * turn, in the order they came (struct turn): the first takes the lock
 * from Redis, the others wait here, in memory, and a release hands the
 * lease on to the next without a round trip, as threads of a process hand
 * a lock on (cohort.c), under the same rules: at most local_handoffs times
 * in a row while another process waits, then through Redis, whose queue
 * serves other processes first; only with three quarters of the lease
 * left; each handed section with a fence of its own, from a batch minted
 * while the key held the run's token (with the take, in its pipeline, when
 * requests already wait; else at the run's first hand-off); and each
 * section's verdict from a check in Redis sent after it ended (the pump's,
 * CHECK: a token gone from the key never comes back, so one that finds it
 * there says the key held it throughout every section that ended before),
 * checks before the run's release through Redis, which goes through the
 * pump too.  A check made while requests wait their turn, once a quarter
 * of the run's fences are used, also reads the key's queue in Redis:
 * empty, nobody else waits, and the same script mints fences for
 * local_handoffs more sections counted from the run's section then, so
 * the run goes on in memory (check_run()).  A waiter of another process
 * is queued there before it waits, so it still waits at most
 * local_handoffs + 1 sections of this loop's.  The hand-off itself runs
 * on the loop's thread, in lw_release_async(), when the run has fences
 * left and no renewal of the lease is in flight; otherwise the pump does
 * it (HAND), where a round trip may be waited for.  The pump here is
 * always the key's (loop.c): every request of a turn goes to it, so its
 * checks, hand-offs and releases reach Redis in the order they were made.
 * A request waiting its turn times out on the first pump's clock.
 */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/result.h"
#include "core/lease.h"
#include "loop/loop.h"

/* The options a lease of a turn has: all but the wait, each request's own. */
static int same_lease(const lw_lock_opts *a, const lw_lock_opts *b)
{
    return a->expire_ms == b->expire_ms && a->max_renew == b->max_renew &&
           a->flags == b->flags && a->hold_at_least_ms == b->hold_at_least_ms &&
           a->permits == b->permits && a->site == b->site &&
           a->once_window_ms == b->once_window_ms;
}

/* The turn q (one key) would be served in, NULL if none.  Under lw->mu. */
static struct turn *turn_find(struct lw_loop *lw, const struct request *q)
{
    struct turn *t = lw->turns;

    while (t != NULL && (t->keylen != q->keylens[0] ||
                         memcmp(t->key, q->keys[0], t->keylen) != 0 ||
                         !same_lease(&t->opts, &q->opts[0])))
        t = t->next;
    return t;
}

/* A new turn for q's key, led by q; NULL out of memory.  Under lw->mu. */
static struct turn *turn_new(struct lw_loop *lw, struct request *q)
{
    struct turn *t = malloc(sizeof *t + q->keylens[0]);

    if (t == NULL)
        return NULL;
    *t = (struct turn){.next = lw->turns,
                       .led = 1,
                       .opts = q->opts[0],
                       .keylen = q->keylens[0]};
    t->tail = &t->head;
    memcpy(t->key, q->keys[0], t->keylen);
    lw->turns = t;
    q->turn = t;
    return t;
}

/* Free t once nothing is left of it.  Under lw->mu. */
void lw__turn_put(struct lw_loop *lw, struct turn *t)
{
    struct turn **pp = &lw->turns;

    if (t->led || t->head != NULL || t->pending > 0)
        return;
    while (*pp != t)
        pp = &(*pp)->next;
    *pp = t->next;
    free(t);
}

/* Have p send the CHECKs queued for it now, rather than wait for company
 * (loop.c, pump()).  Under lw->mu. */
static void flush_pump(struct pump *p)
{
    p->flush = 1;
    pthread_cond_signal(&p->cv);
}

/* A check must read the key before the run's release removes it: a lease
 * of t given back other than through its pump (lw_release() from another
 * thread, lw_loop_free()) first waits here until t's checks queued at the
 * pump are answered, the pumps told to send them at once rather than wait
 * for company.  Under lw->mu, which it waits on. */
void lw__turn_settle(struct lw_loop *lw, struct turn *t)
{
    if (lw->fork_gen != lw__fork_gen)
        return; /* a forked child has no pumps */
    while (t->pending > 0) {
        for (int p = 0; p < NPUMPS; p++)
            flush_pump(&lw->pump[p]);
        pthread_cond_wait(&lw->settled, &lw->mu);
    }
}

/* When q's wait runs out (lw__now_us()): counted from its call, as a
 * blocking caller's wait is. */
static int64_t wait_end_us(const struct request *q)
{
    return q->asked_us + (int64_t)q->opts[0].wait_ms * 1000;
}

/* Take w off t's list, where it waits (anywhere on it).  Under lw->mu. */
void lw__turn_unlink(struct turn *t, struct request *w)
{
    struct request **pp = &t->head, *prev = NULL;

    while (*pp != w) {
        prev = *pp;
        pp = &(*pp)->qnext;
    }
    *pp = w->qnext;
    if (t->tail == &w->qnext)
        t->tail = prev != NULL ? &prev->qnext : &t->head;
    w->waiting = 0;
}

/* n fences for t's run, first the lowest.  Once a quarter of them are
 * handed out (rounded down: with fewer than 4, from the first), a check
 * may let the run go on (check_run()): the checks a pump sends every
 * millisecond or so then do, as long as the run's sections take longer
 * than that to use half of its fences.  Once three quarters are, the
 * run's checks are sent without waiting for company, so that the check
 * that lets it go on is back before the last fence is used (with fewer
 * than 4, only once none is left: maybe too late, and the run ends).
 * Under lw->mu. */
static void set_fences(struct turn *t, uint64_t first, uint32_t n)
{
    t->next_fence = first;
    t->fences_left = n;
    t->refill_at = n - n / 4;
    t->hurry_at = n / 4;
}

/* fence, t->next_fence when lw->mu was let go for a hand-off, is handed
 * out.  A check may have put the run's next fences in meanwhile
 * (check_run(), on the pump's thread): all above fence, and left whole.
 * Under lw->mu. */
static void fence_used(struct turn *t, uint64_t fence)
{
    if (t->next_fence == fence) {
        t->next_fence++;
        t->fences_left--;
    }
}

/* Put w back first on t's list (a hand-off to it did not happen). */
static void turn_push_front(struct turn *t, struct request *w)
{
    w->qnext = t->head;
    if (t->head == NULL)
        t->tail = &w->qnext;
    t->head = w;
    w->waiting = 1;
    w->state = QUEUED;
}

/* Nobody of t holds its lock or takes it now: its first waiter takes it
 * from Redis, through the pump, behind what the pump has queued already
 * (the release that ended the run, so that its try finds the key free),
 * or t ends.  Under lw->mu. */
void lw__turn_next(struct lw_loop *lw, struct turn *t)
{
    struct request *w;

    t->led = 0;
    while ((w = t->head) != NULL) {
        lw__turn_unlink(t, w);
        w->run_fences = t->head != NULL;
        if (lw__pump_submit(lw, w) == LW_OK ||
            lw__loop_submit(lw, w) == LW_OK) {
            t->led = 1;
            return;
        }
        w->turn = NULL; /* no thread to take it */
        w->status = LW_ESYSTEM;
        lw__loop_finish(lw, w);
        lw__loop_wake(lw);
    }
    lw__turn_put(lw, t);
}

/* q, its turn's leader, has its answer from Redis (status, q->lease, and
 * the run's fences if its take minted them: fences of them, the lowest
 * first): the run starts with it when it won and is still wanted (the
 * loop's thread keeps its lease, dispatch()), else the next request
 * leads.  Under lw->mu. */
void lw__turn_led(struct lw_loop *lw, struct request *q, uint32_t fences,
                  uint64_t first)
{
    struct turn *t = q->turn;

    if (t == NULL)
        return;
    if (q->status == LW_OK && !q->ended) {
        t->run_id++;
        t->run = 1;
        t->run_base = 0;
        t->run_lost = 0;
        set_fences(t, first, fences);
        return;
    }
    q->turn = NULL;
    lw__turn_next(lw, t);
}

/* w, off its turn's list, is done waiting: status LW_ETIMEOUT (its wait
 * ran out, counted as a blocking wait that did) or LW_ESHUTDOWN.  Under
 * lw->mu. */
static void wait_ended(struct lw_loop *lw, struct request *w, int status)
{
    if (status == LW_ETIMEOUT)
        lw__lease_waited_out(&w->opts[0], w->asked_us);
    w->turn = NULL;
    w->status = status;
    lw__loop_finish(lw, w);
}

/* w, waiting in t, is done waiting (wait_ended()).  Under lw->mu. */
static void wait_over(struct lw_loop *lw, struct turn *t, struct request *w,
                      int status)
{
    lw__turn_unlink(t, w);
    wait_ended(lw, w, status);
}

/* t's first waiter whose wait has not run out, NULL if none; those before
 * it end LW_ETIMEOUT.  A hand-off serves no request that is past its wait,
 * also while the first pump's clock, which times waiters out, is late
 * (its batch waits for a slow server), as a thread past its wait is gone
 * from its process's list.  Under lw->mu. */
static struct request *first_waiting(struct lw_loop *lw, struct turn *t)
{
    int64_t now = lw__now_us();
    struct request *w;

    while ((w = t->head) != NULL && wait_end_us(w) <= now) {
        wait_over(lw, t, w, LW_ETIMEOUT);
        lw__loop_wake(lw);
    }
    return w;
}

/* The waiters of turns whose wait ran out get LW_ETIMEOUT, and every one
 * LW_ESHUTDOWN once lw_shutdown() runs.  Returns when the next wait runs
 * out (INT64_MAX: none waits).  Under lw->mu. */
int64_t lw__turn_expire(struct lw_loop *lw)
{
    int64_t now = lw__now_us(), next = INT64_MAX;
    int done = 0, closing = lw__gate_closing();

    if (now < lw->deadline_us && !closing)
        return lw->deadline_us;
    for (struct turn *t = lw->turns; t != NULL; t = t->next) {
        struct request *w = t->head, *wnext;
        for (; w != NULL; w = wnext) {
            int64_t at = wait_end_us(w);
            wnext = w->qnext;
            if (at > now && !closing) {
                next = at < next ? at : next;
                continue;
            }
            wait_over(lw, t, w, closing ? LW_ESHUTDOWN : LW_ETIMEOUT);
            done = 1;
        }
    }
    lw->deadline_us = next;
    if (done)
        lw__loop_wake(lw);
    return next;
}

/* A HAND (the pump's thread): q's lease handed on to its turn's first
 * waiter here, where a round trip may be waited for.  With no fences left
 * for the run, they are minted first, and their script, run after q's
 * section ended, is its check; otherwise the lease's renewal in flight is
 * waited out and the key checked once the lock is handed on.  A lease
 * that cannot be handed on becomes a GIVE: the batch gives it back
 * through Redis, and the turn's next request takes the lock from there. */
static void pump_hand(struct lw_loop *lw, struct request *q)
{
    struct turn *t = q->turn;
    struct request *w;
    lw_lease *to = NULL;
    uint64_t fence;
    int rc = LW_OK, minted = 0;

    pthread_mutex_lock(&lw->mu);
    if (t->fences_left == 0 && !t->run_lost) {
        unsigned run = t->run - t->run_base;
        uint64_t first;
        uint32_t n;
        pthread_mutex_unlock(&lw->mu);
        rc = lw__lease_fences(q->lease, run, &first, &n);
        pthread_mutex_lock(&lw->mu);
        if (rc == LW_OK) {
            set_fences(t, first, n);
            minted = 1;
        } else if (rc == LW_ELOST) {
            t->run_lost = 1;
        }
    }
    w = first_waiting(lw, t);
    if (rc != LW_OK || w == NULL || t->run_lost || lw->closing ||
        t->fences_left == 0 ||
        !lw__lease_may_hand(q->lease, t->run - t->run_base)) {
        q->op = GIVE;
        pthread_mutex_unlock(&lw->mu);
        return;
    }
    lw__turn_unlink(t, w);
    w->state = RUNNING; /* lw_cancel_async() now leaves it to us (ended) */
    fence = t->next_fence;
    pthread_mutex_unlock(&lw->mu);
    rc =
        lw__lease_hand_on(q->lease, fence, 0, w->asked_us, wait_end_us(w), &to);
    pthread_mutex_lock(&lw->mu);
    if (rc != LW_OK) {
        if (w->ended) {
            free(w);
        } else if (rc == LW_ETIMEOUT) { /* while the renewal was waited for */
            wait_ended(lw, w, LW_ETIMEOUT);
            lw__loop_wake(lw);
        } else {
            turn_push_front(t, w);
        }
        q->op = GIVE;
        pthread_mutex_unlock(&lw->mu);
        return;
    }
    fence_used(t, fence);
    t->run++;
    q->op = CHECK;
    if (!w->ended) {
        w->lease = to;
        w->status = LW_OK;
        lw__loop_finish(lw, w);
        lw__loop_wake(lw);
        to = NULL;
    }
    pthread_mutex_unlock(&lw->mu);
    q->checked = minted ? LW_OK : lw__lease_check(q->lease);
    q->status = lw__lease_handed_back(q->lease, q->checked);
    q->lease = NULL;
    if (to != NULL) { /* w was canceled meanwhile: the run ends here */
        free(w);
        lw_release(to);
        pthread_mutex_lock(&lw->mu);
        lw__turn_next(lw, t);
        pthread_mutex_unlock(&lw->mu);
    }
}

/*
 * q's check, the first of its run in the batch.  While requests of the turn
 * wait and a quarter of the run's fences are used, it is also the run's
 * chance to go on: the script that checks the key reads its queue too, and if
 * nobody else waits there, mints fences for local_handoffs more sections,
 * counted from the run's section now (at).  Sections that start after the
 * script ran are then at most local_handoffs, as those after a take are: a
 * waiter of another process, queued before it waits, is still served after at
 * most local_handoffs + 1 sections of ours.  The new fences are above every
 * one of the run's so far, so hand-offs go on from them whatever of the
 * old is left.  Minting only once a quarter are used, and at most once for
 * each section the run begins, keeps the counter from minting much faster
 * than the run's sections: about four fences a section.
 * Outside lw->mu.
 */
static int check_run(struct lw_loop *lw, struct request *q)
{
    struct turn *t = q->turn;
    uint64_t first;
    uint32_t n;
    unsigned at;
    int more, rc;

    pthread_mutex_lock(&lw->mu);
    at = t->run;
    more = t->run_id == q->run_id && !t->run_lost && t->head != NULL &&
           t->fences_left <= t->refill_at && at - 1 > t->run_base;
    pthread_mutex_unlock(&lw->mu);
    if (!more)
        return lw__lease_check(q->lease);
    rc = lw__lease_check_more(q->lease, &first, &n);
    if (rc == LW_R_BUSY)
        return LW_OK; /* ours still; someone else waits */
    if (rc != LW_OK)
        return rc;
    pthread_mutex_lock(&lw->mu);
    if (t->run_id == q->run_id && !t->run_lost && at - 1 > t->run_base) {
        t->run_base = at - 1;
        set_fences(t, first, n);
    }
    pthread_mutex_unlock(&lw->mu);
    return LW_OK;
}

/*
 * The batch's hand-offs (HAND) and checks (CHECK), in its order, before its
 * releases through Redis: a run's checks must read the key as its sections
 * left it, so they go before the run's release (a GIVE, in this batch or a
 * later one).  One check answers for every CHECK of the same run in the
 * batch: each of their sections ended before it was sent.  Outside
 * lw->mu.
 */
void lw__turn_hand_over(struct lw_loop *lw, struct request *batch)
{
    for (struct request *q = batch; q != NULL; q = q->qnext) {
        struct request *p = batch;
        if (q->pool != RELEASE || q->op == GIVE)
            continue;
        if (q->op == HAND) {
            pump_hand(lw, q);
            continue;
        }
        while (p != q && (p->pool != RELEASE || p->op != CHECK ||
                          p->turn != q->turn || p->run_id != q->run_id))
            p = p->qnext;
        q->checked = p != q ? p->checked : check_run(lw, q);
        q->status = lw__lease_handed_back(q->lease, q->checked);
        q->lease = NULL;
        pthread_mutex_lock(&lw->mu);
        if (q->checked == LW_ELOST && q->turn->run_id == q->run_id)
            q->turn->run_lost = 1; /* not a later run's */
        pthread_mutex_unlock(&lw->mu);
    }
}

/* Wait for q's turn t (led by another request): LW_OK, or LW_ESYSTEM when
 * the first pump, whose clock times waiters out, has no thread.  Under
 * lw->mu. */
static int wait_turn(struct lw_loop *lw, struct turn *t, struct request *q)
{
    int64_t at = wait_end_us(q);

    if (lw__pump_start(lw, &lw->pump[0]) != LW_OK)
        return LW_ESYSTEM;
    q->turn = t;
    q->state = QUEUED;
    q->qnext = NULL;
    *t->tail = q;
    t->tail = &q->qnext;
    q->waiting = 1;
    if (at < lw->deadline_us) {
        lw->deadline_us = at;
        if (lw->pump[0].idle > 0)
            pthread_cond_signal(&lw->pump[0].cv); /* it sleeps until later */
    }
    return LW_OK;
}

/* Start an acquisition q of one key, the pump's (lw__lease_batchable()),
 * whose lease may be handed on (lw__lease_handable()): in its turn, or
 * leading a new one.  Under lw->mu. */
int lw__turn_start(struct lw_loop *lw, struct request *q)
{
    struct turn *t = turn_find(lw, q);
    int rc;

    if (lw->closing)
        return LW_EINVAL;
    if (t != NULL && t->led) {
        if (wait_turn(lw, t, q) != LW_OK)
            return lw__loop_start(lw, q, 1); /* as if it had no turn */
        list_add(&lw->pending, q);
        return LW_OK;
    }
    if (t == NULL && (t = turn_new(lw, q)) == NULL)
        return lw__loop_start(lw, q, 1);
    t->led = 1;
    q->turn = t;
    rc = lw__loop_start(lw, q, 1);
    if (rc != LW_OK) {
        q->turn = NULL;
        t->led = 0;
        lw__turn_put(lw, t);
    }
    return rc;
}

/*
 * Release q's lease, the lock of turn t, on the loop's thread: handed on to
 * t's first waiter right here when the run allows it (lw__lease_may_hand())
 * and has a fence left, the section checked at the pump afterwards (CHECK);
 * handed on by the pump (HAND) when that needs a round trip first (no
 * fence left, or a renewal of the lease in flight); else given back through
 * Redis, and t's first waiter takes the lock from there.  LW_OK, or why
 * not (q freed, the lease not given back).
 */
int lw__turn_give(struct lw_loop *lw, struct turn *t, struct request *q)
{
    struct request *w;
    lw_lease *to;
    int rc = LW_R_BUSY, urgent = 0;

    pthread_mutex_lock(&lw->mu);
    if (lw->closing) {
        pthread_mutex_unlock(&lw->mu);
        free(q);
        return LW_EINVAL;
    }
    q->op = GIVE;
    w = first_waiting(lw, t);
    if (w != NULL && !t->run_lost &&
        lw__lease_may_hand(q->lease, t->run - t->run_base)) {
        q->op = HAND;
        if (t->fences_left > 0) {
            /* w is off the list: the first pump's clock cannot time it out
             * meanwhile, and nothing else of t changes but what its checks
             * write: run_lost, and the run's next fences (lw_cancel_async()
             * runs on this thread). */
            uint64_t fence = t->next_fence;
            lw__turn_unlink(t, w);
            pthread_mutex_unlock(&lw->mu);
            rc = lw__lease_hand_on(q->lease, fence, 1, w->asked_us, INT64_MAX,
                                   &to);
            pthread_mutex_lock(&lw->mu);
            if (rc == LW_OK) {
                fence_used(t, fence);
                t->run++;
                urgent = t->fences_left <= t->hurry_at && t->head != NULL;
                w->lease = to;
                w->status = LW_OK;
                lw__loop_finish(lw, w);
                lw__loop_wake(lw);
                q->op = CHECK;
            } else {
                turn_push_front(t, w);
                if (rc != LW_R_BUSY)
                    q->op = GIVE; /* not handed on: give it back */
            }
        }
    }
    if (q->op != GIVE) {
        q->turn = t;
        q->run_id = t->run_id;
        q->asked_us = lw__now_us(); /* a CHECK waits from now */
        t->pending++;
        rc = lw__pump_submit(lw, q); /* t's leases are the pump's: it runs */
        if (rc == LW_OK) {
            list_add(&lw->pending, q);
            if (urgent && !q->pump->flush)
                flush_pump(q->pump);
        } else {
            t->pending--;
        }
    } else {
        rc = lw__loop_start(lw, q, lw__lease_give_batchable(q->lease));
        /* Its try after the release, at the pump.  Also when the release
         * could not start: the lease stays the loop's, no longer t's. */
        lw__turn_next(lw, t);
    }
    pthread_mutex_unlock(&lw->mu);
    if (rc != LW_OK)
        free(q);
    return rc;
}

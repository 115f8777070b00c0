/*
 * The guard life cycle, and reentrancy.
 *
 * Each thread keeps its entered guards as a stack (lw_thread.top, ->outer).
 * Entering a key that a guard on the stack already owns costs no round trip:
 * the new guard only points at the owner, and the Redis lock is released when
 * the owner — the outermost guard of that key — leaves.
 */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/gate.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/stats.h"
#include "base/thread.h"
#include "core/guard.h"
#include "core/kind.h"
#include "core/lease.h"
#include "core/outcome.h"
#include "core/take.h"

/* lw_lock_opts as 0.1.0 has it ends at permits: lw_guard_init() and
 * lw_lock() of that version read that much, whatever the struct becomes. */
#define OPTS_SIZE_0_1_0 (offsetof(lw_lock_opts, permits) + sizeof(uint32_t))

void lw_guard_init_sized(lw_guard *gu, const lw_lock_opts *opts,
                         size_t opts_size)
{
    struct lw_gimpl *g = lw__gimpl(gu);
    const struct lw_settings *s;

    lw__gate_pass(); /* lw_shutdown() frees the settings read here */
    s = lw__settings();
    g->key = g->inline_key;
    g->keycap = sizeof g->inline_key;
    g->keylen = 0;
    g->state = LW_G_INIT;
    g->status = opts == NULL ? LW_EINVAL : s->error;
    if (opts == NULL)
        memset(&g->opts, 0, sizeof g->opts);
    else if (lw__struct_in(&g->opts, sizeof g->opts, opts, opts_size) != 0 &&
             g->status == LW_OK)
        g->status = LW_EINVAL; /* a newer version's option: not honoured */
    if (g->status == LW_OK)
        lw_guard_key_bytes(gu, s->prefix, s->prefix_len);
    g->fence = 0;
    g->leased = NULL;
    g->lease.lost = 0;
    lw__outcome_forget(&g->lease);
    g->key_start = g->keylen;
    lw__gate_exit();
}

/* Free a key that grew onto the heap (keybuf.c); the key is empty again. */
static void key_free(struct lw_gimpl *g)
{
    if (g->key != g->inline_key)
        free(g->key);
    g->key = g->inline_key;
    g->keycap = sizeof g->inline_key;
    g->keylen = 0;
}

static struct lw_gimpl *find_owner(struct lw_thread *t, struct lw_gimpl *g)
{
    for (struct lw_gimpl *o = t->top; o != NULL; o = o->outer)
        if (o->state == LW_G_OWNER && o->fork_gen == lw__fork_gen &&
            o->keylen == g->keylen && memcmp(o->key, g->key, g->keylen) == 0)
            return o;
    return NULL;
}

static void push(struct lw_thread *t, struct lw_gimpl *g)
{
    g->outer = t->top;
    t->top = g;
}

static void unlink_guard(struct lw_thread *t, struct lw_gimpl *g)
{
    struct lw_gimpl **pp = &t->top;

    if (*pp != g)
        lw__log(LW_LOG_ERROR, "guard of %.*s left out of order", (int)g->keylen,
                g->key);
    while (*pp != NULL && *pp != g)
        pp = &(*pp)->outer;
    if (*pp == g)
        *pp = g->outer;
}

static int finish(struct lw_thread *t, struct lw_gimpl *g, int rc)
{
    g->state = LW_G_DONE;
    key_free(g);
    t->last_error = rc;
    return rc;
}

static int check(const struct lw_gimpl *g)
{
    if (g->status != LW_OK)
        return g->status;
    if (g->keylen == g->key_start)
        return LW_EINVAL; /* an empty key */
    return lw__opts_check(&g->opts);
}

static int own(struct lw_thread *t, struct lw_gimpl *g)
{
    int rc;

    lw__fork_init();
    rc = lw__take(&g->lease, g->key, g->keylen, g->key_start, &g->opts,
                  &g->fence);
    if (rc != LW_OK)
        return rc;
    g->state = LW_G_OWNER;
    g->owner = g;
    g->depth = 0;
    g->fork_gen = lw__fork_gen;
    push(t, g);
    LW_STAT_ADD(acquired, 1);
    LW_STAT_ADD(held, 1);
    LW_SITE_ADD(g->lease.site, acquired, 1);
    lw__site_wait(g->lease.site, g->lease.waited_us);
    return LW_OK;
}

/* Inside a woven loop body, a key of its lease is held already, by the
 * body: the guard re-enters it (a reader may not ask to write, as above).
 * LW_OK entered, LW_EINVAL refused, 1 when the body's lease lacks the
 * key. */
static int enter_leased(struct lw_thread *t, struct lw_gimpl *g)
{
    uint64_t fence;
    const struct lw_hold *h = lw__lease_body_key(g->key, g->keylen, &fence);

    if (h == NULL)
        return 1;
    if (h->kind == &lw__kind_read && !(g->opts.flags & LW_LOCK_READ))
        return LW_EINVAL;
    g->state = LW_G_LEASED;
    g->owner = g;
    g->leased = h;
    g->fence = fence;
    g->fork_gen = lw__fork_gen;
    push(t, g);
    LW_STAT_ADD(reentered, 1);
    t->last_error = LW_OK;
    return LW_OK;
}

int lw_guard_enter(lw_guard *gu)
{
    struct lw_gimpl *g = lw__gimpl(gu), *o;
    struct lw_thread *t = lw__thread();
    int rc;

    /* A guard entered (or finished) already is left as it is: finishing it
     * here would free a key the watchdog may be renewing right now. */
    if (g->state != LW_G_INIT)
        return t->last_error = LW_EINVAL;
    rc = check(g);
    o = rc == LW_OK ? find_owner(t, g) : NULL;
    /* A writer may read what it holds; a reader asking to write would wait
     * for itself (other readers may hold it too): refused, not deadlocked. */
    if (o != NULL && (o->opts.flags & LW_LOCK_READ) &&
        !(g->opts.flags & LW_LOCK_READ)) {
        rc = LW_EINVAL;
    } else if (o != NULL &&
               (o->opts.once_window_ms > 0 || g->opts.once_window_ms > 0)) {
        /* Run once under its own run would wait for an outcome it is
         * making, and a lock is not a run's mark: refused, not deadlocked. */
        rc = LW_EINVAL;
    } else if (o != NULL) {
        g->state = LW_G_REENTERED;
        g->owner = o;
        g->fork_gen = o->fork_gen;
        o->depth++;
        push(t, g);
        LW_STAT_ADD(reentered, 1);
        if (lw__log_on(LW_LOG_DEBUG))
            lw__log(LW_LOG_DEBUG,
                    "lock %.*s: re-entered (this thread holds it; depth %u, "
                    "fence %llu)",
                    (int)g->keylen, g->key, o->depth,
                    (unsigned long long)o->fence);
        t->last_error = LW_OK;
        return LW_OK;
    }
    if (rc == LW_OK) {
        rc = enter_leased(t, g);
        if (rc == LW_OK)
            return LW_OK;
        if (rc > 0) /* not the body's: taken here */
            rc = own(t, g);
    }
    if (rc == LW_OK) {
        t->last_error = LW_OK;
        return LW_OK;
    }
    if (rc == LW_ETIMEOUT) { /* only after lw__take() set the lease up */
        LW_STAT_ADD(timed_out, 1);
        LW_SITE_ADD(g->lease.site, timeouts, 1);
        lw__site_wait(g->lease.site, g->lease.waited_us);
    }
    return finish(t, g, rc);
}

/* The hold that answers for o, an owner: its own, or the body lease's. */
static const struct lw_hold *hold_of(const struct lw_gimpl *o)
{
    return o->state == LW_G_LEASED ? o->leased : &o->lease;
}

static int owner_status(const struct lw_gimpl *o)
{
    if (o->fork_gen != lw__fork_gen)
        return LW_EFORKED;
    return lw__hold_lost(hold_of(o)) ? LW_ELOST : LW_OK;
}

int lw_guard_leave(lw_guard *gu)
{
    struct lw_gimpl *g = lw__gimpl(gu);
    struct lw_thread *t = lw__thread();
    int rc;

    if (g->state != LW_G_OWNER && g->state != LW_G_REENTERED &&
        g->state != LW_G_LEASED)
        return t->last_error = LW_EINVAL;
    unlink_guard(t, g);
    if (g->state == LW_G_LEASED) /* the body's lease is released later */
        return finish(t, g, owner_status(g));
    if (g->state == LW_G_REENTERED) {
        g->owner->depth--;
        rc = owner_status(g->owner);
        return finish(t, g, rc);
    }
    if (g->depth != 0)
        lw__log(LW_LOG_ERROR, "lock %.*s released with %u re-entries open",
                (int)g->keylen, g->key, g->depth);
    /* A forked child never touches the parent's lock: not its to release. */
    if (g->fork_gen != lw__fork_gen) {
        rc = LW_EFORKED;
    } else {
        rc = lw__give_back(&g->lease);
    }
    if (g->fork_gen == lw__fork_gen) {
        LW_STAT_SUB(held, 1);
        lw__site_hold(g->lease.site,
                      (uint64_t)(lw__now_us() - g->lease.acquired_us));
    }
    if (rc == LW_ELOST) {
        LW_STAT_ADD(lost, 1);
        LW_SITE_ADD(g->lease.site, lost, 1);
    }
    return finish(t, g, rc);
}

void lw_guard_discard(lw_guard *gu)
{
    struct lw_gimpl *g = lw__gimpl(gu);

    if (g->state == LW_G_INIT || g->state == LW_G_DONE) {
        key_free(g);
        g->state = LW_G_DONE;
    }
}

/* Also run while an exception unwinds the guard's frame.  The guards above
 * it on this thread's stack that are still entered are its own frame's,
 * entered with it by lw_guard_enter_all() in the order of their keys, while
 * cleanups run in the reverse order of declaration: they are left first,
 * so the stack unwinds in order.  (Deeper frames' guards were left by their
 * own cleanups as the exception passed.) */
void lw_guard_cleanup(lw_guard *gu)
{
    struct lw_gimpl *g = lw__gimpl(gu), *o;
    struct lw_thread *t;
    int rc = LW_OK, r;

    if (g->state == LW_G_INIT) {
        lw_guard_discard(gu);
        return;
    }
    if (g->state != LW_G_OWNER && g->state != LW_G_REENTERED &&
        g->state != LW_G_LEASED)
        return;
    t = lw__thread();
    for (o = t->top; o != NULL && o != g; o = o->outer)
        ;
    while (o == g && t->top != g) {
        r = lw_guard_leave((lw_guard *)(void *)t->top);
        if (rc == LW_OK)
            rc = r;
    }
    r = lw_guard_leave(gu);
    t->last_error = rc != LW_OK ? rc : r;
}

void(lw_guard_init)(lw_guard *g, const lw_lock_opts *opts)
{
    lw_guard_init_sized(g, opts, OPTS_SIZE_0_1_0);
}

int lw_lock_sized(lw_guard *g, const char *key, size_t keylen,
                  const lw_lock_opts *opts, size_t opts_size)
{
    lw_guard_init_sized(g, opts, opts_size);
    if (key == NULL)
        lw__gimpl(g)->status = LW_EINVAL;
    lw_guard_key_bytes(g, key, keylen);
    return lw_guard_enter(g);
}

int(lw_lock)(lw_guard *g, const char *key, size_t keylen,
             const lw_lock_opts *opts)
{
    return lw_lock_sized(g, key, keylen, opts, OPTS_SIZE_0_1_0);
}

/* With no guard entered, a woven loop body's lease answers (lease.c). */
uint64_t lw_fence(void)
{
    struct lw_gimpl *top = lw__thread()->top;

    if (top == NULL)
        return lw_lease_fence(lw__lease_body());
    if (top->owner->fork_gen != lw__fork_gen)
        return 0;
    return top->owner->fence;
}

uint64_t lw_fence_of(const void *key, size_t keylen)
{
    for (struct lw_gimpl *g = lw__thread()->top; g != NULL; g = g->outer) {
        const struct lw_gimpl *o = g->owner;
        if (o->fork_gen == lw__fork_gen && o->keylen - o->key_start == keylen &&
            (keylen == 0 || memcmp(o->key + o->key_start, key, keylen) == 0))
            return o->fence;
    }
    return lw__lease_body() != NULL
               ? lw_lease_fence_of(lw__lease_body(), key, keylen)
               : 0;
}

int lw_still_held(void)
{
    struct lw_gimpl *top = lw__thread()->top;
    const struct lw_hold *l;

    if (top == NULL)
        return lw__lease_body() != NULL ? lw_lease_held(lw__lease_body()) : 0;
    if (owner_status(top->owner) != LW_OK)
        return 0;
    /* Past the lease's end by our own clock, the lock may be someone else's
     * already even though no renewal has failed yet: after this process
     * was paused (SIGSTOP, swapping, a debugger) the watchdog has not had
     * its turn. */
    l = hold_of(top->owner);
    return lw__now_ms() < __atomic_load_n(&l->valid_until_ms, __ATOMIC_RELAXED);
}

/* Taking and giving back one key's lock (take.h). */
#include "core/take.h"

#include "base/config.h"
#include "base/gate.h"
#include "core/backend.h"
#include "core/cohort.h"
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

/* A lock won while lw_shutdown() waits for us is given back at once: the
 * body must not start under a runtime being taken down, and whatever made
 * the wait fail then, the caller's answer is the shutdown. */
int lw__take(struct lw_hold *h, const char *key, size_t keylen,
             size_t prefix_len, const lw_lock_opts *opts, uint64_t *fence)
{
    const struct lw_settings *cfg;
    int rc = lw__gate_enter(), held;

    if (rc != LW_OK)
        return rc;
    cfg = lw__settings();
    rc = cfg->error;
    if (rc != LW_OK)
        goto out;
    lw__hold_init(h, lw__backend_for(cfg), cfg, key, keylen, prefix_len, opts);
    rc = lw__cohort_acquire(h, opts, fence);
    held = rc == LW_OK;
    if (held)
        rc = lw__gate_closing() ? LW_ESHUTDOWN : lw__watchdog_add(h);
    if (held && rc == LW_OK)
        lw__hold_acquired(h); /* a lock given back below is not held at
                                 least for anything */
    if (held && rc != LW_OK)
        give_back(h);
    if (rc != LW_OK && lw__gate_closing())
        rc = LW_ESHUTDOWN;
out:
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

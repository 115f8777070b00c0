#ifndef LW_TAKE_H
#define LW_TAKE_H

#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hold.h"

struct lw_settings;

/* Longest key accepted (prefix included): a lock key past this is a bug in
 * the template, not a name anyone meant. */
#define LW_KEY_MAX (64 * 1024)

/*
 * Taking and giving back one key's lock, whoever holds it: a guard on its
 * thread's stack (guard.c) or a lease any thread releases (lease.c).
 */

/* LW_OK, or LW_EINVAL for options no lock can have: a lease of no time, a
 * hold the lease cannot cover, too many permits, unknown flags, a read
 * lock with permits. */
int lw__opts_check(const lw_lock_opts *opts);

/* Take the lock on key (the full Redis key, its first prefix_len bytes the
 * prefix; not copied: it must outlive h) into h, waiting up to
 * opts->wait_ms, inside the runtime's gate: from Redis or from another
 * thread of this process, renewed by the watchdog from then on.  LW_OK
 * with *fence set, or why not (LW_ESHUTDOWN once lw_shutdown() runs, even
 * if the lock was had: it is given back). */
int lw__take(struct lw_hold *h, const char *key, size_t keylen,
             size_t prefix_len, const lw_lock_opts *opts, uint64_t *fence);

/* Give back what lw__take() took (from any thread, even while
 * lw_shutdown() waits): LW_OK, or LW_ELOST when it was not ours in Redis
 * to the end. */
int lw__give_back(struct lw_hold *h);

/* Take, into h, the lock that from holds (the same key: key, keylen and
 * prefix_len as lw__take()'s; opts h's own), handed on with no round trip
 * (an event loop's requests, loop/loop.c): h gets from's token and
 * validity, and the watchdog renews it from now on.  from must be out of
 * the watchdog already (lw__watchdog_remove()): one renewer at a time, and
 * its validity read after its last renewal.  LW_OK, or LW_ESHUTDOWN
 * (nothing taken: lw_shutdown() runs or ran since from was taken, or the
 * configuration changed).  The caller checks in Redis, later, that from's
 * section ended with the key still its token (lw__hold_handed_verdict()). */
int lw__take_handed(struct lw_hold *h, struct lw_hold *from, const char *key,
                    size_t keylen, size_t prefix_len, const lw_lock_opts *opts);

/*
 * Many keys' takes and give-backs at once, in one pipeline on this
 * thread's connection (an event loop's pump, loop/loop.c): each take the
 * kind's free try only, each give-back its release script, with everything
 * lw__take() and lw__give_back() do around them (the gate, the watchdog,
 * the minimum hold's start, the verdict).  Only where nothing else is
 * needed: lw__take_batchable(), lw__give_batchable().
 */
struct lw_take_op {
    struct lw_hold *h; /* take: filled in; give: what the batch took */
    int give;          /* 0: take, 1: give back */
    const char *key;   /* take: as lw__take() */
    size_t keylen, prefix_len;
    const lw_lock_opts *opts;
    uint64_t *fence;
    uint32_t fences; /* take: that many more fences, for sections the
                        lock will be handed on to in memory, minted with
                        the take (0: none) */
    int rc;          /* take: LW_OK (held), LW_R_BUSY (not held: take it with
                        lw__take()), or why not; give: as lw__give_back() */
    int fences_rc;   /* take, fences asked for: LW_OK when minted (the
                        lowest in first), else not */
    uint64_t first;
};

/* May the key (the full Redis key) be taken by lw__take_batch() under cfg
 * with opts: one server, no wait_replicas, a kind with a try and a
 * one-script release, no minimum hold, and no thread of this process
 * holding or waiting for it (cohort.c)?  In the gate (cfg is freed by
 * lw_shutdown()). */
int lw__take_batchable(const struct lw_settings *cfg, const char *key,
                       size_t keylen, const lw_lock_opts *opts);

/* May h, taken by lw__take_batch(), be given back by it: not lost, not
 * ended by lw_shutdown(), its configuration still the current one?  In
 * the gate. */
int lw__give_batchable(const struct lw_hold *h);

/* Do ops[0..n) (ops[i].rc set for each). */
void lw__take_batch(struct lw_take_op *ops, int n);

#endif

#ifndef LW_LEASE_H
#define LW_LEASE_H

#include <lockweave.h>

#define LW_LEASE_KEYS_MAX 64 /* keys of one lease, at most */
#include <stddef.h>
#include <stdint.h>

/*
 * Leases (lease.c), as the layers above core see them: the arguments'
 * check lw_acquire() makes, and an owner told when a lease is released (an
 * event loop keeps the leases it handed out, to give back what is left
 * when it is freed).
 */

/* What lw_acquire_keys() checks before it takes anything: LW_OK with *o
 * the caller's options (opts_size bytes of them), or LW_EINVAL. */
int lw__lease_args(const void *const *keys, const size_t *keylens, int n,
                   const lw_lock_opts *opts, size_t opts_size, lw_lock_opts *o);

/* What lw_acquire_keys() does once its arguments are checked, each key
 * with its own options (opts[i]; the wait is the shortest of them): LW_OK
 * with *out, or why not (also in lw_last_error()). */
int lw__lease_take(const void *const *keys, const size_t *keylens,
                   const lw_lock_opts *opts, int n, lw_lease **out);

/*
 * One-key leases taken and given back many at once, in one pipeline on
 * this thread's connection (an event loop's pump, loop/loop.c; take.h's
 * batch does the keys).  A take is the free try alone: busy, it is the
 * caller's to take the blocking way (lw__lease_take()).
 */

/* May the key (the bytes after the prefix) be taken in a batch with opts
 * (take.h's lw__take_batchable()), now?  1 or 0. */
int lw__lease_batchable(const void *key, size_t keylen,
                        const lw_lock_opts *opts);

/* May l be given back in a batch: taken by one, still the process's, and
 * lw__give_batchable()?  1 or 0. */
int lw__lease_give_batchable(const lw_lease *l);

/* l's first key as its caller named it (no prefix): in l, valid while l
 * is. */
void lw__lease_key(const lw_lease *l, const void **key, size_t *keylen);

struct lw_lease_op {
    int give;        /* 0: take key, 1: give back lease */
    const void *key; /* take: one key (copied), with its options */
    size_t keylen;
    const lw_lock_opts *opts;
    lw_lease *lease; /* give: the lease, freed; take: the lease won */
    int status;      /* take: LW_OK (lease), LW_R_BUSY (held by another:
                        take it with lw__lease_take()), or why not; give:
                        what lw_release() would return */
    int run_fences;  /* take: also mint the fences of a run handed on in
                        memory (lw__lease_fences()'s, for its first
                        section), with the take */
    uint32_t fences; /* ... how many were, 0 if none; first_fence the
                        lowest */
    uint64_t first_fence;
};

/* Do ops[0..n), each status set. */
void lw__lease_batch(struct lw_lease_op *ops, int n);

/*
 * An event loop's hand-offs between its own requests for one key
 * (loop/loop.c): a lease of a batch handed on in memory to the next
 * request, as threads of a process hand a lock on (cohort.c): the same
 * token and validity, a fence of the run's, the section that handed it on
 * checked in Redis afterwards.  The loop keeps the run (its count, its
 * fences) and orders each check before the run's release through Redis.
 */

/* May requests with opts be handed a lease on: a kind that allows it, no
 * minimum hold, local_handoffs above 0?  1 or 0. */
int lw__lease_handable(const lw_lock_opts *opts);

/* May from (one key, given back in a batch) be handed on now, as section
 * run + 1 of its run (lw__hold_may_hand())?  1 or 0. */
int lw__lease_may_hand(const lw_lease *from, unsigned run);

/* Fences for the rest of from's run (run sections served so far, since
 * the check that let it go on if one did: as many as it may still hand
 * on, *n), all above from's and below the next holder's, minted only
 * while the key holds from's token (a round trip): LW_OK with *first the
 * lowest, LW_ELOST, or another code when no answer came.  Fences a run
 * does not use are a gap, as a thread cohort's. */
int lw__lease_fences(lw_lease *from, unsigned run, uint64_t *first,
                     uint32_t *n);

/* Hand from's lock on to *to, a new lease of the same key and options with
 * fence, for a request that waited since asked_us and gives up at
 * until_us (lw__now_us(); counted as a wait, in lw_stats and the site's
 * metrics): LW_OK, from no longer renewed and waiting for its check (then
 * lw__lease_handed_back() and nothing else).  With nowait, LW_R_BUSY when
 * from's renewal is in flight: nothing done (the caller's thread must not
 * wait for it).  Otherwise (LW_ETIMEOUT: until_us came while the renewal
 * was waited for; LW_ENOMEM, LW_ESHUTDOWN) nothing is handed and from is
 * given back as usual. */
int lw__lease_hand_on(lw_lease *from, uint64_t fence, int nowait,
                      int64_t asked_us, int64_t until_us, lw_lease **to);

/* A request with opts that waited since asked_us for a lease to be handed
 * on, in vain (its wait ran out): counted as a blocking wait that timed
 * out is, in lw_stats and the site's metrics. */
void lw__lease_waited_out(const lw_lock_opts *opts, int64_t asked_us);

/* Is from's key still its token in Redis, right now (a round trip)?  LW_OK,
 * LW_ELOST, or another code when no answer came.  One answer is good for
 * every section of the run that ended before it was asked: a token gone
 * from the key never comes back to it. */
int lw__lease_check(lw_lease *from);

/* lw__lease_check(), and while nobody waits for the key in Redis's queue,
 * fences for local_handoffs more sections of the run (*n, *first the
 * lowest), minted in the same step: LW_OK with fences, LW_R_BUSY (still
 * ours, someone waits: none minted), or as lw__lease_check(). */
int lw__lease_check_more(lw_lease *from, uint64_t *first, uint32_t *n);

/* End from, handed on, with check (what Redis said of its key after its
 * section ended; LW_OK also from a lw__lease_fences() asked after it):
 * from is freed, and LW_OK or LW_ELOST returned, as lw_release() would. */
int lw__lease_handed_back(lw_lease *from, int check);

/* Release hook: fn(owner, l) runs in lw_release(l), from the releasing
 * thread, before l's keys are given back.  fn NULL: none.  Not
 * thread-safe against a release of l. */
typedef void (*lw_lease_owner_fn)(void *owner, lw_lease *l);
void lw__lease_set_owner(lw_lease *l, lw_lease_owner_fn fn, void *owner);

/* Take l from its owner, if fn is its hook: the owner (its hook now none),
 * else NULL.  Atomic against lw_release(l), which takes the hook the same
 * way before running it: of an owner letting go of l and a release on
 * another thread, exactly one gets it. */
void *lw__lease_claim(lw_lease *l, lw_lease_owner_fn fn);

/* The woven loop body's lease on this thread (lw_loop_body_begin()), or
 * NULL; and, when it has the full Redis key key, that key's hold, with
 * *fence its fence (a guard of it inside the body is re-entry), else NULL. */
struct lw_hold;
const lw_lease *lw__lease_body(void);
const struct lw_hold *lw__lease_body_key(const char *key, size_t keylen,
                                         uint64_t *fence);

#endif

#ifndef LW_HOLD_H
#define LW_HOLD_H

#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>

#include "core/token.h"

/*
 * One held lock as the protocol sees it: where it was taken, under which
 * token, for how long.  It lives inside the guard, on the locking thread's
 * stack: lw__watchdog_remove() waits out an in-flight renewal before the
 * guard (and so the lease) can go away.
 */
struct lw_settings;
struct lw_backend;
struct lw_kind;
struct lw_cohort;
struct lw_sitectr;

struct lw_hold {
    const struct lw_settings *cfg; /* configuration it was taken under:
                                      renewal and release go to the same
                                      servers even after lw_configure() */
    const struct lw_backend *be;   /* how it is taken, renewed, released */
    const struct lw_kind *kind;    /* what kind of lock (kind.h) */
    const char *key;               /* the full Redis key, prefix included */
    size_t keylen;
    size_t prefix_len; /* the prefix's length: key's first bytes */
    char token[LW_TOKEN_MAX];
    int toklen;
    uint32_t expire_ms;
    uint32_t drift_ms;   /* clock-drift allowance taken off every validity
                            (Redlock); 0 with one server */
    char expire_str[12]; /* expire_ms in decimal, as commands want it */
    int expire_len;
    int32_t renews_left; /* < 0: unlimited */
    uint32_t hold_ms;    /* hold_at_least_ms */
    uint32_t permits;    /* > 0: a semaphore's permit (opts->permits) */
    char permits_str[8]; /* permits in decimal */
    int permits_len;
    struct lw_cohort *cohort; /* taken through it (cohort.c), given back
                                 through it; NULL if not */
    int64_t hold_until_ms;    /* a release before then keeps the key until
                                 then (our clock; set when acquired) */
    int64_t valid_until_ms;   /* the lease surely ends by then (our clock) */
    int64_t due_ms;           /* next watchdog action */
    int heap_idx; /* position in the watchdog heap, -1 if not there */
    int fifo;     /* watchdog FIFO it is queued in, -1 if none */
    struct lw_hold *prev, *next; /* links in that FIFO */
    int inflight;                /* the watchdog is renewing it right now */
    int lost;                    /* atomic: set once, by watchdog or release */
    int ended;       /* released by lw_shutdown(): nothing left to give back */
    int lost_reason; /* LW_LOST_..., set by the watchdog when it marked the
                        lease lost and owes the lost handler a call */
    struct lw_sitectr *site; /* metrics: the annotation site's counters */
    uint64_t waited_us;      /* time spent waiting for it while busy */
    int64_t acquired_us;     /* when it was had (our clock), for the hold
                                time the metrics record at its release */
    uint32_t window_ms;      /* run once: the mark's window; 0 for a lock (its
                                outcome is per thread: core/once.h) */
};

/* Prepare l for taking key (not copied: it must outlive l; its first
 * prefix_len bytes are the key prefix) through be under cfg with opts:
 * lease length, renewals; known to no watchdog queue. */
void lw__hold_init(struct lw_hold *l, const struct lw_backend *be,
                   const struct lw_settings *cfg, const char *key,
                   size_t keylen, size_t prefix_len, const lw_lock_opts *opts);

/* Taking l found it busy: count it (lw_stats, the site's metrics). */
void lw__hold_contended(struct lw_hold *l);

/* Taking l waited since start_us (our clock) for it: add the time to the
 * counters and to l->waited_us. */
void lw__hold_waited(struct lw_hold *l, int64_t start_us);

/* The lease was just acquired: start its minimum hold, if it has one.  Our
 * clock now is past the moment Redis set the key, so the hold lasts at
 * least hold_ms from there. */
void lw__hold_acquired(struct lw_hold *l);

/* How long a release now must keep the key (ms, rounded up): what is left
 * of the minimum hold, 0 when none is. */
int64_t lw__hold_left_ms(const struct lw_hold *l);

/* The lease is lost (expired, evicted, another owner's): set once, read by
 * the locking thread (lw_still_held(), release) and the watchdog.  1 for
 * the call that set it, which then owes the lost handler its call. */
int lw__hold_mark_lost(struct lw_hold *l);

/* Tell the lost handler (lw_set_lost_handler()) that l was lost for reason
 * (LW_LOST_...); l stays valid during the call.  No lock may be held. */
void lw__hold_notify_lost(const struct lw_hold *l, int reason);

/* What ends a section LW_ELOST at its release (from the holder's thread, no
 * lock held): log why (the key named), mark l lost and, the first time,
 * tell the lost handler reason.  Returns LW_ELOST. */
int lw__hold_lose(struct lw_hold *l, int reason, const char *why);

/*
 * Hand-offs inside the process (cohort.c between threads, loop/loop.c
 * between an event loop's requests): the lock goes on to the next caller
 * with the same token, no round trip, and each section that handed it on
 * learns from a later check in Redis whether it was ours to the end.
 */

/* May l's lock be handed on now, to a caller whose lease is expire_ms, as
 * the run's section number run + 1 (run: sections its acquisition from
 * Redis has served)?  Not while lw_shutdown() runs or once l is lost, at
 * most local_handoffs times a run, and only with three quarters of the
 * next lease left by our clock (which never believes in more than Redis
 * gave). */
int lw__hold_may_hand(const struct lw_hold *l, unsigned run,
                      uint32_t expire_ms);

/* The verdict on a section of l that handed the lock on: check is what
 * Redis said of the key after the section ended (LW_OK: still l's token;
 * LW_ELOST: not; another code: no answer).  LW_OK or LW_ELOST, as
 * lw__hold_lose(). */
int lw__hold_handed_verdict(struct lw_hold *l, int check);

static inline int lw__hold_lost(const struct lw_hold *l)
{
    return __atomic_load_n(&l->lost, __ATOMIC_ACQUIRE);
}

#endif

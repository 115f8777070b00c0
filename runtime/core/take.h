#ifndef LW_TAKE_H
#define LW_TAKE_H

#include <lockweave.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hold.h"

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

#endif

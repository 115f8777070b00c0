#ifndef LW_LEASE_H
#define LW_LEASE_H

#include <lockweave.h>
#include <stddef.h>

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

/* Release hook: fn(owner, l) runs in lw_release(l), from the releasing
 * thread, before l's keys are given back.  fn NULL: none.  Not
 * thread-safe against a release of l. */
typedef void (*lw_lease_owner_fn)(void *owner, lw_lease *l);
void lw__lease_set_owner(lw_lease *l, lw_lease_owner_fn fn, void *owner);

/* l's owner if fn is its hook, else NULL. */
void *lw__lease_owner(const lw_lease *l, lw_lease_owner_fn fn);

#endif

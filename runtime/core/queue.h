#ifndef LW_QUEUE_H
#define LW_QUEUE_H

#include <hiredis/hiredis.h>
#include <lockweave.h>
#include <stdint.h>

#include "core/hold.h"

/*
 * The queue backend: one server or a Redis Cluster, waiters queued fairly
 * in Redis and handed the lock on release (see backend.h for the contract;
 * kind.h and kind_*.c for what runs on the server).
 */
struct lw_names;

/* How long one renewal call may follow cluster redirections and retries:
 * the watchdog's round goes on to the other leases after it. */
#define LW_RENEW_TRY_MS 250

int lw__queue_acquire(struct lw_hold *l, const lw_lock_opts *opts,
                      uint64_t *fence);
int lw__queue_release(struct lw_hold *l);
void lw__queue_renew(struct lw_hold *const *v, int n, int *results);
int lw__queue_fences(struct lw_hold *l, uint32_t n, uint64_t *first);
int lw__queue_check(struct lw_hold *l);

/* The release script for l's token (names: its companion keys), following
 * cluster redirections until deadline_us.  LW_OK with *r the reply (caller
 * frees). */
int lw__queue_release_script(const struct lw_hold *l,
                             const struct lw_names *names, int64_t deadline_us,
                             redisReply **r, int *replayed);

/* A mutex's release for any key and token under configuration s, for a
 * release that is not a lease's own (lockweave-ctl's forced unlock): what
 * kind_mutex.c sends.  LW_OK with *r an integer reply: 1 released (and the
 * next waiter told), 2 released by an earlier run, 0 gone, -1 another
 * owner's. */
struct lw_settings;
int lw__release_send(const struct lw_settings *s, const char *key,
                     size_t keylen, const char *token, size_t toklen,
                     const struct lw_names *names, int flags,
                     int64_t deadline_us, redisReply **r, int *replayed);

/* Leave no receipt: the release is not the holder's, whose own release
 * must then find its lock lost, not released by itself. */
#define LW_RELEASE_NO_RECEIPT 1

#endif

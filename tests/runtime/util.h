/* Helpers shared by the runtime tests: clocks, lockweave set-up against a
 * harness server, and looks at lock keys behind lockweave's back. */
#ifndef LW_TEST_UTIL_H
#define LW_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <lockweave.h>

#include "check.h"
#include "redis_harness.h"

/* Monotonic clock (system-wide, so comparable across processes). */
int64_t now_us(void);
int64_t now_ms(void);
void sleep_ms(int ms);

/* Point lockweave at s (its TCP URL) with short timeouts; CHECKs LW_OK. */
void use_server(const rh_server *s);

/* Same, with an explicit URL. */
void use_url(const char *url, int connect_timeout_ms, int command_timeout_ms);

/* Lock options in one expression. */
lw_lock_opts lock_opts(uint32_t expire_ms, uint32_t wait_ms, int32_t max_renew);

/* lw_lock() on a C string key. */
int lock_str(lw_guard *g, const char *key, uint32_t expire_ms,
             uint32_t wait_ms);

/* The lock key lockweave writes for `key` with the default prefix: 1 if it
 * exists in db 0, 0 if not (CHECK fails on an I/O error). */
int lock_exists(rh_server *s, const char *key);

/* PTTL of the lock key for `key` (-2: no key). */
long long lock_pttl(rh_server *s, const char *key);

/* Calls of the commands cmds[0..n) (lower case, as INFO commandstats names
 * them) that s ran since it started or its last CONFIG RESETSTAT, summed
 * from one INFO reply (0 for one never run); CHECK fails on an I/O error. */
long long command_calls(rh_server *s, const char *const *cmds, size_t n);

/* Run fn(0) .. fn(n - 1), each in a forked child that then shuts lockweave
 * down and exits; CHECKs that every child exited 0. */
void in_processes(int n, void (*fn)(int));

/* In a forked child pointed at s, take key with o, then die by SIGKILL
 * while holding it: returns once the child is gone (its lock left to its
 * lease). */
void die_holding(const rh_server *s, const char *key, const lw_lock_opts *o);

/* Delete every fence counter on s, whatever it is named, as eviction or
 * FLUSHALL would. */
void forget_fences(rh_server *s);

/* Wait (polling) up to timeout_ms for cond_fn(arg) to become true; returns
 * the milliseconds it took, or -1 on timeout. */
int64_t wait_until(int (*cond_fn)(void *), void *arg, int timeout_ms);

/* For wait_until(): does the master (an rh_server *) count a replica for
 * WAIT?  "online" in the master's view (after a diskless sync only once the
 * replica's first ACK came in, up to a second after the replica itself
 * reports the link up). */
int replica_online(void *master);

/* Start m, a master that syncs a replica at once (not after the default
 * 5 s), and r, its replica (over TLS with LW_TEST_TLS), and wait until m
 * counts r for WAIT.  port and args: storage the servers keep (a restart
 * reads them again), PAIR_ARGS words for args.  CHECKs. */
#define PAIR_ARGS 6
void start_pair(rh_server *m, rh_server *r, char port[16], const char **args);

#endif

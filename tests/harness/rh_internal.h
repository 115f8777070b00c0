/* Pieces of the harness shared between its files; not for tests. */
#ifndef LW_RH_INTERNAL_H
#define LW_RH_INTERNAL_H

#include "redis_harness.h"

/* A connection that reports failure in err (size n) instead of stderr, for
 * the readiness poll where refusals are expected. */
redisContext *rh__connect_quiet(const rh_server *s, int timeout_ms, char *err,
                                size_t n);

/* Servers this process started, so an early exit still stops them. */
void rh__registry_add(pid_t pid, const char *dir);
void rh__registry_remove(pid_t pid);

/* SIGTERM (SIGCONT first, in case it is stopped), reap; SIGKILL after
 * grace_ms.  Returns 0 if it exited by itself, -1 if it had to be killed. */
int rh__terminate(pid_t pid, int grace_ms);

void rh__sleep_ms(int ms);

/* The tail of s's log on stderr, to explain what went wrong. */
void rh__print_log(const rh_server *s);

/* With LW_TEST_TLS=1 in the environment: the certificates every server of
 * this process serves TLS with (made on first call, removed at exit), and
 * LOCKWEAVE_TLS_CA_FILE set to their CA unless already set.  NULL without
 * it, or when they could not be made (printed). */
const rh_tls *rh__tls_from_env(void);

#endif

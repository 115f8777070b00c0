#ifndef LW_GATE_H
#define LW_GATE_H

#include <stdint.h>

/*
 * The runtime's gate: which guard calls are inside the runtime, and how
 * lw_shutdown() ends their waits.  lw_shutdown() closes the gate (no new
 * acquisition starts; every wait in progress is cut short), waits until no
 * call is inside, frees what the calls use, and opens the gate again.
 */

/* Count a call in.  lw__gate_enter() refuses while the gate is closed
 * (LW_ESHUTDOWN); lw__gate_pass() always lets in (a release must be able to
 * finish).  Each admitted call ends with lw__gate_exit(). */
int lw__gate_enter(void);
void lw__gate_pass(void);
void lw__gate_exit(void);

/* 1 while lw_shutdown() runs: a waiting call gives up and leaves. */
int lw__gate_closing(void);

/* Close: refuse new calls, cut every wait short, return once no call is
 * inside.  Open: let calls in again.  lw_shutdown() only. */
void lw__gate_close(void);
void lw__gate_open(void);

/* Run fn each time the gate closes, once `closing` is set and before the
 * closer waits for the calls inside: a module whose calls block on
 * condition variables of its own wakes them there (fn takes no lock of the
 * gate's, so it may take its module's).  Registering fn again does
 * nothing; at most LW_GATE_HOOKS_MAX in all.  Thread-safe. */
#define LW_GATE_HOOKS_MAX 4
void lw__gate_on_close(void (*fn)(void));

/* Sleep us microseconds, less if the gate closes meanwhile (then 1). */
int lw__gate_sleep_us(int64_t us);

/* A socket a call blocks reading (BLPOP): while watched, closing the gate
 * shuts it down, so the blocked read returns at once.  The node lives on
 * the caller's stack; lw__gate_unwatch() says whether the gate shut the
 * socket, and must come before the socket is closed (after it, the fd may
 * be another file's). */
struct lw_gate_watch {
    int fd;
    int shut;
    struct lw_gate_watch *next, **pprev;
};
void lw__gate_watch(struct lw_gate_watch *w, int fd);
int lw__gate_unwatch(struct lw_gate_watch *w);

#endif

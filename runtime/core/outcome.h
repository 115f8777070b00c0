#ifndef LW_OUTCOME_H
#define LW_OUTCOME_H

#include <stdint.h>

/*
 * Run once's outcome, "<type>:<value>" (once.c says the types; outcome.c keeps
 * it): the one a run that succeeded stores at its release, or the one a take
 * found in a done mark.  Kept per thread, not in the guard, which has no room
 * for it: a guard is used by one thread, which sets the outcome just before
 * lw_guard_leave() or reads it just after lw_guard_enter(), naming the
 * guard's hold so that no other guard (one later at the same address
 * included) takes it for its own.
 */
struct lw_hold;

/* The longest outcome: "d:" and the longest %.17g of a double. */
#define LW_OUTCOME_MAX 32

struct lw_outcome {
    const struct lw_hold *hold; /* whose it is; NULL: nobody's */
    uint8_t len;
    char text[LW_OUTCOME_MAX]; /* NUL-terminated */
};

/* This thread's. */
struct lw_outcome *lw__outcome(void);

/* Drop this thread's outcome if it is l's (l is being taken anew). */
void lw__outcome_forget(const struct lw_hold *l);

#endif

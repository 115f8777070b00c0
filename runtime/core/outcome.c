/* Run once's outcome, per thread (outcome.h). */
#include "core/outcome.h"

#include <stddef.h>

static _Thread_local struct lw_outcome outcome;

struct lw_outcome *lw__outcome(void)
{
    return &outcome;
}

void lw__outcome_forget(const struct lw_hold *l)
{
    if (outcome.hold == l)
        outcome.hold = NULL;
}

/* Redlock over independent masters: not implemented yet (issue #7). */
#include "redlock.h"

#include <lockweave.h>

#include "log.h"

int lw__redlock_acquire(struct lw_gimpl *g)
{
    (void)g;
    lw__log(LW_LOG_ERROR, "multi-master (Redlock) URLs are not supported yet");
    return LW_ECONFIG;
}

int lw__redlock_release(struct lw_gimpl *g)
{
    (void)g;
    return LW_ECONFIG;
}

int lw__redlock_renew(struct lw_lease *l)
{
    (void)l;
    return 0;
}

/* The guarded section, exactly as a user writes one: an annotation woven by
 * lockweave_generate().  The lease (1 s) is short so that faults longer than
 * it stay short enough for CI; the wait (2 s) outlasts a holder's lost lease,
 * so waiters see a dead or paused holder's key expire and get in. */
#include <lockweave.h>

#include "fw_worker.h"

REDIS_LOCK("faults:{key}", 1s, 2s, on_fail = -1)
int fw_guarded_section(int key, struct fw_thread *t)
{
    return fw_section_body(t, key, lw_fence(), 1);
}

/* The guarded sections, exactly as a user writes them: annotations woven by
 * lockweave_generate(), one function per lock kind and role.  The lease
 * (1 s) is short so that faults longer than it stay short enough for CI; the
 * wait (2 s) outlasts a holder's lost lease, so waiters see a dead or paused
 * holder's key expire and get in. */
#include <lockweave.h>

#include "fw_worker.h"

REDIS_LOCK("faults:{key}", 1s, 2s, on_fail = -1)
int fw_guarded_section(int key, struct fw_thread *t)
{
    return fw_section_body(t, key, lw_fence(), 1, FW_ROLE_MUTEX);
}

/* A read/write lock: both functions name the same key template. */
REDIS_LOCK("faults-rw:{key}", 1s, 2s, mode = write, on_fail = -1)
int fw_write_section(int key, struct fw_thread *t)
{
    return fw_section_body(t, key, lw_fence(), 1, FW_ROLE_WRITER);
}

REDIS_LOCK("faults-rw:{key}", 1s, 2s, mode = read, on_fail = -1)
int fw_read_section(int key, struct fw_thread *t)
{
    return fw_section_body(t, key, lw_fence(), 1, FW_ROLE_READER);
}

/* A semaphore: at most FW_SEM_PERMITS (2) holders of a key at once. */
REDIS_LOCK("faults-sem:{key}", 1s, 2s, permits = 2, on_fail = -1)
int fw_sem_section(int key, struct fw_thread *t)
{
    return fw_section_body(t, key, lw_fence(), 1, FW_ROLE_PERMIT);
}

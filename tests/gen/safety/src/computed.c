#include "safety.h"

#define LOCKS_HEADER "job_locks.h"
#include LOCKS_HEADER

JOB_LOCK("job:{id}")
uint64_t safety_case(int id)
{
    (void)id;
    return lw_fence();
}

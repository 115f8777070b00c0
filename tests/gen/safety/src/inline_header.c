#include "safety.h"
#include "inline_locks.h"

uint64_t safety_case(int id)
{
    return inline_locked(id);
}

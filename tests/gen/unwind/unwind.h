/* C functions under REDIS_LOCK (unwind_locked.c) that call back into the
 * C++ of unwind.cpp, whose callbacks throw through them. */
#ifndef LW_TEST_UNWIND_H
#define LW_TEST_UNWIND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*step_fn)(void *arg);

/* step(arg) under the lock unwind:<id>. */
int with_lock(int64_t id, step_fn step, void *arg);
/* step(arg) under pair:<a> and pair:<b>, entered as one. */
int with_two(int64_t a, int64_t b, step_fn step, void *arg);
/* with_lock() under unwind:<id> already: its guard is a re-entry. */
int nested(int64_t id, step_fn step, void *arg);

#ifdef __cplusplus
}
#endif

#endif

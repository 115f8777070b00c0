/* The guarded section the wrapper benchmark calls: one definition woven by
 * lockweave-gen (mb_wrap_woven.c), one written by hand against the guard API
 * (mb_wrap_hand.c), one by hand with lw_lock() and snprintf
 * (mb_wrap_lwlock.c).  Each lives in its own file so the caller cannot inline
 * it and callgrind can collect exactly this function. */
#ifndef MB_WRAP_H
#define MB_WRAP_H

#include <stdint.h>

/* The key every variant builds: "mb:" + id, prefixed "lock:" by the runtime. */
#define MB_WRAP_KEY_FMT "mb:%lld"

int mb_section(int64_t id);

#endif

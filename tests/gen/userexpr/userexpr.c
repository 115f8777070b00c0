#include <lockweave.h>

/* Mistakes inside on_fail, skip_if and loop are C errors the compiler finds
 * in the woven file; they must point here, at the annotation, not at the
 * generated wrapper. */
REDIS_LOCK("job:{id}", 1s, 0, on_fail = no_such_fallback)
int run(int id) { return id; }

REDIS_LOCK("job:{id}", 1s, 0,
           skip_if = no_such_flag[id])
void skip(int id) { (void)id; }

REDIS_LOCK("job:{id}", 1s, 0, loop = no_such_loop,
           on_fail = no_such_handler[id])
void later(int id) { (void)id; }

// expect: 6: no_such_fallback
// expect: 10: no_such_flag
// expect: 13: no_such_loop
// expect: 14: no_such_handler

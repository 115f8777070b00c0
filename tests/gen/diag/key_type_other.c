#include <lockweave.h>

/* Types with no decimal form the runtime could print (the key API takes
 * int64/uint64 and strings): refused, never truncated. */
REDIS_LOCK("a:{w}:{c}:{fp}", 1s, 0)
int f(__int128 w, _Complex double c, int (*fp)(void)) { return (int)w + (int)c + fp(); }

// expect: 5:15: error: '{w}' has type '__int128', which cannot be printed in a lock key
// expect: 5:19: error: '{c}' has type '_Complex double', which cannot be printed in a lock key
// expect: 5:23: error: '{fp}' has type 'int (*)(void)', which cannot be printed in a lock key

#include <lockweave.h>
#include "header_def.h"

/* A file that mentions REDIS_LOCK is parsed, and the header's annotated
 * definition is caught (a file that does not is passed through unparsed). */
REDIS_LOCK("u:{x}", 1s, 0)
int use(int x) { return in_header(x); }

// expect: header_def.h:2:19: error: REDIS_LOCK on 'in_header', which is defined in a header

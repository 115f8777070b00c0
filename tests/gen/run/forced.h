/* Given with -include: read before forced.c's first line. */
#include <lockweave.h>

REDIS_LOCK("forced:{id}", 2s, 0)
int forced_locked(int id);

/* A project's alias for its usual lock, in a header its build names with
 * -isystem (target_include_directories(SYSTEM)). */
#include <lockweave.h>

#define STOCK_LOCK(k) REDIS_LOCK(k, 10s, 5s)

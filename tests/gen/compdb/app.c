/* Only compiles with the flags from compile_commands.json (APP_KEY, the
 * include directory of app_conf.h). */
#include <lockweave.h>
#include "app_conf.h"

REDIS_LOCK(APP_KEY, APP_TTL, 0)
int work(int id) { return id; }

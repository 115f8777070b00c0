/* lw_shutdown(): every module lets go of what it holds, top down. */
#include <lockweave.h>

#include "base/config.h"
#include "core/watchdog.h"
#include "net/conn.h"
#include "topology/masters.h"
#include "topology/route.h"

void lw_shutdown(void)
{
    lw__watchdog_stop();
    lw__conn_thread_drop();
    lw__route_thread_drop();
    lw__masters_drop();
    lw__route_shutdown();
    lw__settings_free_all();
}

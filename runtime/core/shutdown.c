#include <lockweave.h>

#include "base/config.h"
#include "net/conn.h"
#include "core/guard.h"
#include "topology/masters.h"
#include "topology/route.h"
#include "core/watchdog.h"

void lw_shutdown(void)
{
    lw__watchdog_stop();
    lw__conn_thread_drop();
    lw__route_thread_drop();
    lw__masters_drop();
    lw__route_shutdown();
    lw__mailbox_reset();
    lw__settings_free_all();
}

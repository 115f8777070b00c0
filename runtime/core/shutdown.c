/* lw_shutdown(): every module lets go of what it holds, top down. */
#include <lockweave.h>

#include "base/config.h"
#include "base/gate.h"
#include "core/watchdog.h"
#include "net/conn.h"
#include "topology/masters.h"
#include "topology/route.h"
#include "topology/sentinel.h"

void lw_shutdown(void)
{
    /* First, so that nothing below runs under a call still using it:
     * waiters are cut short and leave their queues, releases finish. */
    lw__gate_close();
    lw__watchdog_stop();
    lw__conn_thread_drop();
    lw__route_thread_drop();
    lw__masters_drop();
    lw__route_shutdown();
    lw__sentinel_shutdown();
    lw__settings_free_all();
    lw__gate_open();
}

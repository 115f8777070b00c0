#include <lockweave.h>

#include "base/config.h"
#include "net/conn.h"
#include "core/guard.h"
#include "topology/masters.h"
#include "topology/route.h"
#include "base/thread.h"
#include "core/watchdog.h"

void lw_shutdown(void)
{
    struct lw_thread *t = lw__thread();

    lw__watchdog_stop();
    if (t->conn != NULL) {
        lw__conn_drop(t->conn);
    }
    lw__route_thread_drop();
    lw__masters_drop();
    lw__route_shutdown();
    lw__mailbox_reset();
    lw__settings_free_all();
}

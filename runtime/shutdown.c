#include <lockweave.h>

#include "config.h"
#include "conn.h"
#include "guard.h"
#include "redlock_io.h"
#include "route.h"
#include "thread.h"
#include "watchdog.h"

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

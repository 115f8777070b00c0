/* Each thread's connection to the configured endpoint (or, behind
 * Sentinel, to the master), kept in its struct lw_thread and freed when
 * the thread exits: no hiredis context is ever shared between threads
 * mid-command. */
#include "net/conn.h"

#include <lockweave.h>

#include "base/thread.h"

static void conn_free_any(void *p)
{
    lw__conn_free(p);
}

int lw__conn_thread_to(const struct lw_url *url, struct lw_conn **out)
{
    struct lw_conn *c = lw__thread()->res[LW_RES_CONN];

    if (c == NULL) {
        if ((c = lw__conn_new()) == NULL)
            return LW_ENOMEM;
        lw__thread_keep(LW_RES_CONN, c, conn_free_any);
    }
    if (c->url != url) {
        /* Another server (a new master after a failover): nothing learnt
         * about the old one applies, its reconnect backoff included. */
        lw__conn_drop(c);
        c->failing = 0;
        c->url = url;
    }
    *out = c;
    return lw__conn_ensure(c);
}

int lw__conn_thread(struct lw_conn **out)
{
    return lw__conn_thread_to(NULL, out);
}

void lw__conn_thread_drop(void)
{
    struct lw_conn *c = lw__thread()->res[LW_RES_CONN];

    if (c != NULL)
        lw__conn_drop(c);
}

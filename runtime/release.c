/* Release: stop renewal first, then compare-and-delete our token and publish
 * the wake-up in the same script. */
#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "config.h"
#include "conn.h"
#include "guard.h"
#include "keynames.h"
#include "log.h"
#include "redlock.h"
#include "route.h"
#include "scripts.h"
#include "slot.h"
#include "watchdog.h"

static int verdict(struct lw_gimpl *g, long long result, int replayed)
{
    const char *why;

    if (result == 1)
        return lw__lease_lost(&g->lease) ? LW_ELOST : LW_OK;
    /* A replayed release whose first attempt deleted the key reads "gone":
     * while our lease was still valid, that is our own delete. */
    if (result == 0 && replayed && lw__now_ms() < g->lease.valid_until_ms)
        return LW_OK;
    why = result == 0 ? "the lease had expired" : "another owner holds it";
    lw__log(LW_LOG_WARN, "lock %.*s lost before release: %s", (int)g->keylen,
            g->key, why);
    lw__lease_mark_lost(&g->lease);
    return LW_ELOST;
}

/* Run the release script on this thread's connection, or, in a cluster, on
 * the master of the key's slot, following redirections and failovers while
 * the lease may still be ours. */
static int run_release(struct lw_gimpl *g, const char *const *argv,
                       const size_t *lens, int nargs, redisReply **r,
                       int *replayed)
{
    const struct lw_settings *s = g->lease.cfg;
    struct lw_conn *conn;
    int64_t deadline_us, t;
    int rc;

    if (s->ep.topology != LW_TOPO_CLUSTER) {
        rc = lw__conn_thread(&conn);
        return rc != LW_OK ? rc
                           : lw__conn_script(conn, LW_SCRIPT_RELEASE, 3, nargs,
                                             argv, lens, r, replayed);
    }
    deadline_us = g->lease.valid_until_ms * 1000;
    t = lw__now_us() + (int64_t)s->command_timeout_ms * 1000;
    return lw__route_script(s, lw__key_slot(g->key, g->keylen),
                            LW_SCRIPT_RELEASE, 3, nargs, argv, lens, r,
                            replayed, deadline_us > t ? deadline_us : t);
}

int lw__release(struct lw_gimpl *g)
{
    struct lw_names names;
    redisReply *r = NULL;
    char handoff[16];
    int rc, replayed = 0;

    /* Cancel renewal before deleting: a PEXPIRE in flight after our DEL
     * could otherwise extend a key someone else just created. */
    lw__watchdog_remove(&g->lease);
    if (g->lease.cfg->ep.topology == LW_TOPO_REDLOCK)
        return lw__redlock_release(g);
    rc = lw__names_init(&names, g->key, g->keylen);
    if (rc == LW_OK) {
        const char *argv[] = {g->key,         names.queue, names.fence,
                              g->lease.token, names.chan,  handoff,
                              names.alive,    "spublish"};
        size_t lens[] = {g->keylen,      names.queuelen,
                         names.fencelen, (size_t)g->lease.toklen,
                         names.chanlen,  0,
                         names.alivelen, 8};
        int cluster = g->lease.cfg->ep.topology == LW_TOPO_CLUSTER;
        lens[5] = (size_t)snprintf(handoff, sizeof handoff, "%d",
                                   g->lease.cfg->handoff_ms);
        rc = run_release(g, argv, lens, cluster ? 5 : 4, &r, &replayed);
    }
    if (rc == LW_OK && r->type == REDIS_REPLY_INTEGER) {
        rc = verdict(g, r->integer, replayed);
    } else {
        /* The body ran under the lock; only the early unlock failed.  The
         * key ends by its TTL, so waiters are delayed, not endangered. */
        lw__log(LW_LOG_WARN,
                "could not release lock %.*s (%s); it ends by its TTL",
                (int)g->keylen, g->key, lw_strerror(rc ? rc : LW_EREDIS));
        rc = lw__lease_lost(&g->lease) ? LW_ELOST : LW_OK;
    }
    if (r != NULL)
        freeReplyObject(r);
    lw__names_free(&names);
    return rc;
}

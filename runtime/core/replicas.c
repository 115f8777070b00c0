/*
 * Replica-safe acquire.  Redis replicates asynchronously: a master that fails
 * right after granting a lock may not have passed the SET on, and the
 * promoted replica grants the same lock to someone else.  WAIT closes most of
 * that window: the acquisition only counts once enough replicas acknowledged
 * it.  It is not consensus — a failover may still promote a replica that had
 * not acknowledged, and an acknowledged write is not fsynced — but it no
 * longer happens because of ordinary replication lag.
 */
#include "core/replicas.h"

#include <lockweave.h>
#include <stdio.h>

#include "base/config.h"
#include "base/log.h"
#include "base/result.h"
#include "core/keynames.h"
#include "core/queue.h"
#include "core/send.h"

/*
 * WAIT counts the replicas that have every write of *this connection* so
 * far.  The lock may have been written by another connection — handed to us
 * by a release script, or by a SET on a connection that broke and was
 * replaced — so one write of ours goes first: INCR of the key's fence counter
 * (always safe: fences only have to increase).  The replication stream is
 * ordered, so a replica that has the INCR has the lock too.
 */
static int wait_ack(const struct lw_hold *l, const struct lw_names *names,
                    struct lw_target *to, long long *acked)
{
    const struct lw_settings *cfg = l->cfg;
    char n[16], t[16];
    const char *wait_argv[] = {"WAIT", n, t};
    size_t wait_lens[] = {4, 0, 0};
    const char *incr_argv[] = {"INCR", names->fence};
    size_t incr_lens[] = {4, names->fencelen};
    struct lw_cmd cmds[] = {{2, incr_argv, incr_lens},
                            {3, wait_argv, wait_lens}};
    redisReply *r[2];
    int replayed, rc;

    wait_lens[1] = (size_t)snprintf(n, sizeof n, "%d", cfg->wait_replicas);
    wait_lens[2] = (size_t)snprintf(t, sizeof t, "%d", cfg->wait_timeout_ms);
    /* In a cluster WAIT counts the replicas of the key's master.  The
     * server answers WAIT after up to its timeout: the reply is read up to
     * that much past the command timeout. */
    rc =
        lw__send(to,
                 &(struct lw_request){
                     .cmds = cmds, .ncmds = 2, .wait_ms = cfg->wait_timeout_ms},
                 0, r, &replayed);
    if (rc == LW_R_ASKED) /* the slot is moving: cannot tell, give up */
        return LW_EREDIS;
    if (rc != LW_OK)
        return rc;
    *acked = r[1]->type == REDIS_REPLY_INTEGER ? r[1]->integer : -1;
    lw__replies_free(r, 2);
    return LW_OK;
}

int lw__wait_replicas(struct lw_hold *l, const struct lw_names *names,
                      struct lw_target *to)
{
    long long acked = -1;
    int rc = wait_ack(l, names, to, &acked);

    if (rc == LW_OK && acked >= l->cfg->wait_replicas)
        return LW_OK;
    if (rc == LW_OK) {
        lw__log(LW_LOG_WARN,
                "lock %.*s reached %lld of %d replicas within %d ms: given "
                "back",
                (int)l->keylen, l->key, acked, l->cfg->wait_replicas,
                l->cfg->wait_timeout_ms);
        rc = LW_EREPLICAS;
    }
    /* Give it back (and wake the next waiter); the watchdog never saw the
     * lease. */
    lw__queue_release(l);
    return rc;
}

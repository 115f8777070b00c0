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
#include "core/kind.h"
#include "core/queue.h"
#include "core/send.h"

/*
 * WAIT counts the replicas that have every write of *this connection* so
 * far, on the server it reaches, which need not be the one that granted
 * the lock: between the two a connection may break and be replaced, a
 * Sentinel may name a new master, a request may be replayed elsewhere, or
 * the address itself may move (a virtual IP, a managed endpoint).  A WAIT
 * answered there counts replicas of a server that may never have had the
 * lock.  So the WAIT goes in one pipeline behind the kind's renewal of
 * this lock alone, which writes only where the lock is ours: replicas
 * count only where it is, and wherever the pipeline is replayed it proves
 * that again.  The INCR of the key's fence counter between them is a write
 * of ours even when the renewal changed nothing (a lock handed to us by a
 * release script, written by another connection); the replication stream
 * is ordered, so a replica that has the INCR has the lock too, and fences
 * only have to increase.  *ours: the renewal found the lock ours.
 */
static int wait_ack(const struct lw_hold *l, const struct lw_names *names,
                    struct lw_target *to, int *ours, long long *acked)
{
    const struct lw_settings *cfg = l->cfg;
    char n[16], t[16];
    const char *wait_argv[] = {"WAIT", n, t};
    size_t wait_lens[] = {4, 0, 0};
    const char *incr_argv[] = {"INCR", names->fence};
    size_t incr_lens[] = {4, names->fencelen};
    struct lw_cmd cmds[] = {{2, incr_argv, incr_lens},
                            {3, wait_argv, wait_lens}};
    int readers = (l->kind->flags & LW_KIND_READERS) != 0, k = 0;
    const char *argv[4];
    size_t lens[4];
    redisReply *r[3], *mine;
    int replayed, rc;

#define ARG(p, len) (argv[k] = (p), lens[k++] = (len))
    ARG(l->key, l->keylen);
    if (readers)
        ARG(names->readers, names->readerslen);
    ARG(l->token, (size_t)l->toklen);
    ARG(l->expire_str, (size_t)l->expire_len);
#undef ARG
    wait_lens[1] = (size_t)snprintf(n, sizeof n, "%d", cfg->wait_replicas);
    wait_lens[2] = (size_t)snprintf(t, sizeof t, "%d", cfg->wait_timeout_ms);
    /* In a cluster WAIT counts the replicas of the key's master.  The
     * server answers WAIT after up to its timeout: the reply is read up to
     * that much past the command timeout. */
    rc = lw__send(to,
                  &(struct lw_request){.script = l->kind->renew_alone,
                                       .nkeys = 1 + readers,
                                       .nargs = 2,
                                       .argv = argv,
                                       .lens = lens,
                                       .cmds = cmds,
                                       .ncmds = 2,
                                       .wait_ms = cfg->wait_timeout_ms},
                  0, r, &replayed);
    if (rc == LW_R_ASKED) /* the slot is moving: cannot tell, give up */
        return LW_EREDIS;
    if (rc != LW_OK)
        return rc;
    mine = r[0]->type == REDIS_REPLY_ARRAY && r[0]->elements == 1
               ? r[0]->element[0]
               : r[0];
    *ours = mine->type == REDIS_REPLY_INTEGER && mine->integer == 1;
    *acked = r[2]->type == REDIS_REPLY_INTEGER ? r[2]->integer : -1;
    lw__replies_free(r, 3);
    return LW_OK;
}

int lw__wait_replicas(struct lw_hold *l, const struct lw_names *names,
                      struct lw_target *to)
{
    long long acked = -1;
    int ours = 0, rc = wait_ack(l, names, to, &ours, &acked);

    if (rc == LW_OK && ours && acked >= l->cfg->wait_replicas)
        return LW_OK;
    if (rc == LW_OK && !ours) {
        lw__log(LW_LOG_WARN,
                "lock %.*s is not ours on the server its WAIT reached (the "
                "connection or the master changed since it was taken): "
                "given back",
                (int)l->keylen, l->key);
        rc = LW_EREPLICAS;
    } else if (rc == LW_OK) {
        lw__log(LW_LOG_WARN,
                "lock %.*s reached %lld of %d replicas within %d ms: given "
                "back",
                (int)l->keylen, l->key, acked, l->cfg->wait_replicas,
                l->cfg->wait_timeout_ms);
        rc = LW_EREPLICAS;
    }
    /* Give it back at once (and wake the next waiter), whatever minimum
     * hold it asked for.  No verdict: the body never ran, so a key found
     * gone here is no lost lock for the lost handler or the log.  The
     * watchdog never saw the lease. */
    lw__queue_give_back(l, names);
    return rc;
}

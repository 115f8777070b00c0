/* The protocol's transport seam (see send.h). */
#include "core/send.h"

#include <lockweave.h>

#include "base/config.h"
#include "topology/route.h"
#include "topology/sentinel.h"
#include "topology/slot.h"

int lw__target_for(struct lw_target *t, const struct lw_settings *cfg,
                   const char *key, size_t keylen)
{
    t->cfg = cfg;
    t->conn = NULL;
    t->slot = -1;
    t->sent_us = 0;
    if (cfg->ep.topology == LW_TOPO_CLUSTER) {
        t->slot = lw__key_slot(key, keylen);
        return LW_OK;
    }
    if (cfg->ep.topology == LW_TOPO_SENTINEL)
        return LW_OK; /* the master is found when sending */
    return lw__conn_thread(&t->conn);
}

int lw__send(struct lw_target *t, const struct lw_request *q,
             int64_t deadline_us, redisReply **out, int *replayed)
{
    int rc;

    if (t->cfg->ep.topology == LW_TOPO_SENTINEL)
        return lw__sentinel_run(t->cfg, q, out, replayed, &t->sent_us,
                                deadline_us);
    if (t->conn == NULL)
        return lw__route_run(t->cfg, t->slot, q, out, replayed, &t->sent_us,
                             deadline_us);
    rc = lw__conn_run(t->conn, q, out, replayed);
    t->sent_us = t->conn->sent_us;
    return rc;
}

int lw__send_many(struct lw_target *t, const struct lw_request *const *q, int n,
                  redisReply **out, int *rcs, int *replayed)
{
    int rc;

    if (t->conn == NULL) { /* a router's: not pipelined here */
        for (int i = 0; i < n; i++) {
            out[i] = NULL;
            rcs[i] = LW_EINVAL;
        }
        return LW_EINVAL;
    }
    rc = lw__conn_run_many(t->conn, q, n, out, rcs, replayed);
    t->sent_us = t->conn->sent_us;
    return rc;
}

int lw__send_script(const struct lw_settings *cfg, struct lw_script *script,
                    int nkeys, int nargs, const char *const *argv,
                    const size_t *lens, int flags, int64_t deadline_us,
                    redisReply **r, int *replayed)
{
    struct lw_target to;
    int rep = 0, rc = lw__target_for(&to, cfg, argv[0], lens[0]);

    *r = NULL;
    if (rc == LW_OK)
        rc = lw__send(&to,
                      &(struct lw_request){.script = script,
                                           .nkeys = nkeys,
                                           .nargs = nargs,
                                           .argv = argv,
                                           .lens = lens,
                                           .flags = flags},
                      deadline_us, r, &rep);
    *replayed |= rep;
    if (rc == LW_OK && (*r)->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(*r);
        rc = LW_EREDIS;
    }
    if (rc != LW_OK)
        *r = NULL;
    return rc;
}

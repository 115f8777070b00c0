/* Replies as a request's caller gets them: freed together, and an error
 * reply logged (tokens masked), counted, and read as an LW_E code with a
 * line on what to do when the cause is known. */
#include "net/reply.h"

#include <lockweave.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "net/conn.h"

void lw__replies_free(redisReply **out, int n)
{
    for (int i = 0; i < n; i++) {
        if (out[i] != NULL)
            freeReplyObject(out[i]);
        out[i] = NULL;
    }
}

void lw__conn_log_error(const redisReply *r)
{
    char shown[256];

    lw__log_mask_tokens(r->str, shown, sizeof shown);
    lw__log(LW_LOG_WARN, "Redis error reply: %s", shown);
    LW_STAT_ADD(redis_errors, 1);
}

int lw__conn_error_rc(const redisReply *r)
{
    lw__conn_log_error(r);
    if (strncmp(r->str, "NOAUTH", 6) == 0) {
        lw__log(LW_LOG_ERROR, "Redis wants a password: put it in the URL "
                              "(redis://:password@host:port, "
                              "unix://:password@/path)");
        return LW_EAUTH;
    }
    /* A script's own command refused by the ACL: Redis 7.0 words it as an
     * ERR, later versions as NOPERM. */
    if (strncmp(r->str, "NOPERM", 6) == 0 ||
        strncmp(r->str, "ERR The user executing the script can't", 39) == 0) {
        lw__log(LW_LOG_ERROR,
                "the Redis ACL user may not run what lockweave needs "
                "(scripts, and the keys under its prefix): see "
                "docs/operations.md, \"Credentials and ACLs\"");
        return LW_EAUTH;
    }
    return LW_EREDIS;
}

int lw__replies_error(redisReply **out, int n)
{
    for (int i = 0; i < n; i++)
        if (out[i]->type == REDIS_REPLY_ERROR) {
            int rc = lw__conn_error_rc(out[i]);
            /* Only the router follows redirections and names keys slot by
             * slot: a plain URL that points at a cluster node gets them as
             * errors, or CROSSSLOT for a script whose keys the router would
             * have kept in one slot.  Say what to do. */
            if (strncmp(out[i]->str, "MOVED ", 6) == 0 ||
                strncmp(out[i]->str, "ASK ", 4) == 0 ||
                strncmp(out[i]->str, "CROSSSLOT ", 10) == 0)
                lw__log(LW_LOG_ERROR,
                        "the server is a Redis Cluster node: use "
                        "LOCKWEAVE_REDIS_URL=redis+cluster://host:port");
            return rc;
        }
    return LW_OK;
}

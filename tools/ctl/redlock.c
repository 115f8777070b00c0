/* Under Redlock: one key on every master, and which token, if any, a
 * quorum of them holds. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "ctl.h"
#include "net/conn.h"

int ctl_majority(const char *const *tok, const size_t *len, int n, int *best)
{
    int most = 0;

    *best = -1;
    for (int i = 0; i < n; i++) {
        int same = 0;

        if (tok[i] == NULL)
            continue;
        for (int j = 0; j < n; j++)
            same += tok[j] != NULL && len[j] == len[i] &&
                    memcmp(tok[j], tok[i], len[i]) == 0;
        if (same > most) {
            most = same;
            *best = i;
        }
    }
    return most;
}

int ctl_redlock_read(const struct ctl *c, const struct ctl_key *k,
                     struct lw_conn **conns, struct ctl_master *m, int *holders)
{
    const struct lw_settings *s = c->s;
    const char *get[] = {"GET", k->key}, *pttl[] = {"PTTL", k->key};
    size_t glens[] = {3, k->len}, plens[] = {4, k->len};
    struct lw_cmd cmds[] = {{2, get, glens}, {2, pttl, plens}};
    const char *tok[LW_ENDPOINTS_MAX];
    size_t len[LW_ENDPOINTS_MAX];
    int best, answered = 0;

    for (int i = 0; i < s->ep.n; i++) {
        redisReply *r[2] = {NULL, NULL};

        memset(&m[i], 0, sizeof m[i]);
        m[i].url = &s->ep.urls[i];
        m[i].state = CTL_M_DOWN;
        m[i].ttl = -2;
        tok[i] = NULL;
        len[i] = 0;
        if (ctl_send_to(m[i].url, &conns[i], cmds, 2, r) != LW_OK)
            continue;
        if (r[0]->type == REDIS_REPLY_ERROR) {
            m[i].state = CTL_M_ERROR;
            m[i].error = r[0];
            r[0] = NULL;
        } else if (r[0]->type == REDIS_REPLY_STRING) {
            m[i].state = CTL_M_OTHER;
            m[i].token = r[0];
            r[0] = NULL;
            tok[i] = m[i].token->str;
            len[i] = m[i].token->len;
            ctl_reply_int(r[1], &m[i].ttl);
        } else {
            m[i].state = CTL_M_FREE;
        }
        answered += m[i].state != CTL_M_ERROR;
        lw__replies_free(r, 2);
    }
    *holders = ctl_majority(tok, len, s->ep.n, &best);
    for (int i = 0; best >= 0 && i < s->ep.n; i++)
        if (tok[i] != NULL && len[i] == len[best] &&
            memcmp(tok[i], tok[best], len[i]) == 0)
            m[i].state = CTL_M_HELD;
    return answered;
}

void ctl_redlock_free(struct ctl_master *m, struct lw_conn **conns, int n)
{
    for (int i = 0; i < n; i++) {
        if (m[i].token != NULL)
            freeReplyObject(m[i].token);
        if (m[i].error != NULL)
            freeReplyObject(m[i].error);
        m[i].token = m[i].error = NULL;
        ctl_conn_free(conns[i]);
        conns[i] = NULL;
    }
}

const char *ctl_master_state(int state)
{
    static const char *const names[] = {"held", "other", "free", "down",
                                        "error"};

    return names[state];
}

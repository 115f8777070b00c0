/* Under Redlock: one key on every master, and which token, if any, a
 * quorum of them holds. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

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

/* What master m says of k: GET, PTTL and its clients (whose names say
 * who holds it) in one round trip. */
static void read_master(const struct ctl_key *k, struct ctl_master *m)
{
    const char *get[] = {"GET", k->key}, *pttl[] = {"PTTL", k->key};
    size_t glens[] = {3, k->len}, plens[] = {4, k->len};
    struct lw_admin_cmd cmds[] = {
        {2, get, glens}, {2, pttl, plens}, lw__admin_client_list};
    redisReply *r[3] = {NULL, NULL, NULL};

    m->state = CTL_M_DOWN;
    m->ttl = -2;
    if (lw__admin_send_to(m->url, &m->conn, cmds, 3, r) != LW_OK)
        return;
    m->clients = r[2];
    r[2] = NULL;
    if (r[0]->type == REDIS_REPLY_ERROR) {
        m->state = CTL_M_ERROR;
        m->error = r[0];
        r[0] = NULL;
    } else if (r[0]->type == REDIS_REPLY_STRING) {
        m->state = CTL_M_OTHER;
        m->token = r[0];
        r[0] = NULL;
        ctl_reply_int(r[1], &m->ttl);
    } else {
        m->state = CTL_M_FREE;
    }
    lw__admin_replies_free(r, 2);
}

int ctl_redlock_read(const struct ctl *c, const struct ctl_key *k,
                     struct ctl_redlock *rl)
{
    const struct lw_url **urls;
    const char *tok[LW_ADMIN_MASTERS_MAX] = {NULL};
    size_t len[LW_ADMIN_MASTERS_MAX] = {0};
    int best, rc = lw__admin_masters(&c->cfg, &urls, &rl->n);

    memset(rl->m, 0, sizeof rl->m);
    if (rc != LW_OK) {
        rl->n = 0;
        return rc;
    }
    rl->quorum = rl->n / 2 + 1;
    rl->told = 0;
    for (int i = 0; i < rl->n; i++) {
        rl->m[i].url = urls[i];
        read_master(k, &rl->m[i]);
        rl->told +=
            rl->m[i].state != CTL_M_DOWN && rl->m[i].state != CTL_M_ERROR;
        if (rl->m[i].token != NULL) {
            tok[i] = rl->m[i].token->str;
            len[i] = rl->m[i].token->len;
        }
    }
    free(urls);
    rl->holders = ctl_majority(tok, len, rl->n, &best);
    for (int i = 0; best >= 0 && i < rl->n; i++)
        if (tok[i] != NULL && len[i] == len[best] &&
            memcmp(tok[i], tok[best], len[i]) == 0)
            rl->m[i].state = CTL_M_HELD;
    return LW_OK;
}

void ctl_redlock_free(struct ctl_redlock *rl)
{
    for (int i = 0; i < rl->n; i++) {
        struct ctl_master *m = &rl->m[i];

        if (m->token != NULL)
            freeReplyObject(m->token);
        if (m->error != NULL)
            freeReplyObject(m->error);
        if (m->clients != NULL)
            freeReplyObject(m->clients);
        m->token = m->error = m->clients = NULL;
        lw__admin_conn_free(m->conn);
        m->conn = NULL;
    }
}

const char *ctl_master_state(int state)
{
    static const char *const names[] = {"held", "other", "free", "down",
                                        "error"};

    return names[state];
}

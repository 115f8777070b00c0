/* Who holds a lock of a kind several hold at once: inspect asks it of one
 * key, list of each such key it finds; and what a run-once mark's run
 * returned. */
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

void ctl_count_init(struct ctl_count *q, const struct lw_admin_kind *kind,
                    const char *key, size_t keylen,
                    const struct lw_admin_names *names)
{
    int readers = (kind->flags & LW_ADMIN_KIND_READERS) != 0;

    /* Holders are scored by their leases' ends; the tag, +inf. */
    q->count[0] = "ZCOUNT", q->clens[0] = 6;
    q->count[1] = readers ? names->readers : key;
    q->clens[1] = readers ? names->readerslen : keylen;
    q->count[2] = "-inf", q->clens[2] = 4;
    q->count[3] = "(+inf", q->clens[3] = 5;
    q->tag[0] = "ZRANGEBYSCORE", q->tlens[0] = 13;
    q->tag[1] = key, q->tlens[1] = keylen;
    q->tag[2] = "+inf", q->tlens[2] = 4;
    q->tag[3] = "+inf", q->tlens[3] = 4;
    q->cmds[0] = (struct lw_admin_cmd){4, q->count, q->clens};
    q->cmds[1] = (struct lw_admin_cmd){4, q->tag, q->tlens};
    q->ncmds = (kind->flags & LW_ADMIN_KIND_PERMITS) ? 2 : 1;
}

int ctl_count_read(const struct ctl_count *q, redisReply *const *r,
                   long long *holders, long long *permits)
{
    const redisReply *t = q->ncmds > 1 ? r[1] : NULL;

    *permits = -1;
    if (!ctl_reply_int(r[0], holders))
        return LW_EREDIS;
    if (t != NULL && t->type == REDIS_REPLY_ARRAY && t->elements == 1 &&
        t->element[0]->type == REDIS_REPLY_STRING &&
        strncmp(t->element[0]->str, "n:", 2) == 0)
        *permits = strtoll(t->element[0]->str + 2, NULL, 10);
    return LW_OK;
}

void ctl_once_result(FILE *f, const char *r, size_t n)
{
    if (n == 1 && r[0] == 'v')
        fputs("none (a void function)", f);
    else if (n > 2 && r[1] == ':' && strchr("iud", r[0]) != NULL)
        out_text(f, r + 2, n - 2);
    else
        out_quoted(f, r, n); /* not one of ours: as it is */
}

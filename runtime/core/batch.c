/* A pump's ops folded into one call of their kind's batch script. */
#include "core/batch.h"

#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "net/reply.h"

int lw__batch_fits(const struct lw_request *q)
{
    return q->script != NULL && q->ncmds == 0 && q->flags == 0 &&
           q->wait_ms == 0 && q->nkeys <= 9 && q->nargs <= 9;
}

int lw__batch_fold(struct lw_batch *b, struct lw_script *script,
                   const struct lw_request *const *ops, const char *letters,
                   int n)
{
    int nkeys = 0, nargs = 1, k = 0, a;

    memset(b, 0, sizeof *b);
    for (int i = 0; i < n; i++) {
        nkeys += ops[i]->nkeys;
        nargs += ops[i]->nargs;
    }
    b->argv = malloc((size_t)(nkeys + nargs) * sizeof *b->argv);
    b->lens = malloc((size_t)(nkeys + nargs) * sizeof *b->lens);
    b->names = malloc(3 * (size_t)n + 1);
    b->rcs = malloc((size_t)n * sizeof *b->rcs);
    b->out = calloc((size_t)n, sizeof *b->out);
    if (b->argv == NULL || b->lens == NULL || b->names == NULL ||
        b->rcs == NULL || b->out == NULL) {
        lw__batch_free(b);
        return LW_ENOMEM;
    }
    a = nkeys + 1; /* each op's ARGV, behind its KEYS and the names */
    for (int i = 0; i < n; i++) {
        const struct lw_request *q = ops[i];
        for (int j = 0; j < q->nkeys; j++, k++) {
            b->argv[k] = q->argv[j];
            b->lens[k] = q->lens[j];
        }
        for (int j = q->nkeys; j < q->nkeys + q->nargs; j++, a++) {
            b->argv[a] = q->argv[j];
            b->lens[a] = q->lens[j];
        }
        b->names[3 * i] = letters[i];
        b->names[3 * i + 1] = (char)('0' + q->nkeys);
        b->names[3 * i + 2] = (char)('0' + q->nargs);
    }
    b->names[3 * n] = '\0';
    b->argv[nkeys] = b->names;
    b->lens[nkeys] = 3 * (size_t)n;
    b->n = n;
    b->q = (struct lw_request){.script = script,
                               .nkeys = nkeys,
                               .nargs = nargs,
                               .argv = b->argv,
                               .lens = b->lens};
    return LW_OK;
}

void lw__batch_split(struct lw_batch *b, int rc, redisReply *r)
{
    if (rc == LW_OK &&
        (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)b->n)) {
        /* Not the batch script's answer: nothing of it can be read as any
         * op's, and each op's own reading fails it closed. */
        lw__log(LW_LOG_WARN,
                "Redis answered a batch of %d lock operations with a reply "
                "of type %d and %zu elements",
                b->n, r->type, r->type == REDIS_REPLY_ARRAY ? r->elements : 0);
        rc = LW_EREDIS;
    }
    for (int i = 0; i < b->n; i++) {
        b->rcs[i] = rc;
        b->out[i] = NULL;
        if (rc != LW_OK)
            continue;
        b->out[i] = r->element[i];
        r->element[i] = NULL; /* the op's now */
        if ((b->rcs[i] = lw__replies_error(&b->out[i], 1)) != LW_OK) {
            freeReplyObject(b->out[i]);
            b->out[i] = NULL;
        }
    }
    if (r != NULL)
        freeReplyObject(r);
}

void lw__batch_free(struct lw_batch *b)
{
    free(b->argv);
    free(b->lens);
    free(b->names);
    free(b->rcs);
    free(b->out);
    memset(b, 0, sizeof *b);
}

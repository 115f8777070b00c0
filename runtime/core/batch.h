#ifndef LW_BATCH_H
#define LW_BATCH_H

#include <hiredis/hiredis.h>

#include "net/conn.h"

/*
 * Requests for one kind's scripts folded into one call of its batch
 * script (kind.h, batch), for core/take.c's pipeline: Redis runs one
 * script of n ops for less than n scripts.  What each op sends, and how
 * its answer is read, stay its own: the fold only carries them.
 */
struct lw_batch {
    struct lw_request q; /* the one call */
    int n;               /* ops folded */
    const char **argv;   /* q's: every op's KEYS, the ops' names (ARGV[1]),
                            then every op's ARGV */
    size_t *lens;
    char *names;
    int *rcs; /* lw__batch_split()'s answers, one per op */
    redisReply **out;
};

/* May q be folded: one script call, no flags, at most 9 KEYS and 9 ARGV
 * (a digit each in the ops' names)?  1 or 0. */
int lw__batch_fits(const struct lw_request *q);

/* Fold ops[0..n) into b->q, a call of script (their kind's batch): op i
 * is a try when letters[i] is 't', a release when 'r'.  b keeps pointers
 * into the ops' arguments.  LW_OK, or LW_ENOMEM (b empty: send each op
 * alone). */
int lw__batch_fold(struct lw_batch *b, struct lw_script *script,
                   const struct lw_request *const *ops, const char *letters,
                   int n);

/* b->q's answer, rc and r (freed here), as each op's own: b->rcs[i] and
 * b->out[i] (the caller's to free; NULL unless b->rcs[i] is LW_OK), the
 * error reply of an op that failed alone read as a request's error reply
 * is. */
void lw__batch_split(struct lw_batch *b, int rc, redisReply *r);

/* Free what b holds (not the ops, nor b->out's replies). */
void lw__batch_free(struct lw_batch *b);

#endif

/* A request in RESP, as net/resp.c encodes commands: a script's call
 * (EVALSHA or EVAL, script, numkeys, keys, arguments), then a pipeline's
 * commands. */
#include "net/request.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/numfmt.h"
#include "net/conn.h"
#include "net/resp.h"
#include "net/script.h"

#define SCRIPT_ARGV_MAX 16

/* q's EVALSHA (or EVAL, eval) appended to b: command, script, numkeys,
 * then the keys and arguments.  0, or -1 out of memory. */
static int put_script(struct lw_resp *b, const struct lw_request *q, int eval)
{
    const char *small_argv[SCRIPT_ARGV_MAX], **argv = small_argv;
    size_t small_lens[SCRIPT_ARGV_MAX], *lens = small_lens;
    int n = q->nkeys + q->nargs, rc = -1;
    char nkeys[LW_FMT_U64_MAX];

    if (n + 3 > SCRIPT_ARGV_MAX) { /* the watchdog's batched renewals */
        argv = malloc((size_t)(n + 3) * sizeof *argv);
        lens = malloc((size_t)(n + 3) * sizeof *lens);
        if (argv == NULL || lens == NULL)
            goto cleanup;
    }
    argv[0] = eval ? "EVAL" : "EVALSHA";
    argv[1] = eval ? q->script->text : lw__script_sha(q->script);
    argv[2] = nkeys;
    lens[0] = eval ? 4 : 7;
    lens[1] = eval ? q->script->len : 40;
    lens[2] = lw__fmt_dec(nkeys, (uint64_t)q->nkeys);
    for (int i = 0; i < n; i++) {
        argv[3 + i] = q->argv[i];
        lens[3 + i] = q->lens[i];
    }
    rc = lw__resp_cmd(b, n + 3, argv, lens);
cleanup:
    if (argv != small_argv)
        free(argv);
    if (lens != small_lens)
        free(lens);
    return rc;
}

/* With LW_REQ_ASKING every command goes out after an ASKING: the flag it
 * sets on the server lasts for one command only. */
static int put_asking(struct lw_resp *b, const struct lw_request *q)
{
    static const char *const argv[] = {"ASKING"};
    static const size_t lens[] = {6};

    return q->flags & LW_REQ_ASKING ? lw__resp_cmd(b, 1, argv, lens) : 0;
}

int lw__request_format(struct lw_resp *b, const struct lw_request *q, int eval)
{
    b->len = 0;
    return lw__request_append(b, q, eval);
}

int lw__request_append(struct lw_resp *b, const struct lw_request *q, int eval)
{
    if (q->script != NULL &&
        (put_asking(b, q) != 0 || put_script(b, q, eval) != 0))
        return -1;
    for (int i = 0; i < q->ncmds; i++)
        if (put_asking(b, q) != 0 ||
            lw__resp_cmd(b, q->cmds[i].argc, q->cmds[i].argv,
                         q->cmds[i].lens) != 0)
            return -1;
    return 0;
}

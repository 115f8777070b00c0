/*
 * net/exchange.c's pipelined exchange, lw__conn_run_many() (what an event
 * loop's pump sends its batches with), on this thread's connection to a
 * real server, and its rules, the same as a request's alone:
 *   order     64 requests, scripts and plain commands, in one write: each
 *             answered with its own reply
 *   errors    an error reply fails its own request only
 *   replay    the connection killed between two uses: every request sent
 *             again on a new one, once (*replayed set), all answered
 *   noscript  the script cache flushed: each script sent again as EVAL,
 *             answered, and cached again
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/conn.h"
#include "net/script.h"
#include "util.h"

static rh_server srv;

static struct lw_script echo = LW_SCRIPT_INIT("return ARGV[1]\n");

#define N 64

/* Request i of a batch: the echo script (even i) or a plain ECHO, each
 * answering "v<i>"; requests on the key "pl:str" where bad[i] (an LPUSH
 * on a string: WRONGTYPE). */
static struct {
    char val[16];
    const char *argv[3];
    size_t lens[3];
    struct lw_cmd cmd;
    struct lw_request q;
} rq[N];

static void build(const int *bad)
{
    for (int i = 0; i < N; i++) {
        snprintf(rq[i].val, sizeof rq[i].val, "v%d", i);
        memset(&rq[i].q, 0, sizeof rq[i].q);
        if (bad != NULL && bad[i]) {
            rq[i].argv[0] = "LPUSH";
            rq[i].argv[1] = "pl:str";
            rq[i].argv[2] = rq[i].val;
            for (int k = 0; k < 3; k++)
                rq[i].lens[k] = strlen(rq[i].argv[k]);
            rq[i].cmd = (struct lw_cmd){3, rq[i].argv, rq[i].lens};
            rq[i].q.cmds = &rq[i].cmd;
            rq[i].q.ncmds = 1;
        } else if (i % 2 == 0) {
            rq[i].argv[0] = rq[i].val;
            rq[i].lens[0] = strlen(rq[i].val);
            rq[i].q.script = &echo;
            rq[i].q.nargs = 1;
            rq[i].q.argv = rq[i].argv;
            rq[i].q.lens = rq[i].lens;
        } else {
            rq[i].argv[0] = "ECHO";
            rq[i].argv[1] = rq[i].val;
            rq[i].lens[0] = 4;
            rq[i].lens[1] = strlen(rq[i].val);
            rq[i].cmd = (struct lw_cmd){2, rq[i].argv, rq[i].lens};
            rq[i].q.cmds = &rq[i].cmd;
            rq[i].q.ncmds = 1;
        }
    }
}

/* Send the batch (bad: which requests fail, or NULL) and check each
 * answer; returns *replayed. */
static int run_batch(struct lw_conn *c, const int *bad)
{
    const struct lw_request *q[N];
    redisReply *out[N];
    int rcs[N], replayed = -1;

    build(bad);
    for (int i = 0; i < N; i++)
        q[i] = &rq[i].q;
    CHECK_RC(lw__conn_run_many(c, q, N, out, rcs, &replayed), LW_OK);
    for (int i = 0; i < N; i++) {
        if (bad != NULL && bad[i]) {
            CHECK_RC(rcs[i], LW_EREDIS);
            CHECK(out[i] == NULL);
            continue;
        }
        CHECK_RC(rcs[i], LW_OK);
        CHECK(out[i] != NULL && out[i]->type == REDIS_REPLY_STRING);
        CHECK_MSG(strcmp(out[i]->str, rq[i].val) == 0, "request %d answered %s",
                  i, out[i]->str);
        freeReplyObject(out[i]);
    }
    CHECK(c->sent_us > 0);
    return replayed;
}

int main(void)
{
    struct lw_conn *c;
    redisReply *r;
    int bad[N] = {0};

    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    CHECK_RC(lw__conn_thread(&c), LW_OK);

    CHECK_EQ(run_batch(c, NULL), 0);
    printf("order: %d requests in one write, each its own reply\n", N);

    CHECK_RC(rh_ok(rh_cmd(&srv, "SET pl:str x"), "SET"), 0);
    bad[3] = bad[10] = bad[N - 1] = 1;
    CHECK_EQ(run_batch(c, bad), 0);
    printf("errors: three error replies, the other %d answered\n", N - 3);

    /* Our connection is open and used: killed, the next batch finds it
     * broken and goes again, whole, on a new one. */
    CHECK(rh_cmd_int(&srv, "CLIENT KILL TYPE normal SKIPME yes") >= 1);
    CHECK_EQ(run_batch(c, NULL), 1);
    CHECK_EQ(run_batch(c, NULL), 0); /* the new connection, as usual */
    printf("replay: the connection killed, the batch sent again\n");

    CHECK_RC(rh_ok(rh_cmd(&srv, "SCRIPT FLUSH"), "SCRIPT FLUSH"), 0);
    CHECK_EQ(run_batch(c, NULL), 0);
    r = rh_cmd(&srv, "EVALSHA %s 0 cached", lw__script_sha(&echo));
    CHECK_MSG(r != NULL && r->type == REDIS_REPLY_STRING &&
                  strcmp(r->str, "cached") == 0,
              "the script is not cached again");
    freeReplyObject(r);
    printf("noscript: every script sent again as EVAL, and cached\n");

    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("pipeline: ok\n");
    return 0;
}

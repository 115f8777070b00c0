/*
 * Parallel round trips to the Redlock masters.
 *
 * hiredis contexts stay blocking (they are ordinary lw_conn connections, with
 * conn.c's connect, AUTH/SELECT, script loading and backoff); only the round
 * is driven by hand: append + flush on every socket first, then poll() them
 * all and read whichever answers.  Connecting is still one master after the
 * other: a refused connection fails at once, and a master that timed out
 * backs off (lw__conn_fail), so only the first round after it went away pays
 * for it.
 */
#include "topology/masters.h"

#include <errno.h>
#include <lockweave.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/thread.h"
#include "net/conn.h"
#include "base/log.h"
#include "core/scripts.h"
#include "base/stats.h"

#define ARGV_MAX 12 /* words of one command, script head excluded */
#define PASSES   3  /* first send, one EVAL after NOSCRIPT, one replay */

static pthread_once_t masters_once = PTHREAD_ONCE_INIT;

/* Every thread's masters.  Only so that in a forked child those of the
 * parent's other threads stay reachable: the child cannot free them (their
 * threads may have been using them when it forked) and never uses them. */
static struct lw_masters *all;
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;

static void all_lock(void)
{
    pthread_mutex_lock(&all_mu);
}

static void all_unlock(void)
{
    pthread_mutex_unlock(&all_mu);
}

static void all_link(struct lw_masters *m)
{
    all_lock();
    m->prev = NULL;
    m->next = all;
    if (all != NULL)
        all->prev = m;
    all = m;
    all_unlock();
}

static void masters_free(struct lw_masters *m)
{
    if (m == NULL)
        return;
    all_lock();
    if (m->prev != NULL || all == m) { /* linked (masters_new may fail) */
        if (m->prev != NULL)
            m->prev->next = m->next;
        else
            all = m->next;
        if (m->next != NULL)
            m->next->prev = m->prev;
    }
    all_unlock();
    for (int i = 0; i < m->n; i++)
        lw__conn_free(m->conn[i]);
    lw__resp_free(&m->out);
    free(m);
}

static void masters_free_any(void *p)
{
    masters_free(p);
}

static void register_fork_hooks(void)
{
    static const struct lw_fork_hooks hooks = {all_lock, all_unlock,
                                               all_unlock};
    lw__fork_register(&hooks);
}

static struct lw_masters *masters_new(const struct lw_settings *cfg)
{
    struct lw_masters *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    m->cfg = cfg;
    m->gen = cfg->gen;
    m->n = cfg->ep.n;
    m->quorum = m->n / 2 + 1;
    for (int i = 0; i < m->n; i++)
        if ((m->conn[i] = lw__conn_new_to(&cfg->ep.urls[i])) == NULL) {
            masters_free(m);
            return NULL;
        }
    return m;
}

int lw__masters_get(const struct lw_settings *cfg, struct lw_masters **out)
{
    struct lw_masters *m = lw__thread()->res[LW_RES_MASTERS];

    /* Only the pointer of an old snapshot is compared: it may be freed. */
    if (m == NULL || m->cfg != cfg || m->gen != cfg->gen) {
        /* First use, or a lease of another configuration (lw_configure()
         * while it was held): it is renewed and released on its own
         * masters.  Fork needs nothing here: lw__conn_ensure() drops a
         * parent's connection unused. */
        pthread_once(&masters_once, register_fork_hooks);
        masters_free(m);
        lw__thread_keep(LW_RES_MASTERS, NULL, NULL);
        if ((m = masters_new(cfg)) == NULL)
            return LW_ENOMEM;
        all_link(m);
        lw__thread_keep(LW_RES_MASTERS, m, masters_free_any);
    }
    *out = m;
    return LW_OK;
}

void lw__masters_drop(void)
{
    struct lw_masters *m = lw__thread()->res[LW_RES_MASTERS];

    lw__thread_keep(LW_RES_MASTERS, NULL, NULL);
    masters_free(m);
}

void lw__votes_free(struct lw_vote *votes, int n)
{
    for (int i = 0; i < n; i++) {
        if (votes[i].r != NULL)
            freeReplyObject(votes[i].r);
        votes[i].r = NULL;
    }
}

/* One round in progress. */
struct round {
    struct lw_masters *m;
    const struct lw_rcmd *cmd;
    struct lw_vote *v;
    int64_t deadline_us;
    unsigned char todo[LW_ENDPOINTS_MAX];    /* to send in the next pass */
    unsigned char eval[LW_ENDPOINTS_MAX];    /* send the script text */
    unsigned char pending[LW_ENDPOINTS_MAX]; /* sent, reply not read yet */
    unsigned char fresh[LW_ENDPOINTS_MAX];   /* connection opened this pass */
};

/* Format the command for c (EVALSHA, or EVAL when told) and write it out. */
static int send_one(struct round *rd, struct lw_conn *c, int eval)
{
    const struct lw_rcmd *cmd = rd->cmd;
    const char *argv[ARGV_MAX + 3];
    size_t lens[ARGV_MAX + 3];
    char nkeys[16];
    int argc = 0;

    if (cmd->argc > ARGV_MAX)
        return -1;
    if (cmd->script >= 0) {
        const char *sha = eval ? NULL : lw__script_sha(cmd->script);
        argv[0] = sha ? "EVALSHA" : "EVAL";
        argv[1] = sha ? sha : lw__script_text(cmd->script);
        argv[2] = nkeys;
        lens[0] = strlen(argv[0]);
        lens[1] = strlen(argv[1]);
        lens[2] = (size_t)snprintf(nkeys, sizeof nkeys, "%d", cmd->nkeys);
        argc = 3;
    }
    memcpy(argv + argc, cmd->argv, (size_t)cmd->argc * sizeof *argv);
    memcpy(lens + argc, cmd->lens, (size_t)cmd->argc * sizeof *lens);
    argc += cmd->argc;
    rd->m->out.len = 0;
    if (lw__resp_cmd(&rd->m->out, argc, argv, lens) != 0)
        return -1;
    return lw__conn_send(c, rd->m->out.p, rd->m->out.len);
}

/* Master i's connection broke.  One that was open before this round may
 * just have been killed or timed out idle, which says nothing about the
 * server: replay once on a new one, as lw__conn_script() does. */
static void broken(struct round *rd, int i, const char *what)
{
    struct lw_conn *c = rd->m->conn[i];
    char msg[200];

    snprintf(msg, sizeof msg, "%s: %s", what,
             c->ctx != NULL && c->ctx->errstr[0] ? c->ctx->errstr
                                                 : "connection lost");
    rd->pending[i] = 0;
    lw__conn_fail(c, LW_EREDIS, msg);
    if (!rd->fresh[i] && !rd->v[i].replayed) {
        c->failing = 0; /* reconnect now, not after the backoff */
        rd->v[i].replayed = 1;
        rd->todo[i] = 1;
    }
}

static void send_all(struct round *rd)
{
    for (int i = 0; i < rd->m->n; i++) {
        struct lw_conn *c = rd->m->conn[i];
        if (!rd->todo[i])
            continue;
        rd->todo[i] = 0;
        /* Unreachable or backing off: conn.c has logged why. */
        if (lw__conn_ensure(c) != LW_OK)
            continue;
        rd->fresh[i] = (unsigned char)c->fresh;
        c->fresh = 0;
        rd->v[i].sent = 1;
        if (send_one(rd, c, rd->eval[i]) != 0)
            broken(rd, i, "write failed");
        else
            rd->pending[i] = 1;
    }
}

static void take_reply(struct round *rd, int i, redisReply *r)
{
    rd->pending[i] = 0;
    if (r->type == REDIS_REPLY_ERROR && rd->cmd->script >= 0 && !rd->eval[i] &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* That master lost its script cache (restart, SCRIPT FLUSH): EVAL
         * sends the text and caches it again. */
        rd->eval[i] = 1;
        rd->todo[i] = 1;
        freeReplyObject(r);
    } else if (r->type == REDIS_REPLY_ERROR) {
        lw__log(LW_LOG_WARN, "Redis error reply: %s", r->str);
        LW_STAT_ADD(redis_errors, 1);
        freeReplyObject(r);
    } else {
        rd->v[i].r = r;
    }
}

static void read_ready(struct round *rd, int i)
{
    redisContext *ctx = rd->m->conn[i]->ctx;
    void *r = NULL;

    /* poll() said readable: this read() does not block. */
    if (redisBufferRead(ctx) != REDIS_OK ||
        redisGetReplyFromReader(ctx, &r) != REDIS_OK)
        broken(rd, i, "read failed");
    else if (r != NULL)
        take_reply(rd, i, r);
}

/* Read replies until every pending master answered or the deadline came;
 * the silent ones are closed: a late reply would answer the next command. */
static void collect(struct round *rd)
{
    struct pollfd pfd[LW_ENDPOINTS_MAX];
    int idx[LW_ENDPOINTS_MAX];

    for (;;) {
        int64_t left_us = rd->deadline_us - lw__now_us();
        int k = 0, ready;

        for (int i = 0; i < rd->m->n; i++)
            if (rd->pending[i]) {
                pfd[k] = (struct pollfd){.fd = rd->m->conn[i]->ctx->fd,
                                         .events = POLLIN};
                idx[k++] = i;
            }
        if (k == 0)
            return;
        ready = left_us > 0
                    ? poll(pfd, (nfds_t)k, (int)((left_us + 999) / 1000))
                    : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            for (int j = 0; j < k; j++) {
                rd->pending[idx[j]] = 0;
                lw__conn_fail(rd->m->conn[idx[j]], LW_EREDIS,
                              "no reply in time");
            }
            return;
        }
        for (int j = 0; j < k; j++)
            if (pfd[j].revents != 0)
                read_ready(rd, idx[j]);
    }
}

void lw__masters_run(struct lw_masters *m, const struct lw_rcmd *cmd,
                     unsigned mask, int64_t deadline_us, struct lw_vote *votes)
{
    struct round rd = {
        .m = m, .cmd = cmd, .v = votes, .deadline_us = deadline_us};

    memset(votes, 0, (size_t)m->n * sizeof *votes);
    for (int i = 0; i < m->n; i++)
        rd.todo[i] = (mask >> i) & 1u;
    for (int pass = 0; pass < PASSES; pass++) {
        int again = 0;
        send_all(&rd);
        collect(&rd);
        for (int i = 0; i < m->n; i++)
            again |= rd.todo[i];
        if (!again || lw__now_us() >= deadline_us)
            break;
    }
}

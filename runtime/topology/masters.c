/*
 * Parallel round trips to the Redlock masters.
 *
 * hiredis contexts stay blocking (they are ordinary lw_conn connections, with
 * net/'s connect, AUTH/SELECT, backoff, replay and NOSCRIPT rules); only the
 * round is driven by hand: append + flush on every socket first, then poll()
 * them all and read whichever answers.  Connecting is still one master after
 * the other: a refused connection fails at once, and a master that timed out
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
#include "base/stats.h"

#define PASSES 3 /* first send, one EVAL after NOSCRIPT, one replay */

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
    const struct lw_request *q;
    struct lw_vote *v;
    int64_t deadline_us;
    struct lw_exchange x[LW_ENDPOINTS_MAX];
    unsigned char todo[LW_ENDPOINTS_MAX];    /* to send in the next pass */
    unsigned char pending[LW_ENDPOINTS_MAX]; /* sent, reply not read yet */
};

static void send_all(struct round *rd)
{
    for (int i = 0; i < rd->m->n; i++) {
        if (!rd->todo[i])
            continue;
        rd->todo[i] = 0;
        /* Unreachable or backing off: net/conn.c has logged why; a write that
         * failed may be replayed on a new connection in the next pass. */
        if (lw__conn_start(rd->m->conn[i], rd->q, &rd->x[i]) == LW_OK)
            rd->pending[i] = 1;
        else
            rd->todo[i] = (unsigned char)rd->x[i].again;
    }
}

static void take_reply(struct round *rd, int i, redisReply *r)
{
    rd->pending[i] = 0;
    if (lw__conn_noscript(rd->q, &rd->x[i], r)) {
        rd->todo[i] = 1;
    } else if (r->type == REDIS_REPLY_ERROR) {
        lw__conn_log_error(r);
        freeReplyObject(r);
    } else {
        rd->v[i].r = r;
    }
}

static void read_ready(struct round *rd, int i)
{
    redisContext *ctx = rd->m->conn[i]->ctx;
    void *r = NULL;

    if (lw__conn_read_ready(rd->m->conn[i], &r) != REDIS_OK) {
        rd->pending[i] = 0;
        rd->todo[i] = (unsigned char)lw__conn_broke(
            rd->m->conn[i], &rd->x[i],
            ctx->errstr[0] ? ctx->errstr : "connection lost");
    } else if (r != NULL) {
        take_reply(rd, i, r);
    }
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

void lw__masters_run(struct lw_masters *m, const struct lw_request *q,
                     unsigned mask, int64_t deadline_us, struct lw_vote *votes)
{
    struct round rd = {.m = m, .q = q, .v = votes, .deadline_us = deadline_us};

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
    for (int i = 0; i < m->n; i++) {
        votes[i].sent = rd.x[i].sent;
        votes[i].replayed = rd.x[i].replayed;
        votes[i].fresh = rd.x[i].fresh;
    }
}

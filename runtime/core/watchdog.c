/*
 * The watchdog: one thread per process keeps every held lease alive.
 *
 * The thread sleeps until exactly the next renewal instead of scanning all
 * locks on a fixed tick.  A renewal is due a third of its lease after the
 * last one, so leases of one length come due in the order they were queued:
 * each length gets a FIFO (O(1) to queue, pop and cancel).  Events out of
 * that order — a lease's end once max_renew ran out, a retry after a failed
 * round trip — go to a binary min-heap ordered by due time.  Due renewals go
 * out together, as one script call on the watchdog's own connection (one round
 * trip and one Lua call for the batch). A lease out of renewals (max_renew)
 * gets one last event at the end of its validity, where it is marked lost.
 */
#include "core/watchdog.h"

#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/fork.h"
#include "net/conn.h"
#include "base/log.h"
#include "core/redlock.h"
#include "core/send.h"
#include "core/scripts.h"
#include "topology/slot.h"
#include "base/stats.h"
#include "base/thread.h"

#define BATCH_MAX      256
#define BATCH_SLACK_MS 5 /* renew a little early to batch neighbours */
#define IDLE_WAKE_MS   1000
#define FIFOS_MAX      16  /* lease lengths with a FIFO of their own */
#define CLUSTER_TRY_MS 250 /* one renewal's redirects and retries, at most */

/* A heap entry carries its due time: sifting compares inside this one array
 * and never follows a pointer into a lease on some thread's stack (with
 * 10 000 leases those loads were a quarter of the watchdog's time). */
struct slot {
    int64_t due_ms;
    struct lw_lease *lease;
};

struct fifo {
    uint32_t expire_ms;
    struct lw_lease *head, *tail;
};

static struct {
    pthread_mutex_t mu;
    struct fifo fifos[FIFOS_MAX];
    int nfifos;
    pthread_cond_t cond;    /* work for the thread */
    pthread_cond_t settled; /* an in-flight batch finished */
    struct slot *heap;
    int n, cap;
    int started, stopping;
    int64_t sleep_until_ms; /* 0 while awake: adders need not signal */
    pthread_t thread;
    struct lw_conn *conn;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

void lw__lease_mark_lost(struct lw_lease *l)
{
    __atomic_store_n(&l->lost, 1, __ATOMIC_RELEASE);
}

static void heap_swap(int a, int b)
{
    struct slot t = wd.heap[a];
    wd.heap[a] = wd.heap[b];
    wd.heap[b] = t;
    wd.heap[a].lease->heap_idx = a;
    wd.heap[b].lease->heap_idx = b;
}

static void heap_up(int i)
{
    while (i > 0 && wd.heap[(i - 1) / 2].due_ms > wd.heap[i].due_ms) {
        heap_swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < wd.n && wd.heap[l].due_ms < wd.heap[m].due_ms)
            m = l;
        if (r < wd.n && wd.heap[r].due_ms < wd.heap[m].due_ms)
            m = r;
        if (m == i)
            return;
        heap_swap(i, m);
        i = m;
    }
}

static int heap_push(struct lw_lease *l)
{
    if (wd.n == wd.cap) {
        int cap = wd.cap ? wd.cap * 2 : 64;
        struct slot *h = realloc(wd.heap, (size_t)cap * sizeof *h);
        if (h == NULL)
            return LW_ENOMEM;
        wd.heap = h;
        wd.cap = cap;
    }
    wd.heap[wd.n].due_ms = l->due_ms;
    wd.heap[wd.n].lease = l;
    l->heap_idx = wd.n++;
    heap_up(l->heap_idx);
    return LW_OK;
}

static void heap_remove(struct lw_lease *l)
{
    int i = l->heap_idx;

    l->heap_idx = -1;
    if (--wd.n == i)
        return;
    wd.heap[i] = wd.heap[wd.n];
    wd.heap[i].lease->heap_idx = i;
    heap_up(i);
    heap_down(wd.heap[i].lease->heap_idx);
}

static void lease_lost(struct lw_lease *l, const char *why)
{
    lw__lease_mark_lost(l);
    lw__log(LW_LOG_WARN, "lock %.*s lost: %s", (int)l->keylen, l->key, why);
}

/* The FIFO for leases of l's length, created on first use; NULL when all
 * FIFOS_MAX are taken by other lengths. */
static struct fifo *fifo_for(const struct lw_lease *l)
{
    for (int i = 0; i < wd.nfifos; i++)
        if (wd.fifos[i].expire_ms == l->expire_ms)
            return &wd.fifos[i];
    if (wd.nfifos == FIFOS_MAX)
        return NULL;
    wd.fifos[wd.nfifos].expire_ms = l->expire_ms;
    wd.fifos[wd.nfifos].head = wd.fifos[wd.nfifos].tail = NULL;
    return &wd.fifos[wd.nfifos++];
}

static int queue_lease(struct lw_lease *l)
{
    struct fifo *f = l->renews_left != 0 ? fifo_for(l) : NULL;

    l->fifo = -1;
    if (f == NULL || (f->tail != NULL && f->tail->due_ms > l->due_ms))
        return heap_push(l); /* out of order for its FIFO */
    l->fifo = (int)(f - wd.fifos);
    l->prev = f->tail;
    l->next = NULL;
    if (f->tail)
        f->tail->next = l;
    else
        f->head = l;
    f->tail = l;
    return LW_OK;
}

static void unqueue_lease(struct lw_lease *l)
{
    struct fifo *f;

    if (l->heap_idx >= 0) {
        heap_remove(l);
        return;
    }
    if (l->fifo < 0)
        return;
    f = &wd.fifos[l->fifo];
    if (l->prev)
        l->prev->next = l->next;
    else
        f->head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        f->tail = l->prev;
    l->fifo = -1;
}

static struct lw_lease *earliest(void)
{
    struct lw_lease *best = wd.n ? wd.heap[0].lease : NULL;

    for (int i = 0; i < wd.nfifos; i++) {
        struct lw_lease *h = wd.fifos[i].head;
        if (h != NULL && (best == NULL || h->due_ms < best->due_ms))
            best = h;
    }
    return best;
}

/* Drop every queued lease (stop, fork child), marking each lost if asked. */
static void forget_all(const char *lost_why)
{
    for (int i = 0; i < wd.n; i++) {
        if (lost_why)
            lease_lost(wd.heap[i].lease, lost_why);
        wd.heap[i].lease->heap_idx = -1;
    }
    wd.n = 0;
    for (int i = 0; i < wd.nfifos; i++) {
        for (struct lw_lease *l = wd.fifos[i].head; l != NULL; l = l->next) {
            if (lost_why)
                lease_lost(l, lost_why);
            l->fifo = -1;
        }
        wd.fifos[i].head = wd.fifos[i].tail = NULL;
    }
}

/* Next event: a renewal at a third of the lease, or, with no renewals left,
 * the moment the lease ends. */
static void schedule(struct lw_lease *l, int64_t now)
{
    if (l->renews_left == 0)
        l->due_ms = l->valid_until_ms;
    else
        l->due_ms = now + (l->expire_ms / 3 ? l->expire_ms / 3 : 1);
}

/* Settle one lease from its result (1 renewed, 0 not ours, -1 no answer);
 * returns 1 when it stays queued. */
static int settle(struct lw_lease *l, int result, int64_t sent_ms, int64_t now)
{
    if (l->renews_left == 0 && l->due_ms <= now) {
        lease_lost(l, "max_renew renewals used up and the lease ran out");
        return 0;
    }
    if (result < 0) { /* Redis unreachable: retry until the lease runs out */
        if (now >= l->valid_until_ms) {
            lease_lost(l, "Redis unreachable until the lease ran out");
            return 0;
        }
        l->due_ms = now + (l->expire_ms / 10 ? l->expire_ms / 10 : 1);
        if (l->due_ms > l->valid_until_ms)
            l->due_ms = l->valid_until_ms;
        return 1;
    }
    if (result == 0) {
        lease_lost(l, "the key expired or belongs to another owner");
        return 0;
    }
    LW_STAT_ADD(renewed, 1);
    if (l->renews_left > 0)
        l->renews_left--;
    /* Atomic: lw_still_held() reads it from the lock's own thread. */
    __atomic_store_n(&l->valid_until_ms, sent_ms + l->expire_ms - l->drift_ms,
                     __ATOMIC_RELAXED);
    schedule(l, sent_ms);
    return 1;
}

/* Renew leases of one cfg and one slot in one script call.  KEYS must share
 * a slot in a cluster, so a batch goes out as one call per slot. */
static void renew_group(struct lw_lease **batch, const int *pos, int m,
                        int slot, int *results)
{
    static const char *argv[3 * BATCH_MAX]; /* watchdog thread only */
    static size_t lens[3 * BATCH_MAX];
    const struct lw_settings *cfg = batch[pos[0]]->cfg;
    struct lw_target to = {
        .cfg = cfg, .conn = slot < 0 ? wd.conn : NULL, .slot = slot};
    struct lw_request q = {.script = &lw__script_renew,
                           .nkeys = m,
                           .nargs = 2 * m,
                           .argv = argv,
                           .lens = lens};
    redisReply *r = NULL;
    int replayed, rc;

    for (int j = 0; j < m; j++) {
        const struct lw_lease *l = batch[pos[j]];
        argv[j] = l->key;
        lens[j] = l->keylen;
        argv[m + j] = l->token;
        lens[m + j] = (size_t)l->toklen;
        argv[2 * m + j] = l->expire_str;
        lens[2 * m + j] = (size_t)l->expire_len;
    }
    rc = lw__send(&to, &q, lw__now_us() + CLUSTER_TRY_MS * 1000, &r, &replayed);
    if (rc != LW_OK)
        return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)m)
        for (int j = 0; j < m; j++)
            if (r->element[j]->type == REDIS_REPLY_INTEGER)
                results[pos[j]] = r->element[j]->integer == 1;
    freeReplyObject(r);
}

/* Cluster leases, by configuration then slot, so each group is a run. */
static struct lw_lease **sort_batch;
static int slot_of[BATCH_MAX];

static int by_cfg_then_slot(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    const struct lw_settings *ca = sort_batch[a]->cfg, *cb = sort_batch[b]->cfg;

    if (ca != cb)
        return ca < cb ? -1 : 1;
    return slot_of[a] - slot_of[b];
}

/* One script call per (configuration, slot) among the cluster leases. */
static void renew_cluster(struct lw_lease **batch, int *cpos, int m,
                          int *results)
{
    for (int j = 0; j < m; j++)
        slot_of[cpos[j]] =
            lw__key_slot(batch[cpos[j]]->key, batch[cpos[j]]->keylen);
    sort_batch = batch;
    qsort(cpos, (size_t)m, sizeof *cpos, by_cfg_then_slot);
    for (int j = 0; j < m;) {
        int k = j + 1;
        while (k < m && batch[cpos[k]]->cfg == batch[cpos[j]]->cfg &&
               slot_of[cpos[k]] == slot_of[cpos[j]])
            k++;
        renew_group(batch, cpos + j, k - j, slot_of[cpos[j]], results);
        j = k;
    }
}

/* Renew every lease of the batch that has renewals left, in one script call
 * (one round trip, one reply, one Lua call for the whole batch; in a cluster
 * one per slot); results[i] is 1, 0, or -1 when Redis gave no usable
 * answer. */
static void send_batch(struct lw_lease **batch, int n, int *results)
{
    static int pos[BATCH_MAX], cpos[BATCH_MAX]; /* watchdog thread only */
    int m = 0, cm = 0;

    for (int i = 0; i < n; i++) {
        results[i] = batch[i]->renews_left == 0 ? 1 : -1;
        if (batch[i]->renews_left == 0)
            continue; /* only its end-of-lease event is due */
        if (batch[i]->cfg->ep.topology == LW_TOPO_REDLOCK)
            results[i] = lw__redlock_renew(batch[i]);
        else if (batch[i]->cfg->ep.topology == LW_TOPO_CLUSTER)
            cpos[cm++] = i;
        else
            pos[m++] = i;
    }
    if (m > 0)
        renew_group(batch, pos, m, -1, results);
    if (cm > 0)
        renew_cluster(batch, cpos, cm, results);
}

/* Take due leases off the heap (mu held); they are marked in flight. */
static int collect_due(struct lw_lease **batch, int64_t now)
{
    struct lw_lease *l;
    int n = 0;

    while (n < BATCH_MAX && (l = earliest()) != NULL &&
           l->due_ms <= now + BATCH_SLACK_MS &&
           !(l->renews_left == 0 && l->due_ms > now)) {
        unqueue_lease(l);
        l->inflight = 1;
        batch[n++] = l;
    }
    return n;
}

static void *watchdog_main(void *arg)
{
    struct lw_lease *batch[BATCH_MAX];
    int results[BATCH_MAX];

    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.stopping) {
        int64_t now = lw__now_ms();
        int n = collect_due(batch, now);

        if (n == 0) {
            struct lw_lease *next = earliest();
            int64_t until = next ? next->due_ms : now + IDLE_WAKE_MS;
            struct timespec ts = lw__abstime_us(until * 1000);
            wd.sleep_until_ms = until;
            pthread_cond_timedwait(&wd.cond, &wd.mu, &ts);
            wd.sleep_until_ms = 0;
            continue;
        }
        pthread_mutex_unlock(&wd.mu);
        send_batch(batch, n, results);
        pthread_mutex_lock(&wd.mu);
        int64_t done = lw__now_ms();
        for (int i = 0; i < n; i++) {
            batch[i]->inflight = 0;
            if (settle(batch[i], results[i], now, done) &&
                queue_lease(batch[i]))
                lease_lost(batch[i], "out of memory in the watchdog");
        }
        pthread_cond_broadcast(&wd.settled);
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

static int start_locked(void)
{
    pthread_condattr_t ca;

    if (wd.started)
        return LW_OK;
    if (wd.conn == NULL && (wd.conn = lw__conn_new()) == NULL)
        return LW_ENOMEM;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd.cond, &ca);
    pthread_cond_init(&wd.settled, &ca);
    pthread_condattr_destroy(&ca);
    wd.stopping = 0;
    if (lw__thread_spawn(&wd.thread, watchdog_main, NULL) != 0)
        return LW_ENOMEM;
    wd.started = 1;
    return LW_OK;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&wd.mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&wd.mu);
}

/* The child has no watchdog thread and holds none of the parent's leases:
 * forget them all; the connection is the parent's socket, closed unused. */
static void atfork_child(void)
{
    forget_all(NULL);
    wd.started = 0;
    wd.sleep_until_ms = 0;
    lw__conn_free(wd.conn);
    wd.conn = NULL;
    pthread_mutex_unlock(&wd.mu);
}

static void register_fork_hooks(void)
{
    static const struct lw_fork_hooks hooks = {atfork_prepare, atfork_parent,
                                               atfork_child};
    lw__fork_register(&hooks);
}

int lw__watchdog_add(struct lw_lease *l)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int rc;

    pthread_once(&once, register_fork_hooks);
    l->inflight = 0;
    l->heap_idx = -1;
    l->fifo = -1;
    l->expire_len =
        snprintf(l->expire_str, sizeof l->expire_str, "%u", l->expire_ms);
    schedule(l, lw__now_ms());
    pthread_mutex_lock(&wd.mu);
    rc = start_locked();
    if (rc == LW_OK)
        rc = queue_lease(l);
    /* Wake the thread only if it sleeps past this lease's first event: with
     * equal leases that is rare, so a busy lock loop causes no wake-ups. */
    if (rc == LW_OK && wd.sleep_until_ms != 0 && l->due_ms < wd.sleep_until_ms)
        pthread_cond_signal(&wd.cond);
    pthread_mutex_unlock(&wd.mu);
    return rc;
}

void lw__watchdog_remove(struct lw_lease *l)
{
    pthread_mutex_lock(&wd.mu);
    while (l->inflight)
        pthread_cond_wait(&wd.settled, &wd.mu);
    unqueue_lease(l);
    pthread_mutex_unlock(&wd.mu);
}

void lw__watchdog_stop(void)
{
    pthread_mutex_lock(&wd.mu);
    if (!wd.started) {
        pthread_mutex_unlock(&wd.mu);
        return;
    }
    wd.stopping = 1;
    pthread_cond_signal(&wd.cond);
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wd.thread, NULL);
    pthread_mutex_lock(&wd.mu);
    forget_all("lw_shutdown() stopped its renewal");
    wd.started = 0;
    lw__conn_free(wd.conn);
    wd.conn = NULL;
    pthread_cond_destroy(&wd.cond);
    pthread_cond_destroy(&wd.settled);
    pthread_mutex_unlock(&wd.mu);
}

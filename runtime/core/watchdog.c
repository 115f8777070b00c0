/*
 * The watchdog: one thread per process keeps every held lease alive.
 *
 * The thread sleeps until exactly the next renewal instead of scanning all
 * locks on a fixed tick.  A renewal is due a third of its lease after the
 * last one, so leases of one length come due in the order they were queued:
 * each length gets a FIFO (O(1) to queue, pop and cancel).  Events out of
 * that order — a lease's end once max_renew ran out, a retry after a failed
 * round trip — go to a binary min-heap ordered by due time.  Due renewals go
 * out together, each backend's in one call (backend.h; the queue backend's
 * is one script per server, on the watchdog thread's own connection).  A
 * lease out of renewals (max_renew) gets one last event at the end of its
 * validity, where it is marked lost.
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
#include "base/log.h"
#include "base/stats.h"
#include "base/thread.h"
#include "core/backend.h"

#define BATCH_MAX      LW_WATCHDOG_BATCH_MAX
#define BATCH_SLACK_MS 5 /* renew a little early to batch neighbours */
#define IDLE_WAKE_MS   1000
#define FIFOS_MAX      16 /* lease lengths with a FIFO of their own */

/* A heap entry carries its due time: sifting compares inside this one array
 * and never follows a pointer into a lease on some thread's stack (with
 * 10 000 leases those loads were a quarter of the watchdog's time). */
struct heap_entry {
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
    struct heap_entry *heap;
    int n, cap;
    int started, stopping;
    int64_t sleep_until_ms; /* 0 while awake: adders need not signal */
    pthread_t thread;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void heap_swap(int a, int b)
{
    struct heap_entry t = wd.heap[a];
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
        struct heap_entry *h = realloc(wd.heap, (size_t)cap * sizeof *h);
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

/* Settle one lease from its result (LW_OK renewed, LW_ELOST not ours,
 * another code: no answer); returns 1 when it stays queued. */
static int settle(struct lw_lease *l, int result, int64_t sent_ms, int64_t now)
{
    if (l->renews_left == 0 && l->due_ms <= now) {
        lease_lost(l, "max_renew renewals used up and the lease ran out");
        return 0;
    }
    if (result != LW_OK && result != LW_ELOST) {
        /* Redis unreachable: retry until the lease runs out. */
        if (now >= l->valid_until_ms) {
            lease_lost(l, "Redis unreachable until the lease ran out");
            return 0;
        }
        l->due_ms = now + (l->expire_ms / 10 ? l->expire_ms / 10 : 1);
        if (l->due_ms > l->valid_until_ms)
            l->due_ms = l->valid_until_ms;
        return 1;
    }
    if (result == LW_ELOST) {
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

/* Renew every lease of the batch that has renewals left, each backend's
 * leases in one call (the queue backend sends one script per server or
 * cluster slot: one round trip and one Lua call for many leases).
 * results[i]: LW_OK renewed, LW_ELOST not ours, another code: no usable
 * answer. */
static void send_batch(struct lw_lease **batch, int n, int *results)
{
    /* Watchdog thread only. */
    static struct lw_lease *group[BATCH_MAX];
    static int pos[BATCH_MAX], res[BATCH_MAX];
    unsigned char done[BATCH_MAX];

    for (int i = 0; i < n; i++) {
        /* Out of renewals: only its end-of-lease event is due. */
        done[i] = batch[i]->renews_left == 0;
        results[i] = LW_OK;
    }
    for (int i = 0; i < n; i++) {
        int m = 0;
        if (done[i])
            continue;
        for (int j = i; j < n; j++)
            if (!done[j] && batch[j]->be == batch[i]->be) {
                done[j] = 1;
                pos[m] = j;
                group[m++] = batch[j];
            }
        batch[i]->be->renew(group, m, res);
        for (int j = 0; j < m; j++)
            results[pos[j]] = res[j];
    }
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
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd.cond, &ca);
    pthread_cond_init(&wd.settled, &ca);
    pthread_condattr_destroy(&ca);
    wd.stopping = 0;
    if (lw__thread_spawn(&wd.thread, watchdog_main, NULL) != 0)
        return LW_ESYSTEM;
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
 * forget them all.  (The thread's connection was the parent's socket; the
 * child never uses it.) */
static void atfork_child(void)
{
    forget_all(NULL);
    wd.started = 0;
    wd.sleep_until_ms = 0;
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
    pthread_cond_destroy(&wd.cond);
    pthread_cond_destroy(&wd.settled);
    pthread_mutex_unlock(&wd.mu);
}

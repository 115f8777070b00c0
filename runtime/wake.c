/*
 * Wake-on-release: the per-process subscriber thread.
 *
 * The release script PUBLISHes on the lock's channel, naming the queued
 * waiter it wakes or hands the lock to.  One connection per process, in
 * subscribe mode, carries every channel some local thread waits on; a message
 * wakes the thread it names, which goes on at once instead of sleeping out a
 * backoff.  The thread multiplexes
 * the Redis socket and an eventfd with poll(), so other threads never touch
 * its hiredis context: they queue (un)subscriptions and poke the eventfd.
 *
 * A missed message (subscriber reconnecting, a release published before the
 * SUBSCRIBE took effect) costs little: waiters also sleep at most the lock's
 * remaining TTL and a poll cap, and a confirmed SUBSCRIBE wakes them to retry
 * once, closing the gap between their first try and the subscription.
 */
#include "wake.h"

#include <lockweave.h>
#include <poll.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "log.h"

#define NBUCKETS  256
#define LINGER_MS 1000 /* keep an idle subscription this long */
#define POLL_MS   500

struct lw_wchan {
    char *name;
    size_t len;
    int refs;       /* waiters joined */
    int subscribed; /* 0 no, 1 SUBSCRIBE sent, 2 confirmed */
    int64_t idle_since_ms;
    struct lw_waiter *head, *tail;
    struct lw_wchan *next;
};

static struct {
    pthread_mutex_t mu;
    struct lw_wchan *buckets[NBUCKETS];
    int started, stopping, dirty, healthy;
    int evfd;
    pthread_t thread;
    struct lw_conn *conn;
    int64_t next_sweep_ms;
} wk = {.mu = PTHREAD_MUTEX_INITIALIZER, .evfd = -1};

static unsigned bucket_of(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h % NBUCKETS;
}

static struct lw_wchan **find_slot(const char *s, size_t n)
{
    struct lw_wchan **pp = &wk.buckets[bucket_of(s, n)];
    while (*pp != NULL && ((*pp)->len != n || memcmp((*pp)->name, s, n) != 0))
        pp = &(*pp)->next;
    return pp;
}

static void poke(void)
{
    uint64_t one = 1;
    if (wk.evfd >= 0 && write(wk.evfd, &one, sizeof one) < 0) {
        /* Counter saturated: the thread is awake anyway. */
    }
}

/* A release's message: "w<token>" wakes that waiter to retry, "g<token>
 * <fence>" tells it the lock is already its own. */
static void wake_named(struct lw_wchan *e, const char *msg, size_t len)
{
    const char *sp = len > 1 ? memchr(msg + 1, ' ', len - 1) : NULL;
    size_t toklen = (sp ? (size_t)(sp - msg) : len) - 1;

    if (len < 2 || (msg[0] != 'w' && msg[0] != 'g'))
        return;
    for (struct lw_waiter *w = e->head; w != NULL; w = w->next) {
        if (w->toklen != toklen || memcmp(w->token, msg + 1, toklen) != 0)
            continue;
        if (msg[0] == 'g' && sp != NULL)
            w->granted = strtoull(sp + 1, NULL, 10);
        w->woken = 1;
        pthread_cond_signal(&w->cond);
        return;
    }
}

static void wake_all(struct lw_wchan *e)
{
    for (struct lw_waiter *w = e->head; w != NULL; w = w->next) {
        w->woken = 1;
        pthread_cond_signal(&w->cond);
    }
}

static void for_each(void (*fn)(struct lw_wchan *))
{
    for (int b = 0; b < NBUCKETS; b++)
        for (struct lw_wchan *e = wk.buckets[b]; e != NULL; e = e->next)
            fn(e);
}

static void forget_subscription(struct lw_wchan *e)
{
    e->subscribed = 0;
    wake_all(e); /* let them poll while we reconnect */
}

static void send_cmd(const char *cmd, struct lw_wchan *e)
{
    const char *argv[] = {cmd, e->name};
    size_t lens[] = {strlen(cmd), e->len};
    redisAppendCommandArgv(wk.conn->ctx, 2, argv, lens);
}

/* Send queued SUBSCRIBEs, and UNSUBSCRIBE channels idle past LINGER_MS
 * (mu held).  Lingering spares a hot key a subscribe per contended wait. */
static void flush_subscriptions(int64_t now)
{
    int sweep = now >= wk.next_sweep_ms;
    int done = 0;

    if (sweep)
        wk.next_sweep_ms = now + LINGER_MS / 2;
    for (int b = 0; b < NBUCKETS && (wk.dirty || sweep); b++) {
        struct lw_wchan **pp = &wk.buckets[b];
        while (*pp != NULL) {
            struct lw_wchan *e = *pp;
            if (e->refs > 0 && e->subscribed == 0) {
                send_cmd("SUBSCRIBE", e);
                e->subscribed = 1;
            } else if (sweep && e->refs == 0 &&
                       now - e->idle_since_ms >= LINGER_MS) {
                if (e->subscribed)
                    send_cmd("UNSUBSCRIBE", e);
                *pp = e->next;
                free(e->name);
                free(e);
                continue;
            }
            pp = &e->next;
        }
    }
    wk.dirty = 0;
    while (!done)
        if (redisBufferWrite(wk.conn->ctx, &done) != REDIS_OK)
            break;
}

static void on_push(redisReply *r)
{
    struct lw_wchan *e;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;
    e = *find_slot(r->element[1]->str, r->element[1]->len);
    if (e == NULL)
        return;
    if (strcmp(r->element[0]->str, "message") == 0) {
        if (r->element[2]->type == REDIS_REPLY_STRING)
            wake_named(e, r->element[2]->str, r->element[2]->len);
    } else if (strcmp(r->element[0]->str, "subscribe") == 0) {
        e->subscribed = 2;
        wake_all(e); /* a release may have slipped in before this */
    }
}

/* Read what the socket has (mu held); -1 when the connection broke. */
static int drain(void)
{
    void *r;

    if (redisBufferRead(wk.conn->ctx) != REDIS_OK)
        return -1;
    for (;;) {
        if (redisGetReplyFromReader(wk.conn->ctx, &r) != REDIS_OK)
            return -1;
        if (r == NULL)
            return 0;
        on_push(r);
        freeReplyObject(r);
    }
}

static void connect_locked(void)
{
    int rc;

    pthread_mutex_unlock(&wk.mu);
    rc = lw__conn_ensure(wk.conn);
    pthread_mutex_lock(&wk.mu);
    wk.healthy = rc == LW_OK;
    if (wk.healthy) {
        for_each(forget_subscription);
        wk.dirty = 1;
    }
}

static void *wake_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wk.mu);
    while (!wk.stopping) {
        struct pollfd fds[2] = {{.fd = wk.evfd, .events = POLLIN},
                                {.fd = -1, .events = POLLIN}};
        uint64_t count;

        if (wk.conn->ctx == NULL)
            connect_locked();
        if (wk.conn->ctx != NULL) {
            flush_subscriptions(lw__now_ms());
            fds[1].fd = wk.conn->ctx->fd;
        }
        pthread_mutex_unlock(&wk.mu);
        poll(fds, 2, fds[1].fd >= 0 ? POLL_MS : 50);
        pthread_mutex_lock(&wk.mu);
        if (fds[0].revents & POLLIN)
            (void)!read(wk.evfd, &count, sizeof count);
        if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP)) &&
            wk.conn->ctx != NULL && drain() < 0) {
            lw__log(LW_LOG_WARN, "wake-up subscriber lost Redis: %s",
                    wk.conn->ctx->errstr);
            lw__conn_drop(wk.conn);
            wk.healthy = 0;
            for_each(forget_subscription);
        }
    }
    pthread_mutex_unlock(&wk.mu);
    return NULL;
}

static int start_locked(void)
{
    if (wk.started)
        return 1;
    if (wk.conn == NULL && (wk.conn = lw__conn_new()) == NULL)
        return 0;
    if (wk.evfd < 0 && (wk.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return 0;
    wk.stopping = 0;
    if (pthread_create(&wk.thread, NULL, wake_main, NULL) != 0)
        return 0;
    wk.started = 1;
    return 1;
}

int lw__wake_join(struct lw_waiter *w, const char *chan, size_t chanlen)
{
    pthread_condattr_t ca;
    struct lw_wchan **pp, *e;
    int ok = 0;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    w->woken = 0;
    w->granted = 0;
    w->next = NULL;
    w->entry = NULL;

    pthread_mutex_lock(&wk.mu);
    if (!start_locked())
        goto out;
    pp = find_slot(chan, chanlen);
    if (*pp == NULL) {
        e = calloc(1, sizeof *e);
        if (e == NULL || (e->name = malloc(chanlen)) == NULL) {
            free(e);
            goto out;
        }
        memcpy(e->name, chan, chanlen);
        e->len = chanlen;
        *pp = e;
    }
    e = *pp;
    e->refs++;
    if (e->tail)
        e->tail->next = w;
    else
        e->head = w;
    e->tail = w;
    w->entry = e;
    if (e->subscribed == 0) {
        wk.dirty = 1;
        poke();
    }
    ok = wk.healthy;
out:
    pthread_mutex_unlock(&wk.mu);
    return ok;
}

uint64_t lw__wake_wait(struct lw_waiter *w, int64_t timeout_us)
{
    struct timespec ts = lw__abstime_us(lw__now_us() + timeout_us);
    uint64_t granted;

    pthread_mutex_lock(&wk.mu);
    while (!w->woken)
        if (pthread_cond_timedwait(&w->cond, &wk.mu, &ts) != 0)
            break;
    w->woken = 0;
    granted = w->granted;
    pthread_mutex_unlock(&wk.mu);
    return granted;
}

void lw__wake_leave(struct lw_waiter *w)
{
    struct lw_wchan *e = w->entry;

    pthread_mutex_lock(&wk.mu);
    if (e != NULL) {
        struct lw_waiter **pp = &e->head, *prev = NULL;
        while (*pp != w) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        *pp = w->next;
        if (e->tail == w)
            e->tail = prev;
        if (--e->refs == 0)
            e->idle_since_ms = lw__now_ms();
    }
    pthread_mutex_unlock(&wk.mu);
    pthread_cond_destroy(&w->cond);
}

static void free_all_entries(void)
{
    for (int b = 0; b < NBUCKETS; b++) {
        while (wk.buckets[b] != NULL) {
            struct lw_wchan *e = wk.buckets[b];
            wk.buckets[b] = e->next;
            free(e->name);
            free(e);
        }
    }
}

void lw__wake_stop(void)
{
    pthread_mutex_lock(&wk.mu);
    if (wk.started) {
        wk.stopping = 1;
        poke();
        pthread_mutex_unlock(&wk.mu);
        pthread_join(wk.thread, NULL);
        pthread_mutex_lock(&wk.mu);
        wk.started = 0;
    }
    free_all_entries();
    lw__conn_free(wk.conn);
    wk.conn = NULL;
    wk.healthy = 0;
    if (wk.evfd >= 0)
        close(wk.evfd);
    wk.evfd = -1;
    pthread_mutex_unlock(&wk.mu);
}

void lw__wake_atfork_prepare(void)
{
    pthread_mutex_lock(&wk.mu);
}

void lw__wake_atfork_parent(void)
{
    pthread_mutex_unlock(&wk.mu);
}

/* The child inherits neither the subscriber thread nor the parent's waiting
 * threads: start from nothing (closing only the child's copies of the fds). */
void lw__wake_atfork_child(void)
{
    free_all_entries();
    lw__conn_free(wk.conn);
    wk.conn = NULL;
    if (wk.evfd >= 0)
        close(wk.evfd);
    wk.evfd = -1;
    wk.started = wk.stopping = wk.dirty = wk.healthy = 0;
    pthread_mutex_unlock(&wk.mu);
}

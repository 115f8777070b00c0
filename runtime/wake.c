/*
 * Wake-on-release: the per-process subscriber thread.
 *
 * The release script publishes on the lock's channel, naming the queued
 * waiter it wakes or hands the lock to.  Subscriber connections carry every
 * channel some local thread waits on; a message wakes the thread it names,
 * which goes on at once instead of sleeping out a backoff.  The thread
 * multiplexes its Redis sockets and an eventfd with poll(), so other threads
 * never touch its hiredis contexts: they queue (un)subscriptions and poke
 * the eventfd.
 *
 * One server: one connection, SUBSCRIBE / PUBLISH.  Redis Cluster: sharded
 * pub/sub (Redis 7), so a release reaches only the node that serves the
 * channel's slot instead of being broadcast to every node: one connection per
 * master that serves a waited-on channel, SSUBSCRIBE there.  When a slot
 * moves (failover, resharding) its node ends the subscription with an
 * unsolicited SUNSUBSCRIBE, or answers MOVED; the channel is then subscribed
 * again wherever the refreshed slot map says.
 *
 * A missed message (subscriber reconnecting, a release published before the
 * SUBSCRIBE took effect, a slot moving) costs little: waiters also sleep at
 * most the lock's remaining TTL and a poll cap, and a confirmed subscription
 * (or a lost one) wakes them to retry once, closing the gap.
 */
#include "wake.h"

#include <lockweave.h>
#include <poll.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "conn.h"
#include "fork.h"
#include "log.h"
#include "route.h"
#include "slot.h"
#include "slotmap.h"
#include "thread.h"

#define NBUCKETS  256
#define LINGER_MS 1000 /* keep an idle subscription this long */
#define POLL_MS   500
#define SUBS_MAX  32 /* subscriber connections: masters with waiters */

struct lw_wchan {
    char *name;
    size_t len;
    int slot;       /* its cluster slot */
    int refs;       /* waiters joined */
    int subscribed; /* 0 no, 1 SUBSCRIBE sent, 2 confirmed */
    int sub;        /* the connection it was subscribed on */
    int64_t idle_since_ms;
    struct lw_waiter *head, *tail;
    struct lw_wchan *next;
};

/* One subscriber connection: to the configured server, or to one master. */
struct sub {
    struct lw_url url; /* cluster node (owned); unused with one server */
    struct lw_conn *conn;
};

static struct {
    pthread_mutex_t mu;
    struct lw_wchan *buckets[NBUCKETS];
    int started, stopping, dirty, healthy;
    int evfd;
    pthread_t thread;
    int cluster;      /* subs are cluster nodes (sharded pub/sub) */
    unsigned cfg_gen; /* configuration the subs were set up for */
    struct sub subs[SUBS_MAX];
    int nsubs;
    uint64_t map_version; /* slot map the subscriptions were placed by */
    int need_map;         /* a slot moved: learn the map again */
    int64_t next_sweep_ms;
    char tag[LW_WAKE_TAG_LEN + 1]; /* lw__wake_tag() */
    unsigned tag_gen;              /* lw__fork_gen it was drawn in */
} wk = {.mu = PTHREAD_MUTEX_INITIALIZER, .evfd = -1};

void lw__wake_tag(char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[LW_WAKE_TAG_LEN / 2];

    pthread_mutex_lock(&wk.mu);
    if (wk.tag[0] == '\0' || wk.tag_gen != lw__fork_gen) {
        /* Only distinct, not secret: a short read falls back on the pid and
         * the clock. */
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            uint64_t v = (uint64_t)getpid() << 32 ^ (uint64_t)lw__now_us();
            memcpy(r, &v, sizeof r);
        }
        for (size_t i = 0; i < sizeof r; i++) {
            wk.tag[2 * i] = hex[r[i] >> 4];
            wk.tag[2 * i + 1] = hex[r[i] & 15];
        }
        wk.tag[LW_WAKE_TAG_LEN] = '\0';
        wk.tag_gen = lw__fork_gen;
    }
    memcpy(out, wk.tag, sizeof wk.tag);
    pthread_mutex_unlock(&wk.mu);
}

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

/* "<fence> <entry>" of a hand-off; a malformed one only wakes. */
static void grant(struct lw_waiter *w, const char *p, size_t n)
{
    const char *sp = memchr(p, ' ', n);
    size_t elen = sp ? n - (size_t)(sp + 1 - p) : 0;
    char num[24];

    if (sp == NULL || sp == p || (size_t)(sp - p) >= sizeof num || elen == 0 ||
        elen >= sizeof w->grant_entry)
        return;
    memcpy(num, p, (size_t)(sp - p));
    num[sp - p] = '\0';
    memcpy(w->grant_entry, sp + 1, elen);
    w->grant_entry[elen] = '\0';
    w->granted = strtoull(num, NULL, 10);
}

/* A release's message: "w<token>" wakes that waiter to retry, "g<token>
 * <fence> <entry>" tells it the lock was handed to its queue entry. */
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
            grant(w, sp + 1, len - (size_t)(sp + 1 - msg));
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

/* Channel e is no longer subscribed (connection lost, slot moved): its
 * waiters poll once now, and it is subscribed again on the next flush. */
static void forget_subscription(struct lw_wchan *e)
{
    e->subscribed = 0;
    wk.dirty = 1;
    wake_all(e);
}

static void forget_sub_channels(int sub)
{
    for (int b = 0; b < NBUCKETS; b++)
        for (struct lw_wchan *e = wk.buckets[b]; e != NULL; e = e->next)
            if (e->subscribed && e->sub == sub)
                forget_subscription(e);
}

static void send_cmd(int sub, const char *cmd, struct lw_wchan *e)
{
    const char *argv[] = {cmd, e->name};
    size_t lens[] = {strlen(cmd), e->len};
    redisAppendCommandArgv(wk.subs[sub].conn->ctx, 2, argv, lens);
}

static void drop_sub(int i)
{
    lw__conn_drop(wk.subs[i].conn);
}

static void free_subs(void)
{
    for (int i = 0; i < wk.nsubs; i++) {
        lw__conn_free(wk.subs[i].conn);
        lw__url_free(&wk.subs[i].url);
    }
    wk.nsubs = 0;
}

/* Index of the subscriber connection for u (created if new), -1 if none
 * can be had. */
static int sub_for_node(const struct lw_url *u)
{
    struct sub *s;

    for (int i = 0; i < wk.nsubs; i++)
        if (wk.subs[i].url.port == u->port &&
            strcmp(wk.subs[i].url.host, u->host) == 0)
            return i;
    if (wk.nsubs == SUBS_MAX)
        return -1;
    s = &wk.subs[wk.nsubs];
    if (lw__url_copy(&s->url, u) != LW_OK)
        return -1;
    if ((s->conn = lw__conn_new_to(&s->url)) == NULL) {
        lw__url_free(&s->url);
        return -1;
    }
    return wk.nsubs++;
}

/* Where e belongs now: 0 with one server, else its slot's master by the
 * current map; -1 when the map does not say (then it is learnt again). */
static int sub_for(const struct lw_wchan *e)
{
    const struct lw_slotmap *m;

    if (!wk.cluster)
        return 0;
    m = lw__slotmap_current();
    if (m == NULL || m->cfg_gen != wk.cfg_gen ||
        m->owner[e->slot] == LW_SLOT_UNSERVED) {
        wk.need_map = 1;
        return -1;
    }
    return sub_for_node(&m->nodes[m->owner[e->slot]]);
}

static int sub_up(int i)
{
    return i >= 0 && i < wk.nsubs && wk.subs[i].conn->ctx != NULL;
}

/* A new slot map: channels whose slot now lives elsewhere leave their old
 * node and are subscribed again where the map says (mu held). */
static void follow_map(void)
{
    uint64_t v = lw__route_map_version();

    if (!wk.cluster || v == wk.map_version)
        return;
    wk.map_version = v;
    for (int b = 0; b < NBUCKETS; b++)
        for (struct lw_wchan *e = wk.buckets[b]; e != NULL; e = e->next) {
            int to = e->subscribed ? sub_for(e) : e->sub;
            if (!e->subscribed || to == e->sub)
                continue;
            if (sub_up(e->sub))
                send_cmd(e->sub, "SUNSUBSCRIBE", e);
            forget_subscription(e);
        }
}

/* Send queued subscriptions, and unsubscribe channels idle past LINGER_MS
 * (mu held).  Lingering spares a hot key a subscribe per contended wait. */
static void flush_subscriptions(int64_t now)
{
    const char *sub_cmd = wk.cluster ? "SSUBSCRIBE" : "SUBSCRIBE";
    const char *unsub_cmd = wk.cluster ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
    int sweep = now >= wk.next_sweep_ms;

    if (sweep)
        wk.next_sweep_ms = now + LINGER_MS / 2;
    for (int b = 0; b < NBUCKETS && (wk.dirty || sweep); b++) {
        struct lw_wchan **pp = &wk.buckets[b];
        while (*pp != NULL) {
            struct lw_wchan *e = *pp;
            if (e->refs > 0 && e->subscribed == 0) {
                int to = sub_for(e);
                if (sub_up(to)) {
                    send_cmd(to, sub_cmd, e);
                    e->sub = to;
                    e->subscribed = 1;
                }
            } else if (sweep && e->refs == 0 &&
                       now - e->idle_since_ms >= LINGER_MS) {
                if (e->subscribed && sub_up(e->sub))
                    send_cmd(e->sub, unsub_cmd, e);
                *pp = e->next;
                free(e->name);
                free(e);
                continue;
            }
            pp = &e->next;
        }
    }
    wk.dirty = 0;
    for (int i = 0; i < wk.nsubs; i++) {
        int done = 0;
        while (sub_up(i) && !done)
            if (redisBufferWrite(wk.subs[i].conn->ctx, &done) != REDIS_OK)
                break;
    }
}

static void on_reply(int sub, redisReply *r)
{
    struct lw_wchan *e;
    const char *kind;

    if (r->type == REDIS_REPLY_ERROR) {
        /* MOVED to a subscription: the map is stale.  Every unconfirmed
         * subscription on this node is placed again after a refresh. */
        lw__log(LW_LOG_DEBUG, "wake-up subscriber: %s", r->str);
        wk.need_map = 1;
        for (int b = 0; b < NBUCKETS; b++)
            for (e = wk.buckets[b]; e != NULL; e = e->next)
                if (e->subscribed == 1 && e->sub == sub)
                    forget_subscription(e);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;
    e = *find_slot(r->element[1]->str, r->element[1]->len);
    if (e == NULL || e->sub != sub)
        return;
    kind = r->element[0]->str;
    if (kind[0] == 's') /* smessage, ssubscribe, sunsubscribe */
        kind++;
    if (strcmp(kind, "message") == 0) {
        if (r->element[2]->type == REDIS_REPLY_STRING)
            wake_named(e, r->element[2]->str, r->element[2]->len);
    } else if (strcmp(kind, "subscribe") == 0) {
        e->subscribed = 2;
        wake_all(e); /* a release may have slipped in before this */
    } else if (strcmp(kind, "unsubscribe") == 0 && e->refs > 0) {
        /* Not ours (we unsubscribe only idle channels): the node gave up
         * the slot.  Subscribe again where the new map says. */
        wk.need_map = wk.cluster;
        forget_subscription(e);
    }
}

/* Read what sub i's socket has (mu held); -1 when the connection broke. */
static int drain(int i)
{
    redisContext *ctx = wk.subs[i].conn->ctx;
    void *r;

    if (redisBufferRead(ctx) != REDIS_OK)
        return -1;
    for (;;) {
        if (redisGetReplyFromReader(ctx, &r) != REDIS_OK)
            return -1;
        if (r == NULL)
            return 0;
        on_reply(i, r);
        freeReplyObject(r);
    }
}

/* Follow a configuration change: new mode, no connection kept (mu held). */
static void follow_config(const struct lw_settings *s)
{
    if (s->gen == wk.cfg_gen && wk.nsubs > 0)
        return;
    for (int b = 0; b < NBUCKETS; b++)
        for (struct lw_wchan *e = wk.buckets[b]; e != NULL; e = e->next)
            if (e->subscribed)
                forget_subscription(e);
    free_subs();
    wk.cfg_gen = s->gen;
    wk.cluster = s->ep.topology == LW_TOPO_CLUSTER;
    wk.map_version = 0;
    if (!wk.cluster) { /* the configured endpoint, however it is reached */
        memset(&wk.subs[0].url, 0, sizeof wk.subs[0].url);
        if ((wk.subs[0].conn = lw__conn_new()) != NULL)
            wk.nsubs = 1;
    }
}

/* 1 when some waiting channel needs sub i. */
static int sub_wanted(int i)
{
    if (!wk.cluster)
        return 1;
    for (int b = 0; b < NBUCKETS; b++)
        for (struct lw_wchan *e = wk.buckets[b]; e != NULL; e = e->next)
            if (e->refs > 0 && (e->subscribed ? e->sub == i : 1))
                return 1;
    return 0;
}

/* Open wanted subscriber connections and learn the slot map when asked,
 * without holding mu across the I/O. */
static void connect_locked(const struct lw_settings *s)
{
    int healthy = 1;

    if (wk.need_map) {
        wk.need_map = 0;
        pthread_mutex_unlock(&wk.mu);
        lw__route_refresh(s);
        pthread_mutex_lock(&wk.mu);
        follow_map();
        wk.dirty = 1;
    }
    for (int i = 0; i < wk.nsubs; i++) {
        int rc;
        if (sub_up(i) || !sub_wanted(i))
            continue;
        pthread_mutex_unlock(&wk.mu);
        rc = lw__conn_ensure(wk.subs[i].conn);
        pthread_mutex_lock(&wk.mu);
        if (rc == LW_OK) {
            forget_sub_channels(i);
            wk.dirty = 1;
        } else {
            healthy = 0;
        }
    }
    wk.healthy = healthy;
}

static void *wake_main(void *arg)
{
    struct pollfd fds[1 + SUBS_MAX];
    int owner[1 + SUBS_MAX];

    (void)arg;
    pthread_mutex_lock(&wk.mu);
    while (!wk.stopping) {
        const struct lw_settings *s = lw__settings();
        int n = 1, any_down = 0;
        uint64_t count;

        follow_config(s);
        if (wk.cluster && wk.nsubs == 0 && lw__route_map_version() == 0)
            wk.need_map = 1;
        connect_locked(s);
        follow_map();
        flush_subscriptions(lw__now_ms());
        fds[0] = (struct pollfd){.fd = wk.evfd, .events = POLLIN};
        for (int i = 0; i < wk.nsubs; i++) {
            if (!sub_up(i)) {
                any_down |= sub_wanted(i);
                continue;
            }
            owner[n] = i;
            fds[n++] = (struct pollfd){.fd = wk.subs[i].conn->ctx->fd,
                                       .events = POLLIN};
        }
        pthread_mutex_unlock(&wk.mu);
        poll(fds, (nfds_t)n, any_down || wk.need_map ? 50 : POLL_MS);
        pthread_mutex_lock(&wk.mu);
        if (fds[0].revents & POLLIN)
            (void)!read(wk.evfd, &count, sizeof count);
        for (int k = 1; k < n; k++) {
            int i = owner[k];
            if (!(fds[k].revents & (POLLIN | POLLERR | POLLHUP)) || !sub_up(i))
                continue;
            if (drain(i) < 0) {
                lw__log(LW_LOG_WARN, "wake-up subscriber lost Redis: %s",
                        wk.subs[i].conn->ctx->errstr);
                drop_sub(i);
                wk.healthy = 0;
                wk.need_map = wk.cluster; /* a master died? */
                forget_sub_channels(i);
            }
        }
    }
    pthread_mutex_unlock(&wk.mu);
    return NULL;
}

static int start_locked(void)
{
    if (wk.started)
        return 1;
    if (wk.evfd < 0 && (wk.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return 0;
    wk.stopping = 0;
    if (lw__thread_spawn(&wk.thread, wake_main, NULL) != 0)
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
        e->slot = lw__key_slot(chan, chanlen);
        e->sub = -1;
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

uint64_t lw__wake_wait(struct lw_waiter *w, int64_t timeout_us, char *entry)
{
    struct timespec ts = lw__abstime_us(lw__now_us() + timeout_us);
    uint64_t granted;

    pthread_mutex_lock(&wk.mu);
    while (!w->woken)
        if (pthread_cond_timedwait(&w->cond, &wk.mu, &ts) != 0)
            break;
    w->woken = 0;
    granted = w->granted;
    w->granted = 0;
    if (granted != 0)
        memcpy(entry, w->grant_entry, sizeof w->grant_entry);
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

static void reset_locked(void)
{
    free_all_entries();
    free_subs();
    wk.cfg_gen = 0;
    wk.map_version = 0;
    wk.need_map = 0;
    wk.healthy = 0;
    if (wk.evfd >= 0)
        close(wk.evfd);
    wk.evfd = -1;
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
    reset_locked();
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
    reset_locked();
    wk.started = wk.stopping = wk.dirty = 0;
    pthread_mutex_unlock(&wk.mu);
}

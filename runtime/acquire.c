/*
 * Acquire: one script round trip when the lock is free (SET NX PX plus the
 * fence INCR), then, while it is busy, sleep until a release wakes us, the
 * lock's TTL runs out, or the deadline comes — whichever is first.
 */
#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "conn.h"
#include "guard.h"
#include "keynames.h"
#include "scripts.h"
#include "stats.h"
#include "thread.h"
#include "wake.h"

#define BACKOFF_START_US 1000
#define BACKOFF_MAX_US   100000 /* no notifications: poll at most this */
#define NOTIFIED_POLL_US 200000 /* notifications: a missed one costs this */
#define NAME_INLINE      256

struct attempt {
    struct lw_conn *conn;
    struct lw_gimpl *g;
    const char *argv[4];
    size_t lens[4];
    char expire[16];
    int64_t sent_us; /* when the last try left */
};

/* One try: 1 acquired, 0 busy (*ttl_ms remaining, 0 unknown), < 0 error. */
static int try_once(struct attempt *a, int64_t *ttl_ms)
{
    redisReply *r;
    int replayed, rc;

    a->sent_us = lw__now_us();
    rc = lw__conn_script(a->conn, LW_SCRIPT_ACQUIRE, 2, 2, a->argv, a->lens, &r,
                         &replayed);
    if (rc != LW_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER || r->integer == 0) {
        freeReplyObject(r);
        return LW_EREDIS;
    }
    if (r->integer > 0) {
        a->g->fence = (uint64_t)r->integer;
        rc = 1;
    } else {
        *ttl_ms = -1 - r->integer;
        rc = 0;
    }
    freeReplyObject(r);
    return rc;
}

static int64_t next_sleep_us(int notified, int64_t *backoff_us, int64_t ttl_ms,
                             int64_t left_us)
{
    int64_t sleep_us;

    if (notified) {
        sleep_us = NOTIFIED_POLL_US;
    } else {
        /* Full jitter: processes that lost together do not retry together. */
        sleep_us =
            *backoff_us / 2 + lw__jitter((uint32_t)(*backoff_us / 2) + 1);
        *backoff_us *= 2;
        if (*backoff_us > BACKOFF_MAX_US)
            *backoff_us = BACKOFF_MAX_US;
    }
    if (ttl_ms > 0 && ttl_ms * 1000 + 500 < sleep_us)
        sleep_us = ttl_ms * 1000 + 500; /* the holder's lease ends sooner */
    return sleep_us < left_us ? sleep_us : left_us;
}

/* The busy case: wait for a release until the deadline. */
static int wait_for(struct attempt *a, int64_t ttl_ms, int64_t deadline_us)
{
    struct lw_gimpl *g = a->g;
    char namebuf[NAME_INLINE];
    size_t chanlen;
    char *chan = lw__keyname(g->key, g->keylen, LW_WAKE_SUFFIX, namebuf,
                             sizeof namebuf, &chanlen);
    struct lw_waiter w;
    int64_t backoff_us = BACKOFF_START_US;
    int notified, rc = 0;

    if (chan == NULL)
        return LW_ENOMEM;
    notified = lw__wake_join(&w, chan, chanlen);
    while (rc == 0) {
        int64_t left_us = deadline_us - lw__now_us();
        if (left_us <= 0) {
            rc = LW_ETIMEOUT;
            break;
        }
        lw__wake_wait(&w,
                      next_sleep_us(notified, &backoff_us, ttl_ms, left_us));
        rc = try_once(a, &ttl_ms);
    }
    lw__wake_leave(&w);
    if (chan != namebuf)
        free(chan);
    return rc;
}

int lw__acquire(struct lw_gimpl *g)
{
    struct attempt a = {.g = g};
    char namebuf[NAME_INLINE];
    size_t fencelen;
    char *fence;
    int64_t start_us = lw__now_us(), ttl_ms = 0;
    int rc, toklen;

    rc = lw__conn_thread(&a.conn);
    if (rc != LW_OK)
        return rc;
    toklen = lw__token_new(g->lease.token);
    if (toklen < 0)
        return toklen;
    g->lease.toklen = toklen;
    fence = lw__keyname(g->key, g->keylen, LW_FENCE_SUFFIX, namebuf,
                        sizeof namebuf, &fencelen);
    if (fence == NULL)
        return LW_ENOMEM;
    a.argv[0] = g->key;
    a.lens[0] = g->keylen;
    a.argv[1] = fence;
    a.lens[1] = fencelen;
    a.argv[2] = g->lease.token;
    a.lens[2] = (size_t)toklen;
    a.argv[3] = a.expire;
    a.lens[3] =
        (size_t)snprintf(a.expire, sizeof a.expire, "%u", g->opts.expire_ms);

    rc = try_once(&a, &ttl_ms);
    if (rc == 0) {
        LW_STAT_ADD(contended, 1);
        rc = g->opts.wait_ms == 0
                 ? LW_ETIMEOUT
                 : wait_for(&a, ttl_ms,
                            start_us + (int64_t)g->opts.wait_ms * 1000);
        lw__stat_wait((uint64_t)(lw__now_us() - start_us));
    }
    if (fence != namebuf)
        free(fence);
    if (rc < 0)
        return rc;
    /* The lease is measured from before the request: whatever the round
     * trip took, our clock never believes in more lease than Redis gave. */
    g->lease.valid_until_ms = a.sent_us / 1000 + g->opts.expire_ms;
    return LW_OK;
}

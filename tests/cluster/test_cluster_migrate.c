/*
 * A slot resharded while its locks are in use: CLUSTER SETSLOT IMPORTING /
 * MIGRATING, MIGRATE of its keys in small batches, SETSLOT NODE.  Meanwhile
 * lockweave meets ASK (keys already moved), TRYAGAIN (a script's keys split
 * between the nodes) and, once done, MOVED.  Mutual exclusion, exact
 * counters and increasing fences must hold throughout, with no failed call
 * and no release left to the lock's TTL.
 * No node goes away, so following a redirection never fails to connect:
 * a failure there means MOVED's "<slot> <host>:<port>" was misread.
 */
#include <lockweave.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rh_cluster.h"
#include "topology/slot.h"

#define THREADS 4
#define NKEYS   8

static rh_cluster cl;
static atomic_int stop, overlaps, failures, fence_regressions, sections;
static atomic_int inside[NKEYS];
static atomic_llong last_fence[NKEYS];
static long counter[NKEYS];
static atomic_int connect_failures, release_failures;

static void count_failures(int level, const char *msg, void *ud)
{
    (void)ud;
    if (strstr(msg, "connect failed") != NULL)
        atomic_fetch_add(&connect_failures, 1);
    if (strstr(msg, "could not release") != NULL)
        atomic_fetch_add(&release_failures, 1);
    if (level >= LW_LOG_WARN)
        fprintf(stderr, "lockweave: %s\n", msg);
}

/* All in one slot: the hash tag {mig}. */
static int key_name(int k, char *buf, size_t cap)
{
    return snprintf(buf, cap, "acct{mig}:%d", k);
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    lw_lock_opts o;

    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.wait_ms = 20000;
    o.max_renew = -1;
    while (!atomic_load(&stop)) {
        int k = rand_r(&seed) % NKEYS, rc;
        char key[32];
        int len = key_name(k, key, sizeof key);
        long long f;
        lw_guard g;
        long v;

        rc = lw_lock(&g, key, (size_t)len, &o);
        if (rc != LW_OK) {
            fprintf(stderr, "lock %s: %s\n", key, lw_strerror(rc));
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (atomic_fetch_add(&inside[k], 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        f = (long long)lw_fence();
        if (f <= atomic_exchange(&last_fence[k], f))
            atomic_fetch_add(&fence_regressions, 1);
        v = counter[k];
        sched_yield();
        counter[k] = v + 1;
        atomic_fetch_sub(&inside[k], 1);
        rc = lw_guard_leave(&g);
        if (rc != LW_OK) {
            fprintf(stderr, "leave %s: %s\n", key, lw_strerror(rc));
            atomic_fetch_add(&failures, 1);
        }
        atomic_fetch_add(&sections, 1);
    }
    return NULL;
}

/* 1 if s holds key; a node migrating key's slot answers ASK for a key it
 * does not hold. */
static long long exists(rh_server *s, const char *key)
{
    redisReply *r = rh_cmd(s, "EXISTS %s", key);
    long long n;

    CHECK(r != NULL);
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0)
        n = 0;
    else {
        CHECK(r->type == REDIS_REPLY_INTEGER);
        n = r->integer;
    }
    freeReplyObject(r);
    return n;
}

struct split_waiter {
    const char *key;
    int rc;
};

static void *wait_in_split_slot(void *arg)
{
    struct split_waiter *w = arg;
    lw_lock_opts o;
    lw_guard g;

    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.wait_ms = 20000;
    w->rc = lw_lock(&g, w->key, strlen(w->key), &o);
    if (w->rc == LW_OK)
        w->rc = lw_guard_leave(&g);
    return NULL;
}

/* A lock taken before a migration of its slot begins and released once it
 * has.  Alone, its key is still on src and its queue exists nowhere, so the
 * release script (lock and queue keys) meets TRYAGAIN for as long as the
 * migration lasts.  With a waiter, all the script's keys are on src, but
 * src refuses to create a key in a migrating slot: a hand-off must
 * overwrite the lock key, not delete it and set it again.  Either way the
 * release must succeed, not leave the key to its TTL, and the waiter gets
 * the lock.  The slot is another of src's, made stable again afterwards. */
static void release_in_split_slot(rh_server *src, rh_server *dst,
                                  int with_waiter)
{
    char full[40], queue[64];
    const char *key = full + 5; /* without the prefix, "lock:" */
    struct split_waiter w = {key, 0};
    pthread_t t;
    lw_lock_opts o;
    lw_guard g;
    int slot = -1, tag = 0;

    for (; slot < 0 || rh_cluster_master_of(&cl, slot) != src; tag++)
        slot = lw__key_slot(full, (size_t)snprintf(full, sizeof full,
                                                   "lock:split%d{%d}",
                                                   with_waiter, tag));

    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.wait_ms = 1000;
    CHECK_EQ(lw_lock(&g, key, strlen(key), &o), LW_OK);
    CHECK_EQ(exists(src, full), 1);
    if (with_waiter) {
        snprintf(queue, sizeof queue, "{%d}%s:q", tag - 1, full);
        CHECK_EQ(pthread_create(&t, NULL, wait_in_split_slot, &w), 0);
        for (int i = 0; i < 1000; i++) {
            redisReply *r = rh_cmd(src, "ZCARD %s", queue);
            long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
            freeReplyObject(r);
            if (n == 1)
                break;
            usleep(10000);
        }
        usleep(50000); /* older than the hand-off age: it is handed the lock */
    }
    CHECK_EQ(rh_cluster_migrate_begin(&cl, src, dst, slot), 0);
    CHECK_EQ(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(atomic_load(&release_failures), 0);
    /* Deleted, or handed to the waiter. */
    CHECK_EQ(exists(src, full), with_waiter);
    CHECK_EQ(rh_ok(rh_cmd(src, "CLUSTER SETSLOT %d STABLE", slot), "STABLE"),
             0);
    CHECK_EQ(rh_ok(rh_cmd(dst, "CLUSTER SETSLOT %d STABLE", slot), "STABLE"),
             0);
    if (with_waiter) {
        CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_RC(w.rc, LW_OK);
    }
}

/* Move every key of slot from src to dst, a few at a time; returns how many
 * were moved. */
static int move_keys(rh_server *src, rh_server *dst, int slot)
{
    int moved = 0;

    for (;;) {
        redisReply *keys = rh_cmd(src, "CLUSTER GETKEYSINSLOT %d 3", slot);
        const char *names[3];
        size_t lens[3];

        CHECK(keys != NULL && keys->type == REDIS_REPLY_ARRAY);
        if (keys->elements == 0) {
            freeReplyObject(keys);
            return moved;
        }
        for (size_t i = 0; i < keys->elements; i++) {
            names[i] = keys->element[i]->str;
            lens[i] = keys->element[i]->len;
        }
        CHECK_EQ(
            rh_cluster_migrate_keys(src, dst, (int)keys->elements, names, lens),
            0);
        moved += (int)keys->elements;
        freeReplyObject(keys);
        usleep(20000); /* let the workers meet the half-moved slot */
    }
}

int main(void)
{
    char key[32], full[40];
    pthread_t t[THREADS];
    rh_server *src, *dst = NULL;
    lw_config cfg;
    long total = 0;
    int slot, moved, before;

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    key_name(0, key, sizeof key);
    slot =
        lw__key_slot(full, (size_t)snprintf(full, sizeof full, "lock:%s", key));
    src = rh_cluster_master_of(&cl, slot);
    CHECK(src != NULL);
    for (int s = 0; s < 16384 && dst == NULL; s += 100) {
        rh_server *m = rh_cluster_master_of(&cl, s);
        if (m != src)
            dst = m;
    }
    CHECK(dst != NULL);

    lw_set_logger(count_failures, NULL, LW_LOG_WARN);
    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    release_in_split_slot(src, dst, 0);
    release_in_split_slot(src, dst, 1);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)),
                 0);
    usleep(300000);
    before = atomic_load(&sections);

    CHECK_EQ(rh_cluster_migrate_begin(&cl, src, dst, slot), 0);
    moved = move_keys(src, dst, slot);
    CHECK_EQ(rh_cluster_migrate_end(&cl, dst, slot), 0);
    CHECK_EQ(rh_cluster_wait_ok(&cl, 10000), 0);
    usleep(500000);
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    for (int k = 0; k < NKEYS; k++)
        total += counter[k];

    printf("slot %d moved :%d -> :%d (%d keys) while %d sections ran (%d "
           "before the move); overlaps %d, failures %d, fence regressions "
           "%d, connect failures %d, releases left to the TTL %d\n",
           slot, src->port, dst->port, moved, atomic_load(&sections), before,
           atomic_load(&overlaps), atomic_load(&failures),
           atomic_load(&fence_regressions), atomic_load(&connect_failures),
           atomic_load(&release_failures));
    CHECK(moved > 0);
    CHECK_EQ(rh_cluster_master_of(&cl, slot) == dst, 1);
    CHECK_EQ(atomic_load(&overlaps), 0);
    CHECK_EQ(atomic_load(&failures), 0);
    CHECK_EQ(atomic_load(&fence_regressions), 0);
    CHECK_EQ(atomic_load(&connect_failures), 0);
    CHECK_EQ(atomic_load(&release_failures), 0);
    CHECK_EQ(total, atomic_load(&sections));
    CHECK_MSG(atomic_load(&sections) > before, "no section after the move");
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}

/* Shared by the woven compile-and-run tests: tests/harness's assertions, and
 * a probe that tells whether a lock key is held, asked from another thread
 * (the calling thread would just re-enter its own lock). */
#ifndef GEN_CHECK_H
#define GEN_CHECK_H

#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct gen_probe {
    const char *key;
    int status;
};

static void *gen_probe_run(void *arg)
{
    struct gen_probe *p = arg;
    static const lw_lock_opts o = {
        .expire_ms = 2000, .wait_ms = 0, .max_renew = 0};
    lw_guard g;
    p->status = lw_lock(&g, p->key, strlen(p->key), &o);
    if (p->status == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

/* 1 when another client would find `key` (without the "lock:" prefix)
 * busy right now. */
static inline int key_busy(const char *key)
{
    struct gen_probe p = {key, 99};
    pthread_t t;
    if (pthread_create(&t, NULL, gen_probe_run, &p) != 0)
        return -1;
    pthread_join(t, NULL);
    return p.status == LW_ETIMEOUT;
}

/* Hold `key` from another thread until gen_release() (for on_fail tests). */
struct gen_holder {
    const char *key;
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 starting, 1 holding, 2 release asked, 3 failed */
};

static void *gen_hold_run(void *arg)
{
    struct gen_holder *h = arg;
    static const lw_lock_opts o = {
        .expire_ms = 5000, .wait_ms = 1000, .max_renew = -1};
    lw_guard g;
    int rc = lw_lock(&g, h->key, strlen(h->key), &o);
    pthread_mutex_lock(&h->mu);
    h->state = rc == LW_OK ? 1 : 3;
    pthread_cond_broadcast(&h->cv);
    while (h->state == 1)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

static inline int gen_hold(struct gen_holder *h, const char *key)
{
    h->key = key;
    h->state = 0;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->t, NULL, gen_hold_run, h) != 0)
        return -1;
    pthread_mutex_lock(&h->mu);
    while (h->state == 0)
        pthread_cond_wait(&h->cv, &h->mu);
    int ok = h->state == 1;
    pthread_mutex_unlock(&h->mu);
    return ok ? 0 : -1;
}

static inline void gen_release(struct gen_holder *h)
{
    pthread_mutex_lock(&h->mu);
    if (h->state == 1)
        h->state = 2;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->t, NULL);
}

/* A failed CHECK has exited already: shut down and say so. */
static inline int gen_done(const char *name)
{
    lw_shutdown();
    printf("%s: ok\n", name);
    return 0;
}

#endif

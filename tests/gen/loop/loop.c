/*
 * Woven `loop =` functions (loop_locked.c) on a libevent loop, against a
 * redis-server of their own:
 *
 *   in_flight  32 calls of section() on one key, made before the loop
 *              runs, each returning at once: their bodies run on the loop
 *              one at a time, each under the lock, with the arguments of
 *              its call although the caller's frame is gone, and the lock
 *              is released after each; lw_fence() there is the lease's,
 *              and a blocking function of the same key is re-entry.  One
 *              body takes its lease (lw_take_lease()) and releases it from
 *              a timer, 200 ms later: no other body runs until then.
 *   timeout    on_fail on the loop when the wait runs out (LW_ETIMEOUT)
 *   null_loop  on_fail at the call when the loop is NULL (LW_EINVAL)
 *   skip       skip_if at the call, and again with the lock held
 *   freed      on_fail for a request lw_loop_free() ends (LW_ECANCELED)
 */
#include "loop.h"
#include "util.h"

#include <event2/event.h>
#include <lockweave/event.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

lw_loop *the_loop;

static rh_server srv;
static struct event_base *base;

/* Run the loop until cond() or timeout_ms; 0 when cond() held. */
static int run_until(int (*cond)(void), int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;

    while (!cond()) {
        if (now_ms() > end)
            return -1;
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
    return 0;
}

/* in_flight -------------------------------------------------------------- */

#define CALLS 32
#define TAKER 7 /* the body that takes its lease */

static const char key[] = "k"; /* what the pointer argument points to */

static struct {
    int ran[CALLS];
    int bodies;
    uint64_t last_fence;
    lw_lease *taken; /* TAKER's lease, until the timer releases it */
    struct event *timer;
    int released; /* the taken lease's release: its status, + 1 */
} sec;

static void taken_released(int status, void *ud)
{
    (void)ud;
    sec.released = status + 1;
}

static void release_taken(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    /* The body returned long ago; the key stayed locked for its lease. */
    CHECK_EQ(lock_exists(&srv, "loop:k"), 1);
    CHECK_EQ(lw_lease_held(sec.taken), 1);
    CHECK_RC(lw_release_async(sec.taken, taken_released, NULL), LW_OK);
    sec.taken = NULL;
}

void section_body(const char *k, int seq, const struct payload *p)
{
    char want[sizeof p->tag];
    struct timeval later = {0, 200 * 1000};

    CHECK(seq >= 0 && seq < CALLS && !sec.ran[seq]);
    sec.ran[seq] = 1;
    sec.bodies++;
    /* No other body runs while the taken lease is held. */
    CHECK(sec.taken == NULL);
    /* The arguments of its call: the pointer as given, the rest copied. */
    CHECK(k == key);
    CHECK_EQ(p->seq, seq);
    snprintf(want, sizeof want, "call %d", seq);
    CHECK_STR(p->tag, want);
    /* Under the lock: a fence of its own, which a blocking function of the
     * same key, re-entering it, sees too. */
    CHECK_RC(lw_last_error(), LW_OK);
    CHECK_EQ(lock_exists(&srv, "loop:k"), 1);
    CHECK_EQ(lw_still_held(), 1);
    uint64_t fence = lw_fence();
    CHECK(fence > sec.last_fence);
    sec.last_fence = fence;
    CHECK_EQ(fence_again(k), fence);
    CHECK_RC(lw_last_error(), LW_OK);
    if (seq != TAKER)
        return;
    sec.taken = lw_take_lease();
    CHECK(sec.taken != NULL);
    CHECK(lw_take_lease() == NULL);
    CHECK_EQ(lw_lease_fence(sec.taken), fence);
    CHECK_EQ(event_add(sec.timer, &later), 0);
}

void section_failed(int seq, int status)
{
    CHECK_MSG(0, "section(%d) failed: %s", seq, lw_strerror(status));
}

/* A frame of its own for each call, gone by the time the body runs. */
static __attribute__((noinline)) void call_section(int seq)
{
    struct payload p;

    memset(&p, 0, sizeof p);
    p.seq = seq;
    snprintf(p.tag, sizeof p.tag, "call %d", seq);
    section(key, seq, p);
    CHECK_RC(lw_last_error(), LW_OK); /* asked for, not run */
}

/* Overwrite the stack the calls used. */
static __attribute__((noinline)) void scribble(void)
{
    volatile char junk[8192];

    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)0x5a;
}

static int sections_done(void)
{
    return sec.bodies == CALLS && sec.released != 0 &&
           lock_exists(&srv, "loop:k") == 0;
}

static void in_flight(void)
{
    sec.timer = evtimer_new(base, release_taken, NULL);
    CHECK(sec.timer != NULL);
    for (int i = 0; i < CALLS; i++)
        call_section(i);
    scribble();
    CHECK_EQ(sec.bodies, 0); /* every call returned at once */
    CHECK_EQ(run_until(sections_done, 30000), 0);
    CHECK_RC(sec.released - 1, LW_OK);
    for (int i = 0; i < CALLS; i++)
        CHECK_EQ(sec.ran[i], 1);
    event_free(sec.timer);
    printf("in_flight: ok\n");
}

/* timeout, null_loop, freed ----------------------------------------------- */

static struct {
    int runs, fails, status;
} bz, ol;

void busy_ran(int id)
{
    (void)id;
    bz.runs++;
}

void busy_failed(int id, int status)
{
    (void)id;
    bz.fails++;
    bz.status = status;
}

void on_loop_ran(int id)
{
    (void)id;
    ol.runs++;
}

void on_loop_failed(int id, int status)
{
    (void)id;
    ol.fails++;
    ol.status = status;
}

static int busy_over(void)
{
    return bz.fails + bz.runs > 0;
}

static void timeout(void)
{
    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_lease *held;

    CHECK_RC(lw_acquire("busy:1", 6, &o, &held), LW_OK);
    busy(1);
    CHECK_RC(lw_last_error(), LW_OK);
    CHECK_EQ(bz.fails, 0); /* not at the call: on the loop, later */
    CHECK_EQ(run_until(busy_over, 10000), 0);
    CHECK_EQ(bz.runs, 0);
    CHECK_EQ(bz.fails, 1);
    CHECK_RC(bz.status, LW_ETIMEOUT);
    CHECK_RC(lw_release(held), LW_OK);
    printf("timeout: ok\n");
}

static int on_loop_over(void)
{
    return ol.runs > 0 && lock_exists(&srv, "on:4") == 0;
}

static void null_loop(void)
{
    on_loop(NULL, 3);
    /* At the call, before it returned. */
    CHECK_EQ(ol.fails, 1);
    CHECK_RC(ol.status, LW_EINVAL);
    CHECK_RC(lw_last_error(), LW_EINVAL);
    on_loop(the_loop, 4);
    CHECK_RC(lw_last_error(), LW_OK);
    CHECK_EQ(run_until(on_loop_over, 10000), 0);
    CHECK_EQ(ol.runs, 1);
    CHECK_EQ(ol.fails, 1);
    printf("null_loop: ok\n");
}

static void freed(void)
{
    lw_lock_opts o = lock_opts(10000, 0, -1);
    lw_lease *held;

    bz.fails = bz.runs = 0;
    CHECK_RC(lw_acquire("busy:2", 6, &o, &held), LW_OK);
    busy(2);
    CHECK_RC(lw_last_error(), LW_OK);
    lw_loop_free(the_loop); /* ends the request: on_fail, before it returns */
    the_loop = NULL;
    CHECK_EQ(bz.runs, 0);
    CHECK_EQ(bz.fails, 1);
    CHECK_RC(bz.status, LW_ECANCELED);
    CHECK_RC(lw_release(held), LW_OK);
    printf("freed: ok\n");
}

/* skip -------------------------------------------------------------------- */

static struct {
    int done[8];
    int checks; /* skip_if evaluations */
} sk;

int done_already(int id)
{
    sk.checks++;
    return sk.done[id];
}

void once_ran(int id)
{
    CHECK_EQ(sk.done[id], 0);
    sk.done[id] = 1;
}

static int skip_over(void)
{
    /* Three at the calls; two on the loop, the second true. */
    return sk.checks == 5 && lock_exists(&srv, "once:5") == 0;
}

static void skip(void)
{
    sk.done[6] = 1;
    once(6); /* skipped at the call: nothing asked for */
    CHECK_RC(lw_last_error(), LW_OK);
    once(5);
    once(5); /* both asked for: the second finds it done once locked */
    CHECK_EQ(sk.checks, 3);
    CHECK_EQ(run_until(skip_over, 10000), 0);
    CHECK_EQ(sk.done[5], 1);
    CHECK_EQ(lock_exists(&srv, "once:6"), 0);
    printf("skip: ok\n");
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    base = event_base_new();
    CHECK(base != NULL);
    the_loop = lw_loop_event(base);
    CHECK(the_loop != NULL);
    in_flight();
    timeout();
    null_loop();
    skip();
    freed();
    event_base_free(base);
    lw_shutdown();
    CHECK_EQ(rh_stop(&srv), 0);
    printf("loop: ok\n");
    return 0;
}

/*
 * The watchdog's schedule (core/duequeue.c) against a plain list: random
 * adds and removals of leases with a few lengths (each length's FIFO),
 * leases out of renewals and out-of-order due times (the heap), more
 * lengths than FIFOs; after every step the earliest lease must be the one a
 * scan of the list finds, and draining must yield every lease once, in due
 * order.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/duequeue.h"

#define N 600

static struct lw_hold leases[N];
static int queued[N];

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* The smallest due time among queued leases, or -1. */
static int64_t reference_min(void)
{
    int64_t best = -1;

    for (int i = 0; i < N; i++)
        if (queued[i] && (best < 0 || leases[i].due_ms < best))
            best = leases[i].due_ms;
    return best;
}

static void check_earliest(const struct lw_duequeue *q)
{
    struct lw_hold *e = lw__dq_earliest(q);
    int64_t want = reference_min();

    if (want < 0) {
        CHECK(e == NULL);
        return;
    }
    CHECK(e != NULL);
    CHECK(queued[e - leases]);
    CHECK_EQ(e->due_ms, want);
}

static void add(struct lw_duequeue *q, int i, int64_t now, int lengths)
{
    struct lw_hold *l = &leases[i];

    memset(l, 0, sizeof *l);
    l->heap_idx = l->fifo = -1;
    l->expire_ms = 1000u * (1 + next_rand() % (unsigned)lengths);
    l->renews_left = next_rand() % 5 == 0 ? 0 : -1;
    /* Mostly in order for its length (a third of it from now), sometimes
     * earlier than its FIFO's tail: those must go to the heap. */
    l->due_ms = now + l->expire_ms / 3 - (next_rand() % 4 == 0 ? 400 : 0);
    if (l->renews_left == 0)
        l->due_ms = now + next_rand() % 5000;
    CHECK_EQ(lw__dq_add(q, l), LW_OK);
    queued[i] = 1;
}

static void drain_in_order(struct lw_duequeue *q)
{
    int64_t last = -1;
    int left = 0;
    struct lw_hold *l;

    for (int i = 0; i < N; i++)
        left += queued[i];
    while ((l = lw__dq_earliest(q)) != NULL) {
        CHECK(queued[l - leases]);
        CHECK(l->due_ms >= last);
        last = l->due_ms;
        lw__dq_remove(q, l);
        CHECK(l->heap_idx == -1 && l->fifo == -1);
        queued[l - leases] = 0;
        left--;
    }
    CHECK_EQ(left, 0);
}

static void count(struct lw_hold *l, void *arg)
{
    queued[l - leases] = 0;
    ++*(int *)arg;
}

static void run(int lengths)
{
    struct lw_duequeue q = {0};
    int64_t now = 1000000;
    int cleared = 0, expect = 0;

    memset(queued, 0, sizeof queued);
    for (int step = 0; step < 20000; step++) {
        int i = (int)(next_rand() % N);
        now += next_rand() % 3;
        if (queued[i]) {
            lw__dq_remove(&q, &leases[i]);
            queued[i] = 0;
            lw__dq_remove(&q, &leases[i]); /* twice: nothing */
        } else {
            add(&q, i, now, lengths);
        }
        check_earliest(&q);
    }
    drain_in_order(&q);
    check_earliest(&q);

    for (int i = 0; i < N; i += 2)
        add(&q, i, now, lengths);
    for (int i = 0; i < N; i++)
        expect += queued[i];
    lw__dq_clear(&q, count, &cleared);
    CHECK_EQ(cleared, expect);
    CHECK(lw__dq_earliest(&q) == NULL);
    for (int i = 0; i < N; i += 2)
        CHECK(leases[i].heap_idx == -1 && leases[i].fifo == -1);
    lw__dq_free(&q);
}

int main(void)
{
    run(3);               /* a few lengths: FIFOs and the heap */
    run(LW_DQ_FIFOS + 9); /* more lengths than FIFOs */
    run(1);
    printf("duequeue: ok\n");
    return 0;
}

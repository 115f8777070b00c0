/* The watchdog's schedule (see duequeue.h). */
#include "core/duequeue.h"

#include <lockweave.h>
#include <stdlib.h>

static void heap_swap(struct lw_duequeue *q, int a, int b)
{
    struct lw_dq_entry t = q->heap[a];

    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a].lease->heap_idx = a;
    q->heap[b].lease->heap_idx = b;
}

static void heap_up(struct lw_duequeue *q, int i)
{
    while (i > 0 && q->heap[(i - 1) / 2].due_ms > q->heap[i].due_ms) {
        heap_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct lw_duequeue *q, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && q->heap[l].due_ms < q->heap[m].due_ms)
            m = l;
        if (r < q->n && q->heap[r].due_ms < q->heap[m].due_ms)
            m = r;
        if (m == i)
            return;
        heap_swap(q, i, m);
        i = m;
    }
}

static int heap_push(struct lw_duequeue *q, struct lw_hold *l)
{
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 64;
        struct lw_dq_entry *h = realloc(q->heap, (size_t)cap * sizeof *h);
        if (h == NULL)
            return LW_ENOMEM;
        q->heap = h;
        q->cap = cap;
    }
    q->heap[q->n].due_ms = l->due_ms;
    q->heap[q->n].lease = l;
    l->heap_idx = q->n++;
    heap_up(q, l->heap_idx);
    return LW_OK;
}

static void heap_remove(struct lw_duequeue *q, struct lw_hold *l)
{
    int i = l->heap_idx;

    l->heap_idx = -1;
    if (--q->n == i)
        return;
    q->heap[i] = q->heap[q->n];
    q->heap[i].lease->heap_idx = i;
    heap_up(q, i);
    heap_down(q, q->heap[i].lease->heap_idx);
}

/* The FIFO for leases of l's length, created on first use; NULL when all
 * LW_DQ_FIFOS are taken by other lengths. */
static struct lw_dq_fifo *fifo_for(struct lw_duequeue *q,
                                   const struct lw_hold *l)
{
    for (int i = 0; i < q->nfifos; i++)
        if (q->fifos[i].expire_ms == l->expire_ms)
            return &q->fifos[i];
    if (q->nfifos == LW_DQ_FIFOS)
        return NULL;
    q->fifos[q->nfifos].expire_ms = l->expire_ms;
    q->fifos[q->nfifos].head = q->fifos[q->nfifos].tail = NULL;
    return &q->fifos[q->nfifos++];
}

int lw__dq_add(struct lw_duequeue *q, struct lw_hold *l)
{
    struct lw_dq_fifo *f = l->renews_left != 0 ? fifo_for(q, l) : NULL;

    l->fifo = -1;
    l->heap_idx = -1;
    if (f == NULL || (f->tail != NULL && f->tail->due_ms > l->due_ms))
        return heap_push(q, l); /* out of order for its FIFO */
    l->fifo = (int)(f - q->fifos);
    l->prev = f->tail;
    l->next = NULL;
    if (f->tail)
        f->tail->next = l;
    else
        f->head = l;
    f->tail = l;
    return LW_OK;
}

void lw__dq_remove(struct lw_duequeue *q, struct lw_hold *l)
{
    struct lw_dq_fifo *f;

    if (l->heap_idx >= 0) {
        heap_remove(q, l);
        return;
    }
    if (l->fifo < 0)
        return;
    f = &q->fifos[l->fifo];
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

struct lw_hold *lw__dq_earliest(const struct lw_duequeue *q)
{
    struct lw_hold *best = q->n ? q->heap[0].lease : NULL;

    for (int i = 0; i < q->nfifos; i++) {
        struct lw_hold *h = q->fifos[i].head;
        if (h != NULL && (best == NULL || h->due_ms < best->due_ms))
            best = h;
    }
    return best;
}

void lw__dq_clear(struct lw_duequeue *q, void (*fn)(struct lw_hold *, void *),
                  void *arg)
{
    for (int i = 0; i < q->n; i++) {
        q->heap[i].lease->heap_idx = -1;
        if (fn)
            fn(q->heap[i].lease, arg);
    }
    q->n = 0;
    for (int i = 0; i < q->nfifos; i++) {
        struct lw_hold *l = q->fifos[i].head, *next;
        for (; l != NULL; l = next) {
            next = l->next;
            l->fifo = -1;
            if (fn)
                fn(l, arg);
        }
        q->fifos[i].head = q->fifos[i].tail = NULL;
    }
}

void lw__dq_free(struct lw_duequeue *q)
{
    free(q->heap);
    q->heap = NULL;
    q->n = q->cap = 0;
}

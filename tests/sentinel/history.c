/* Sections recorded and judged (history.h). */
#include "history.h"

#include <lockweave.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "check.h"
#include "util.h"

struct history *history_new(int cap)
{
    struct history *h =
        mmap(NULL, sizeof *h + (size_t)cap * sizeof h->s[0],
             PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    CHECK(h != MAP_FAILED);
    h->cap = cap;
    return h;
}

void history_add(struct history *h, const struct section *s)
{
    int i = atomic_fetch_add(&h->n, 1);

    if (i < h->cap)
        h->s[i] = *s;
}

struct since {
    struct history *h;
    int64_t us;
    int want;
};

static int entered_since(void *arg)
{
    const struct since *w = arg;
    int n = atomic_load(&w->h->n), k = 0;

    /* A slot counted in n but not written yet reads as zeros: not after. */
    for (int i = 0; i < n && i < w->h->cap; i++)
        k += w->h->s[i].in_us > w->us;
    return k >= w->want;
}

int history_wait(struct history *h, int64_t since_us, int want, int timeout_ms)
{
    struct since w = {h, since_us, want};

    return wait_until(entered_since, &w, timeout_ms) >= 0;
}

static int by_entry(const void *a, const void *b)
{
    const struct section *x = a, *y = b;

    if (x->key != y->key)
        return x->key - y->key;
    return x->in_us < y->in_us ? -1 : x->in_us > y->in_us;
}

void history_judge(struct history *h, int64_t t0_us, int64_t after_us,
                   struct verdict *v)
{
    int n = atomic_load(&h->n);

    CHECK_MSG(n <= h->cap, "%d sections, room for %d", n, h->cap);
    *v = (struct verdict){0};
    qsort(h->s, (size_t)n, sizeof h->s[0], by_entry);
    for (int i = 0; i < n; i++) {
        const struct section *a = &h->s[i];
        v->ok += a->rc == LW_OK;
        v->lost += a->rc == LW_ELOST;
        v->after += a->in_us > after_us;
        /* Every later section of the key that entered before a left. */
        for (int j = i + 1;
             j < n && h->s[j].key == a->key && h->s[j].in_us < a->out_us; j++)
            if (a->rc == LW_OK && h->s[j].rc == LW_OK) {
                fprintf(stderr,
                        "key %d: LW_OK sections overlap: [%+lld, %+lld] us "
                        "fence %llu and [%+lld, ...] fence %llu\n",
                        a->key, (long long)(a->in_us - t0_us),
                        (long long)(a->out_us - t0_us),
                        (unsigned long long)a->fence,
                        (long long)(h->s[j].in_us - t0_us),
                        (unsigned long long)h->s[j].fence);
                v->overlaps++;
            }
    }
    /* Fences are minted from the server's clock as well as the counter:
     * they rise across a failover too, reported losses or not. */
    for (int i = 0; i < n; i++) {
        const struct section *a = &h->s[i];
        int j;
        if (a->rc != LW_OK)
            continue;
        for (j = i + 1; j < n && h->s[j].key == a->key && h->s[j].rc != LW_OK;
             j++)
            ;
        if (j < n && h->s[j].key == a->key && h->s[j].fence <= a->fence) {
            fprintf(stderr, "key %d: fence %llu then %llu (at %+lld us)\n",
                    a->key, (unsigned long long)a->fence,
                    (unsigned long long)h->s[j].fence,
                    (long long)(h->s[j].in_us - t0_us));
            v->regressions++;
        }
    }
    printf("sections: %d LW_OK, %d LW_ELOST, %d entered after the "
           "failover; LW_OK overlapping %d, fence regressions %d\n",
           v->ok, v->lost, v->after, v->overlaps, v->regressions);
}

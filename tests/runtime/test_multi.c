/*
 * Several keys as one lock (lw_guard_enter_all), on one server and under
 * Redlock:
 *   - transfers between accounts from 4 processes x 2 threads, each taking
 *     its two account keys in random order: money is conserved, no account
 *     is ever in two sections at once, and no transfer times out (a
 *     deadlock would: the keys are taken in one global order);
 *   - all or none: with one key held elsewhere, the other is given back;
 *   - a key given twice is locked once; each key's fence is reachable.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

#define ACCOUNTS  5
#define PROCS     4
#define THREADS   2
#define TRANSFERS 40

struct bank {
    long balance[ACCOUNTS];
    atomic_int inside[ACCOUNTS]; /* sections in each account right now */
    atomic_int overlaps, failures;
};

static struct bank *bank;
static const char *url;

static int key_of(int acct, char *buf)
{
    return sprintf(buf, "acct:{%d}", acct);
}

static void *teller(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;

    for (int i = 0; i < TRANSFERS; i++) {
        int from = (int)(rand_r(&seed) % ACCOUNTS);
        int to = (int)(rand_r(&seed) % ACCOUNTS); /* sometimes from == to */
        lw_lock_opts o = lock_opts(10000, 20000, -1);
        char kf[32], kt[32];
        lw_guard gf, gt, *g[2] = {&gt, &gf}; /* either order */
        if (rand_r(&seed) & 1) {
            g[0] = &gf;
            g[1] = &gt;
        }
        lw_guard_init(&gf, &o);
        lw_guard_key_bytes(&gf, kf, (size_t)key_of(from, kf));
        lw_guard_init(&gt, &o);
        lw_guard_key_bytes(&gt, kt, (size_t)key_of(to, kt));
        int rc = lw_guard_enter_all(g, 2);
        if (rc != LW_OK) {
            fprintf(stderr, "transfer %d -> %d: %s\n", from, to,
                    lw_strerror(rc));
            atomic_fetch_add(&bank->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&bank->inside[from], 1) != 0)
            atomic_fetch_add(&bank->overlaps, 1);
        if (to != from && atomic_fetch_add(&bank->inside[to], 1) != 0)
            atomic_fetch_add(&bank->overlaps, 1);
        long a = bank->balance[from], b = bank->balance[to];
        usleep(200); /* read, think, write: a race would lose money */
        if (to != from) {
            bank->balance[from] = a - 7;
            bank->balance[to] = b + 7;
        }
        if (to != from)
            atomic_fetch_sub(&bank->inside[to], 1);
        atomic_fetch_sub(&bank->inside[from], 1);
        if (lw_guard_leave_all(g, 2) != LW_OK)
            atomic_fetch_add(&bank->failures, 1);
    }
    return NULL;
}

static void run_tellers(int proc)
{
    pthread_t t[THREADS];

    use_url(url, 1000, 2000);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, teller,
                             (void *)(uintptr_t)(proc * 100 + i + 1)) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
}

static void transfers(void)
{
    long total = 0;

    memset(bank, 0, sizeof *bank);
    for (int i = 0; i < ACCOUNTS; i++)
        bank->balance[i] = 1000;
    in_processes(PROCS, run_tellers);
    for (int i = 0; i < ACCOUNTS; i++)
        total += bank->balance[i];
    printf("%s: %d transfers, total %ld, overlaps %d, failures %d\n", url,
           PROCS * THREADS * TRANSFERS, total, atomic_load(&bank->overlaps),
           atomic_load(&bank->failures));
    CHECK_EQ(atomic_load(&bank->failures), 0);
    CHECK_EQ(atomic_load(&bank->overlaps), 0);
    CHECK_EQ(total, 1000L * ACCOUNTS);
}

static pthread_barrier_t held, done;

static void *hold_b(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "acct:b", 10000, 0), LW_OK);
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&done);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

/* "acct:a" is free and taken first (sorted), "acct:b" is held by another
 * thread: after the wait, a is given back, nothing is held. */
static void all_or_none(rh_server *s, int nservers)
{
    lw_lock_opts o = lock_opts(10000, 300, -1);
    lw_guard ga, gb, *g[2] = {&gb, &ga};
    pthread_t t;

    pthread_barrier_init(&held, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    CHECK(pthread_create(&t, NULL, hold_b, NULL) == 0);
    pthread_barrier_wait(&held);
    lw_guard_init(&ga, &o);
    lw_guard_key_str(&ga, "acct:a");
    lw_guard_init(&gb, &o);
    lw_guard_key_str(&gb, "acct:b");
    CHECK_RC(lw_guard_enter_all(g, 2), LW_ETIMEOUT);
    CHECK_RC(lw_last_error(), LW_ETIMEOUT);
    CHECK(g[0] == &ga && g[1] == &gb); /* sorted: a was taken first */
    CHECK_EQ(lw_still_held(), 0);
    for (int i = 0; i < nservers; i++) {
        CHECK_EQ(lock_exists(&s[i], "acct:a"), 0);
        CHECK_EQ(lock_exists(&s[i], "acct:b"), 1);
    }
    pthread_barrier_wait(&done);
    CHECK(pthread_join(t, NULL) == 0);
    pthread_barrier_destroy(&held);
    pthread_barrier_destroy(&done);
}

/* The same key twice is one lock; two keys have a fence each. */
static void same_key_and_fences(rh_server *s, int redlock)
{
    lw_lock_opts o = lock_opts(10000, 1000, -1);
    lw_guard g1, g2, g3, *g[3] = {&g1, &g2, &g3};

    lw_guard_init(&g1, &o);
    lw_guard_key_str(&g1, "acct:z");
    lw_guard_init(&g2, &o);
    lw_guard_key_str(&g2, "acct:y");
    lw_guard_init(&g3, &o);
    lw_guard_key_str(&g3, "acct:z");
    CHECK_RC(lw_guard_enter_all(g, 3), LW_OK);
    CHECK_EQ(lock_exists(s, "acct:y"), 1);
    CHECK_EQ(lock_exists(s, "acct:z"), 1);
    uint64_t fy = lw_fence_of("acct:y", 6), fz = lw_fence_of("acct:z", 6);
    printf("fences: acct:y %llu, acct:z %llu\n", (unsigned long long)fy,
           (unsigned long long)fz);
    if (!redlock) { /* Redlock has no fences */
        CHECK(fy != 0 && fz != 0 && fy != fz);
        CHECK_EQ(lw_fence(), fz); /* the innermost: z, taken last */
    }
    CHECK_EQ(lw_fence_of("acct:x", 6), 0);
    CHECK_RC(lw_guard_leave_all(g, 3), LW_OK);
    CHECK_EQ(lock_exists(s, "acct:y"), 0);
    CHECK_EQ(lock_exists(s, "acct:z"), 0);
    CHECK_EQ(lw_fence_of("acct:y", 6), 0);
}

int main(void)
{
    rh_server s[3];
    char list[256];
    int n = 0;

    bank = mmap(NULL, sizeof *bank, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(bank != MAP_FAILED);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(rh_start(&s[i], NULL), 0);

    url = s[0].url;
    transfers();
    use_url(url, 1000, 2000);
    all_or_none(s, 1);
    same_key_and_fences(&s[0], 0);

    for (int i = 0; i < 3; i++)
        n += snprintf(list + n, sizeof list - (size_t)n, "%s%s", i ? "," : "",
                      s[i].url);
    url = list;
    transfers();
    use_url(url, 1000, 2000);
    all_or_none(s, 3);
    same_key_and_fences(&s[0], 1);

    lw_shutdown();
    for (int i = 0; i < 3; i++)
        rh_stop(&s[i]);
    printf("multi: ok\n");
    return 0;
}

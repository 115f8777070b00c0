/* What the Sentinel failover tests record of each section, from any of
 * their processes, and how they judge it: no two LW_OK sections of a key
 * overlap, and fences rise from one LW_OK section of a key to the next,
 * across a failover too, whatever was lost between them (fences are
 * minted from the server's clock as well as the counter: DESIGN.md,
 * "Fences across failover"). */
#ifndef LW_SENTINEL_HISTORY_H
#define LW_SENTINEL_HISTORY_H

#include <stdatomic.h>
#include <stdint.h>

/* One section as it ran. */
struct section {
    int key, rc; /* which of the test's keys; what leaving it returned */
    uint64_t fence;
    int64_t in_us, out_us; /* entered (lock held), left (body done), on
                              the system-wide monotonic clock */
};

struct history {
    atomic_int n;
    int cap;
    struct section s[]; /* cap of them */
};

/* A history of cap sections in memory shared with the children forked
 * after it (MAP_SHARED), zeroed; CHECKs it could be had. */
struct history *history_new(int cap);

/* Add one (any process, any thread); past cap, the judge fails. */
void history_add(struct history *h, const struct section *s);

/* Wait up to timeout_ms until at least want sections added to h entered
 * after since_us (any process): what a test waits on instead of sleeping
 * for "long enough".  1 when they did, 0 on timeout. */
int history_wait(struct history *h, int64_t since_us, int want, int timeout_ms);

/* What judging a history found. */
struct verdict {
    int ok, lost;    /* sections that ended LW_OK, LW_ELOST */
    int after;       /* entered after after_us */
    int overlaps;    /* pairs of LW_OK sections of a key that overlap */
    int regressions; /* LW_OK sections whose fence is not above the
                        previous LW_OK one's of the key */
};

/* Sort h by key and entry, count (printing each bad pair, times relative
 * to t0_us) into *v; CHECKs h did not overflow. */
void history_judge(struct history *h, int64_t t0_us, int64_t after_us,
                   struct verdict *v);

#endif

/*
 * The checker's rules on made-up histories: each rule of each lock kind
 * must fire on a history that breaks it, and stay quiet on one that only
 * comes close (readers sharing a key, a semaphore's N holders, a lower
 * fence excused by LW_ELOST).  The self-test cases show the rules fire on a
 * real unguarded workload; this shows each one, the order rules included,
 * without Redis and in milliseconds.
 */
#include <lockweave.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fc_check.h"
#include "fw_shared.h"
#include "redis_harness.h"

enum { EXCL, ORDER, STALE, STORE, UNFIN };
static const char *const rule[FC_NRULES] = {"exclusion", "order", "stale",
                                            "store", "unfinished"};

struct rec {
    char role;
    unsigned long long fence;
    long long start, end; /* ms, made ns */
    int rc;               /* lw_last_error() */
    int rd;               /* FW_ACCEPTED / FW_REJECTED */
};

static char base[256];
static int failures;

/* Write one history (one key, one thread per section) as a run directory
 * and check it: the counts must be exactly want[]. */
static void history(const char *name, int kind, const struct rec *r, int n,
                    const long long want[FC_NRULES])
{
    char dir[512], path[600];
    long long got[FC_NRULES];
    FILE *f;

    snprintf(dir, sizeof dir, "%s/%s", base, name);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/driver.log", dir);
    if ((f = fopen(path, "w")) == NULL) {
        perror(path);
        exit(1);
    }
    fprintf(f,
            "CASE %s expect=0 faults=0 procs=1 threads=%d keys=1 seconds=4 "
            "kind=%s\n",
            name, n, fw_kind_name(kind));
    fclose(f);
    for (int i = 0; i < n; i++) {
        unsigned long long sid = (unsigned long long)(100 + i) << 32 | 1;
        long long t0 = r[i].start * 1000000, t1 = r[i].end * 1000000;
        /* Writers are not made to write: no store log to keep in step. */
        int wr = FW_SKIPPED;
        snprintf(path, sizeof path, "%s/w%d.0.log", dir, 100 + i);
        if ((f = fopen(path, "w")) == NULL) {
            perror(path);
            exit(1);
        }
        fprintf(f, "B %llu 0 %llu %lld %c\n", sid, r[i].fence, t0, r[i].role);
        fprintf(f, "e %llu %lld %d %d\n", sid, t1, r[i].rd, wr);
        fprintf(f, "E %llu %lld %d 1 %d %d\n", sid, t1, r[i].rc, r[i].rd, wr);
        fclose(f);
    }
    fc_check_counts(dir, stdout, NULL, got);
    for (int k = 0; k < FC_NRULES; k++)
        if (got[k] != want[k]) {
            printf("FAIL %s: %s %lld, want %lld\n", name, rule[k], got[k],
                   want[k]);
            failures++;
        }
    printf("-- %s: checked\n", name);
}

#define W(f, s, e)                                                             \
    {                                                                          \
        FW_ROLE_WRITER, f, s, e, LW_OK, FW_ACCEPTED                            \
    }
#define R(f, s, e)                                                             \
    {                                                                          \
        FW_ROLE_READER, f, s, e, LW_OK, FW_ACCEPTED                            \
    }
#define P(f, s, e)                                                             \
    {                                                                          \
        FW_ROLE_PERMIT, f, s, e, LW_OK, FW_SKIPPED                             \
    }
#define X(f, s, e)                                                             \
    {                                                                          \
        FW_ROLE_MUTEX, f, s, e, LW_OK, FW_ACCEPTED                             \
    }
#define CASE(name, kind, want, ...)                                            \
    do {                                                                       \
        const struct rec r_[] = {__VA_ARGS__};                                 \
        const long long w_[FC_NRULES] = want;                                  \
        history(name, kind, r_, (int)(sizeof r_ / sizeof r_[0]), w_);          \
    } while (0)
#define NONE                                                                   \
    {                                                                          \
        0, 0, 0, 0, 0                                                          \
    }
#define ONE(rule)                                                              \
    {                                                                          \
        [rule] = 1                                                             \
    }

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    struct rec lost_w = W(1, 100, 300), lost_p = P(2, 150, 450);
    struct rec stale_r = R(5, 100, 200);

    lost_w.rc = LW_ELOST;
    lost_p.rc = LW_ELOST;
    stale_r.rd = FW_REJECTED;
    snprintf(base, sizeof base, "%s/lw-fc-rules-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 1;
    }

    /* mutex: the rules as they always were. */
    CASE("mutex-overlap", FW_KIND_MUTEX, ONE(EXCL), X(1, 100, 300),
         X(2, 200, 400));
    CASE("mutex-order", FW_KIND_MUTEX, ONE(ORDER), X(2, 100, 200),
         X(1, 300, 400));
    CASE("mutex-clean", FW_KIND_MUTEX, NONE, X(1, 100, 200), X(2, 200, 300));

    /* read/write */
    CASE("rw-readers-share", FW_KIND_RW, NONE, R(1, 100, 300), R(2, 200, 400),
         R(3, 250, 260), W(4, 500, 600), R(5, 700, 800));
    CASE("rw-writer-reader", FW_KIND_RW, ONE(EXCL), W(1, 100, 300),
         R(2, 200, 400));
    CASE("rw-reader-writer", FW_KIND_RW, ONE(EXCL), R(1, 100, 300),
         W(2, 200, 400));
    CASE("rw-writer-writer", FW_KIND_RW, ONE(EXCL), W(1, 100, 300),
         W(2, 200, 400));
    /* The stale side (the lower fence) told: excused. */
    CASE("rw-overlap-told", FW_KIND_RW, NONE, lost_w, R(2, 200, 400));
    CASE("rw-order-writer-then-reader", FW_KIND_RW, ONE(ORDER), W(10, 100, 200),
         R(5, 300, 400));
    CASE("rw-order-reader-then-writer", FW_KIND_RW, ONE(ORDER), R(20, 100, 200),
         W(15, 300, 400));
    CASE("rw-order-writers", FW_KIND_RW, ONE(ORDER), W(20, 100, 200),
         W(15, 300, 400));
    /* Readers that do not overlap take fences in any order. */
    CASE("rw-order-readers", FW_KIND_RW, NONE, R(20, 100, 200),
         R(15, 300, 400));
    CASE("rw-shared-fence", FW_KIND_RW, ONE(ORDER), R(7, 100, 300),
         R(7, 200, 400));
    CASE("rw-stale-read", FW_KIND_RW, ONE(STALE), stale_r);

    /* semaphore of 2 */
    CASE("sem-two", FW_KIND_SEM, NONE, P(1, 100, 400), P(2, 150, 450),
         P(3, 400, 500), P(4, 450, 600));
    CASE("sem-three", FW_KIND_SEM, ONE(EXCL), P(1, 100, 400), P(2, 150, 450),
         P(3, 200, 500));
    CASE("sem-three-one-told", FW_KIND_SEM, NONE, P(1, 100, 400), lost_p,
         P(3, 200, 500));
    CASE("sem-shared-fence", FW_KIND_SEM, ONE(ORDER), P(4, 100, 200),
         P(4, 300, 400));
    /* Holders take fences in any order: no order rule beyond that. */
    CASE("sem-any-order", FW_KIND_SEM, NONE, P(9, 100, 200), P(3, 300, 400));

    if (failures == 0) {
        printf("all checker rules fire where they must, and only there\n");
        rh_remove_tree(base);
    } else {
        printf("histories kept in %s\n", base);
    }
    return failures ? 1 : 0;
}

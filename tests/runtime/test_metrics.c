/* Metrics per annotation site (lockweave_generate() weaves this file): two
 * annotated functions and two hand-written guards (one with a site named
 * by LW_SITE(), one without) take known numbers of locks, a contended one,
 * a timeout, a lost one (its key deleted behind its back) and renewals.
 * Here: every site is listed at zero before any lock, no expanded key
 * appears, a buffer too small gets the whole length and a NUL, the key
 * template's " and \ are escaped.  Then the text goes to argv[1] and the
 * process's lw_stats to argv[2], for check_metrics.py to parse with the
 * Prometheus client's own parser and compare, site by site. */
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static rh_server srv;

/* deduct()'s body: how to behave on its next calls. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int park;      /* the next body waits for `go` */
static int in_body;   /* a parked body has started */
static int go;        /* let the parked body return */
static int delete_it; /* the next body deletes its own key */

enum { DEDUCT_LINE = __LINE__ + 1 };
REDIS_LOCK("mt:{id}", 10s, 5s)
int deduct(int id, int qty)
{
    char key[32];

    pthread_mutex_lock(&mu);
    if (park) {
        park = 0;
        in_body = 1;
        pthread_cond_broadcast(&cv);
        while (!go)
            pthread_cond_wait(&cv, &mu);
    }
    if (delete_it) {
        delete_it = 0;
        snprintf(key, sizeof key, "lock:mt:%d", id);
        CHECK_EQ(rh_cmd_int(&srv, "DEL %s", key), 1);
    }
    pthread_mutex_unlock(&mu);
    return qty;
}

static uint64_t renewed_now(void)
{
    lw_stats st;
    lw_stats_get(&st);
    return st.renewed;
}

/* A 1 s lease renewed every 100 ms: the body returns once two renewals
 * were seen, however long that takes. */
REDIS_LOCK("mt:\"q\\{id}", 1s, 0)
int probe(int id, int renewals)
{
    uint64_t from = renewed_now();
    int64_t deadline = now_ms() + 30000;

    while (renewals > 0 && renewed_now() < from + (uint64_t)renewals) {
        CHECK(now_ms() < deadline);
        sleep_ms(20);
    }
    return id;
}

LW_SITE(by_hand, "by_hand", "h:{n}");
enum { BY_HAND_LINE = __LINE__ - 1 };

static void *contender(void *arg)
{
    (void)arg;
    CHECK_EQ(deduct(1, 5), 5);
    CHECK_RC(lw_last_error(), LW_OK);
    return NULL;
}

static uint64_t contended_now(void)
{
    lw_stats st;
    lw_stats_get(&st);
    return st.contended;
}

static char *metrics(void)
{
    size_t n = lw_metrics_write(NULL, 0);
    char *text = malloc(n + 1);

    CHECK(text != NULL);
    CHECK_EQ(lw_metrics_write(text, n + 1), n);
    CHECK_EQ(strlen(text), n);
    return text;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(fputs(text, f) >= 0);
    CHECK_EQ(fclose(f), 0);
}

int main(int argc, char **argv)
{
    lw_lock_opts o = lock_opts(60000, 1000, -1); /* never renewed */
    const char *held_argv[] = {"SET", "lock:mt:\"q\\7", "someone-else"};
    const size_t held_len[] = {3, 12, 12};
    lw_guard g;
    lw_stats st;
    char *text, small[16], *full, want[256];
    size_t n;

    CHECK(argc == 3);
    /* Listed from the start, before the runtime ever ran, at zero. */
    text = metrics();
    snprintf(want, sizeof want,
             "lockweave_acquired_total{function=\"deduct\",key=\"mt:{id}\","
             "site=\"test_metrics.c:%d\"} 0\n",
             (int)DEDUCT_LINE);
    CHECK_MSG(strstr(text, want) != NULL, "no %s", want);
    /* The template's " and \ escaped (\" and \\). */
    CHECK(strstr(text, "lockweave_acquired_total{function=\"probe\",key="
                       "\"mt:\\\"q\\\\{id}\",site=\"test_metrics.c:") != NULL);
    snprintf(want, sizeof want,
             "lockweave_acquired_total{function=\"by_hand\",key=\"h:{n}\","
             "site=\"test_metrics.c:%d\"} 0\n",
             (int)BY_HAND_LINE);
    CHECK_MSG(strstr(text, want) != NULL, "no %s", want);
    CHECK(strstr(text, "lockweave_acquired_total{function=\"\",key=\"\",site="
                       "\"unannotated\"} 0\n") != NULL);
    free(text);

    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    /* deduct: three plain calls. */
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(deduct(1, i), i);
        CHECK_RC(lw_last_error(), LW_OK);
    }

    /* deduct: one call waits for another, parked in the body until the
     * waiter is seen counted as contended (a cohort wait: no timing). */
    {
        pthread_t holder, waiter;
        uint64_t before;
        int64_t deadline = now_ms() + 30000;

        park = 1;
        CHECK_EQ(pthread_create(&holder, NULL, contender, NULL), 0);
        pthread_mutex_lock(&mu);
        while (!in_body)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        before = contended_now();
        CHECK_EQ(pthread_create(&waiter, NULL, contender, NULL), 0);
        while (contended_now() == before) {
            CHECK(now_ms() < deadline);
            sleep_ms(5);
        }
        pthread_mutex_lock(&mu);
        go = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        CHECK_EQ(pthread_join(holder, NULL), 0);
        CHECK_EQ(pthread_join(waiter, NULL), 0);
    }

    /* deduct: its key deleted behind its back while it runs. */
    delete_it = 1;
    CHECK_EQ(deduct(1, 9), 9);
    CHECK_RC(lw_last_error(), LW_ELOST);

    /* probe: renewed twice at least, then a timeout (another owner holds
     * the key; wait 0 tries once). */
    CHECK_EQ(probe(7, 2), 7);
    CHECK_RC(lw_last_error(), LW_OK);
    rh_ok(rh_cmd_argv(&srv, 3, held_argv, held_len), "SET");
    CHECK_EQ(probe(7, 0), 0);
    CHECK_RC(lw_last_error(), LW_ETIMEOUT);

    /* Hand-written: two under by_hand, one unannotated. */
    o.site = &by_hand;
    for (int i = 0; i < 2; i++) {
        CHECK_RC(lw_lock(&g, "h:1", 3, &o), LW_OK);
        CHECK_RC(lw_guard_leave(&g), LW_OK);
    }
    o.site = NULL;
    CHECK_RC(lw_lock(&g, "h:2", 3, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    text = metrics();
    printf("%s", text);
    /* Templates only: no key as it was expanded. */
    CHECK(strstr(text, "mt:1") == NULL);
    CHECK(strstr(text, "q\\\\7") == NULL && strstr(text, "q\\7") == NULL);
    CHECK(strstr(text, "h:1") == NULL && strstr(text, "h:2") == NULL);
    CHECK(strstr(text, "lock:") == NULL);

    /* Too small a buffer: the whole length, what fits, and a NUL. */
    n = strlen(text);
    memset(small, 'x', sizeof small);
    CHECK_EQ(lw_metrics_write(small, sizeof small), n);
    CHECK_EQ(small[sizeof small - 1], '\0');
    CHECK(memcmp(small, text, sizeof small - 1) == 0);
    memset(small, 'x', sizeof small);
    CHECK_EQ(lw_metrics_write(small, 1), n);
    CHECK_EQ(small[0], '\0');
    CHECK_EQ(small[1], 'x');
    /* Exactly one byte short: the last byte of the text gives way to the
     * NUL. */
    full = malloc(n);
    CHECK(full != NULL);
    CHECK_EQ(lw_metrics_write(full, n), n);
    CHECK_EQ(full[n - 1], '\0');
    CHECK(memcmp(full, text, n - 1) == 0);
    free(full);

    write_file(argv[1], text);
    free(text);
    lw_stats_get(&st);
    {
        FILE *f = fopen(argv[2], "w");
        CHECK(f != NULL);
        fprintf(f,
                "{\"acquired\": %llu, \"contended\": %llu, \"timed_out\": "
                "%llu, \"lost\": %llu, \"renewed\": %llu}\n",
                (unsigned long long)st.acquired,
                (unsigned long long)st.contended,
                (unsigned long long)st.timed_out, (unsigned long long)st.lost,
                (unsigned long long)st.renewed);
        CHECK_EQ(fclose(f), 0);
    }
    lw_shutdown();
    rh_stop(&srv);
    return 0;
}

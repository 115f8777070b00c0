/* Error texts and the per-thread status, without Redis: every code has its
 * own text, unknown codes say so, lw_last_error() is thread-local. */
#include "util.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

static const int codes[] = {LW_OK,      LW_ETIMEOUT,  LW_EREDIS,   LW_ELOST,
                            LW_ECONFIG, LW_ENOMEM,    LW_EINVAL,   LW_EAUTH,
                            LW_EFORKED, LW_EREPLICAS, LW_ESYSTEM,  LW_ESHUTDOWN,
                            LW_ETLS,    LW_EDONE,     LW_ECANCELED};
#define NCODES ((int)(sizeof codes / sizeof codes[0]))

static void texts(void)
{
    const char *unknown = lw_strerror(12345);
    CHECK(unknown != NULL);
    CHECK_MSG(strcmp(unknown, "unknown error") == 0,
              "lw_strerror(12345) = \"%s\"", unknown);
    CHECK(strcmp(lw_strerror(1), unknown) == 0);
    CHECK(strcmp(lw_strerror(LW_ECANCELED - 1), unknown) == 0);
    CHECK(strcmp(lw_strerror(INT_MIN), unknown) == 0);
    CHECK(strcmp(lw_strerror(INT_MAX), unknown) == 0);

    for (int i = 0; i < NCODES; i++) {
        const char *t = lw_strerror(codes[i]);
        CHECK_MSG(t != NULL && t[0] != '\0', "code %d has no text", codes[i]);
        CHECK_MSG(strcmp(t, unknown) != 0, "code %d is \"unknown\"", codes[i]);
        printf("%3d  %s\n", codes[i], t);
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(t, lw_strerror(codes[j])) != 0,
                      "codes %d and %d share the text \"%s\"", codes[i],
                      codes[j], t);
    }
    /* Stable: the same static string each time. */
    CHECK(lw_strerror(LW_ELOST) == lw_strerror(LW_ELOST));
}

static void *other_thread(void *arg)
{
    int *seen = arg;
    seen[0] = lw_last_error();
    lw_set_last_error(LW_EAUTH);
    seen[1] = lw_last_error();
    return NULL;
}

static void last_error_is_per_thread(void)
{
    CHECK_RC(lw_last_error(), LW_OK);
    lw_set_last_error(LW_ETIMEOUT);
    CHECK_RC(lw_last_error(), LW_ETIMEOUT);

    int seen[2];
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, other_thread, seen), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_RC(seen[0], LW_OK);
    CHECK_RC(seen[1], LW_EAUTH);
    CHECK_RC(lw_last_error(), LW_ETIMEOUT); /* untouched by the other */
    lw_set_last_error(LW_OK);
    CHECK_RC(lw_last_error(), LW_OK);
}

static void outside_a_section(void)
{
    CHECK_EQ(lw_fence(), 0);
    CHECK_EQ(lw_still_held(), 0);
    lw_stats st;
    memset(&st, 0xff, sizeof st);
    lw_stats_get(&st);
    CHECK_EQ(st.held, 0);
    CHECK_EQ(st.acquired, 0);
    CHECK_EQ(st.lost, 0);
}

int main(void)
{
    texts();
    last_error_is_per_thread();
    outside_a_section();
    lw_shutdown();
    printf("errors: ok\n");
    return 0;
}

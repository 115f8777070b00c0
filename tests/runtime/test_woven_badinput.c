/* Bad keys through woven REDIS_LOCK functions (lockweave_generate() weaves
 * this file): a NULL string argument, an empty key, a 1 MiB argument.  The
 * body never runs, the wrapper returns on_fail (or the zero value), and
 * lw_last_error() says LW_EINVAL.  Literal braces reach Redis as a hash
 * tag. */
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int body_runs;
static rh_server srv;

REDIS_LOCK("user:{name}", 5s, 0)
int greet(const char *name)
{
    (void)name;
    return ++body_runs;
}

REDIS_LOCK("{name}", 5s, 0, on_fail = -7)
int whole(const char *name)
{
    (void)name;
    return ++body_runs;
}

REDIS_LOCK("acct:{{{id}}}", 5s, 0)
int tagged(long id)
{
    (void)id;
    if (lw_fence() == 0 || rh_cmd_int(&srv, "EXISTS lock:acct:{42}") != 1)
        return -100;
    return ++body_runs;
}

static void refused(const char *what, int got, int want_ret, int runs_before)
{
    printf("%-24s -> returned %d, %s\n", what, got,
           lw_strerror(lw_last_error()));
    CHECK_EQ(got, want_ret);
    CHECK_RC(lw_last_error(), LW_EINVAL);
    CHECK_EQ(body_runs, runs_before);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    CHECK_EQ(greet("ann"), 1);
    CHECK_RC(lw_last_error(), LW_OK);

    refused("greet(NULL)", greet(NULL), 0, body_runs);
    refused("whole(\"\")", whole(""), -7, body_runs);
    refused("whole(NULL)", whole(NULL), -7, body_runs);

    size_t mib = 1024 * 1024;
    char *big = malloc(mib + 1);
    CHECK(big != NULL);
    memset(big, 'b', mib);
    big[mib] = '\0';
    refused("greet(1 MiB)", greet(big), 0, body_runs);
    refused("whole(1 MiB)", whole(big), -7, body_runs);
    /* The largest that fits ("lock:" + 65531) runs. */
    big[64 * 1024 - 5] = '\0';
    int before = body_runs;
    CHECK_EQ(whole(big), before + 1);
    CHECK_RC(lw_last_error(), LW_OK);
    free(big);

    /* "{{" "}}" are literal braces: the key is lock:acct:{42}. */
    before = body_runs;
    CHECK_EQ(tagged(42), before + 1);
    CHECK_RC(lw_last_error(), LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:acct:{42}"), 0); /* released */

    /* Nothing held. */
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:user:ann"), 0);
    lw_stats st;
    lw_stats_get(&st);
    CHECK_EQ(st.held, 0);
    CHECK_EQ(st.acquired, 3);

    lw_shutdown();
    rh_stop(&srv);
    printf("woven_badinput: ok\n");
    return 0;
}

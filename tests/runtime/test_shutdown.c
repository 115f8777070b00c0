/*
 * lw_shutdown() with guards still entered (the header's promise): their
 * locks are released in Redis at once (not left to their TTL), the guards
 * read as lost (lw_still_held() 0, leaving is LW_ELOST and touches
 * nothing), and the next guarded call starts the runtime again.
 */
#include <pthread.h>
#include <string.h>

#include "util.h"

static rh_server srv;
static pthread_barrier_t held, shut, done;

static void *holder(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "sd-thread", 30000, 0), LW_OK);
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&shut); /* lw_shutdown() ran meanwhile */
    CHECK_EQ(lw_still_held(), 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    pthread_barrier_wait(&done);
    return NULL;
}

int main(void)
{
    pthread_t t;
    lw_guard g;

    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    pthread_barrier_init(&held, NULL, 2);
    pthread_barrier_init(&shut, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    CHECK(pthread_create(&t, NULL, holder, NULL) == 0);
    CHECK_RC(lock_str(&g, "sd-main", 30000, 0), LW_OK);
    pthread_barrier_wait(&held);
    CHECK_EQ(lock_exists(&srv, "sd-main"), 1);
    CHECK_EQ(lock_exists(&srv, "sd-thread"), 1);

    lw_shutdown();
    CHECK_EQ(lock_exists(&srv, "sd-main"), 0);
    CHECK_EQ(lock_exists(&srv, "sd-thread"), 0);
    CHECK_EQ(lw_still_held(), 0);
    pthread_barrier_wait(&shut);
    pthread_barrier_wait(&done);
    CHECK(pthread_join(t, NULL) == 0);
    /* Nothing in Redis changed by the leave: another owner's lock stays. */
    freeReplyObject(rh_cmd(&srv, "SET lock:sd-main intruder PX 30000"));
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    CHECK_EQ(lock_exists(&srv, "sd-main"), 1);
    freeReplyObject(rh_cmd(&srv, "DEL lock:sd-main"));

    /* The runtime starts again on the next call. */
    use_server(&srv);
    CHECK_RC(lock_str(&g, "sd-main", 5000, 0), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    lw_shutdown();
    rh_stop(&srv);
    printf("shutdown: ok\n");
    return 0;
}

/* The lock kinds through woven wrappers: a read lock shared by two
 * threads while a writer is refused, a semaphore's permits, and a minimum
 * hold that outlives the body. */
#include <pthread.h>

#include "gen_check.h"

static pthread_barrier_t in, out;
static int write_ran;

REDIS_LOCK("doc:{id}", 10s, 2s, mode = read)
int doc_read(int id)
{
    pthread_barrier_wait(&in); /* both readers inside at once */
    pthread_barrier_wait(&out);
    return id;
}

REDIS_LOCK("doc:{id}", 10s, 0, mode = write, on_fail = -1)
int doc_write(int id)
{
    write_ran++;
    return id;
}

REDIS_LOCK("api:{id}", 10s, 0, permits = 2, on_fail = -1)
int api_call(int id)
{
    pthread_barrier_wait(&in);
    pthread_barrier_wait(&out);
    return id;
}

REDIS_LOCK("job:{id}", 10s, 0, hold_at_least = 5s, on_fail = -1)
int job(int id)
{
    return id;
}

static void *read_thread(void *arg)
{
    CHECK_EQ(doc_read(*(int *)arg), 7);
    CHECK_EQ(lw_last_error(), LW_OK);
    return NULL;
}

static void *api_thread(void *arg)
{
    CHECK_EQ(api_call(*(int *)arg), 8);
    CHECK_EQ(lw_last_error(), LW_OK);
    return NULL;
}

static void two_inside(void *(*fn)(void *), int id, int (*third)(int))
{
    pthread_t t[2];

    pthread_barrier_init(&in, NULL, 3);
    pthread_barrier_init(&out, NULL, 3);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, fn, &id) == 0);
    pthread_barrier_wait(&in);
    CHECK_EQ(third(id), -1); /* a writer, or a third permit: refused */
    CHECK_EQ(lw_last_error(), LW_ETIMEOUT);
    pthread_barrier_wait(&out);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    pthread_barrier_destroy(&in);
    pthread_barrier_destroy(&out);
}

int main(void)
{
    two_inside(read_thread, 7, doc_write);
    CHECK_EQ(write_ran, 0);
    CHECK_EQ(doc_write(7), 7);
    CHECK_EQ(lw_last_error(), LW_OK);

    two_inside(api_thread, 8, api_call);

    CHECK_EQ(job(9), 9);
    CHECK_EQ(lw_last_error(), LW_OK);
    CHECK_EQ(key_busy("job:9"), 1); /* held on after the body */
    return gen_done("kinds");
}

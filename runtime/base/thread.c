/* Per-thread state.  The TLS block is plain data; the connection is also
 * registered under a pthread key so its destructor closes it at thread exit. */
#include "base/thread.h"

#include <lockweave.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "net/conn.h"
#include "topology/route.h"

static _Thread_local struct lw_thread tls;
static pthread_key_t conn_key, nodes_key;
static pthread_once_t conn_key_once = PTHREAD_ONCE_INIT;

static void conn_destructor(void *p)
{
    lw__conn_free(p);
}

static void conn_key_init(void)
{
    pthread_key_create(&conn_key, conn_destructor);
    pthread_key_create(&nodes_key, lw__route_nodes_free);
}

struct lw_thread *lw__thread(void)
{
    return &tls;
}

void lw__thread_set_conn(struct lw_conn *conn)
{
    pthread_once(&conn_key_once, conn_key_init);
    tls.conn = conn;
    pthread_setspecific(conn_key, conn);
}

void lw__thread_set_nodes(struct lw_nodeconns *nodes)
{
    pthread_once(&conn_key_once, conn_key_init);
    tls.nodes = nodes;
    pthread_setspecific(nodes_key, nodes);
}

uint32_t lw__jitter(uint32_t n)
{
    uint64_t x = tls.rng;

    if (n == 0)
        return 0;
    if (x == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^
            (uint64_t)(uintptr_t)&tls;
        x |= 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    tls.rng = x;
    return (uint32_t)(x % n);
}

int lw_last_error(void)
{
    return tls.last_error;
}

void lw_set_last_error(int code)
{
    tls.last_error = code;
}

int lw__thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

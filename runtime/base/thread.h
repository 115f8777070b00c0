#ifndef LW_THREAD_H
#define LW_THREAD_H

#include <pthread.h>
#include <stdint.h>

struct lw_gimpl;
struct lw_conn;
struct lw_nodeconns;

/* Everything lockweave keeps per thread.  Reached through lw__thread(). */
struct lw_thread {
    int last_error;
    struct lw_gimpl *top; /* innermost entered guard (a stack via ->outer) */
    struct lw_conn *conn; /* this thread's Redis connection, or NULL */
    struct lw_nodeconns *nodes; /* its connections to cluster nodes */
    unsigned token_gen;         /* lw__fork_gen the token base was drawn in */
    unsigned char token_base[16];
    uint64_t token_seq;
    uint64_t rng; /* xorshift state for backoff jitter */
};

struct lw_thread *lw__thread(void);

/* Remember conn so it is closed when the thread exits. */
void lw__thread_set_conn(struct lw_conn *conn);

/* Same for the table of cluster node connections (route.c). */
void lw__thread_set_nodes(struct lw_nodeconns *nodes);

/* pthread_create() with every signal blocked in the new thread: lockweave's
 * own threads must not take the process's signals (SIGINT, SIGTERM) meant
 * for the program's, nor die of a SIGPIPE from a server that hung up. */
int lw__thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg);

/* A jitter value in [0, n). Not for tokens: those use getrandom(). */
uint32_t lw__jitter(uint32_t n);

#endif

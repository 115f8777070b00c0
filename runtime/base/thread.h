#ifndef LW_THREAD_H
#define LW_THREAD_H

#include <pthread.h>
#include <stdint.h>

struct lw_gimpl;

/* What the layers above keep per thread, freed when the thread exits. */
enum lw_thread_res {
    LW_RES_CONN,    /* net: the thread's connection to the server */
    LW_RES_NODES,   /* topology: its connections to cluster nodes */
    LW_RES_MASTERS, /* topology: its connections to Redlock's masters */
    LW_RES_COUNT
};

/* Everything lockweave keeps per thread.  Reached through lw__thread(). */
struct lw_thread {
    int last_error;
    struct lw_gimpl *top;    /* innermost entered guard (a stack via ->outer) */
    void *res[LW_RES_COUNT]; /* see lw__thread_keep() */
    void (*res_free[LW_RES_COUNT])(void *);
    unsigned token_gen; /* lw__fork_gen the token base was drawn in */
    unsigned char token_base[16];
    uint64_t token_seq;
    uint64_t rng; /* xorshift state for backoff jitter */
};

struct lw_thread *lw__thread(void);

/* t's token base (token_base), drawn from getrandom() unless it was in
 * this process (a forked child draws its own): LW_OK, or LW_ESYSTEM when
 * no randomness could be had.  Its hex digits start every token t mints
 * (core/token.c) and name t's connections (net/handshake.c). */
int lw__thread_token_base(struct lw_thread *t);

/* Make p this thread's resource `which` (NULL: none), freed with free_fn
 * when the thread exits.  A resource it replaces is not freed: the caller
 * did that, or still owns it. */
void lw__thread_keep(int which, void *p, void (*free_fn)(void *));

/* pthread_create() with every signal blocked in the new thread: lockweave's
 * own threads must not take the process's signals (SIGINT, SIGTERM) meant
 * for the program's, nor die of a SIGPIPE from a server that hung up. */
int lw__thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg);

/* A jitter value in [0, n). Not for tokens: those use getrandom(). */
uint32_t lw__jitter(uint32_t n);

#endif

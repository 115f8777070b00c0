#ifndef LW_CONFIG_H
#define LW_CONFIG_H

#include <stddef.h>
#include <string.h>

#include "base/tlsctx.h"
#include "base/url.h"

/* Most hand-offs from thread to thread of one process per Redis acquisition
 * (core/cohort.c): another process waits for at most one more section of
 * this one per turn. */
#define LW_LOCAL_HANDOFFS_MAX 63

/*
 * The process's configuration, as one immutable snapshot.  lw_configure()
 * publishes a new snapshot and bumps gen; connections compare their gen to
 * notice they must reconnect.  Old snapshots are kept until lw_shutdown(), so
 * a pointer a thread holds is never freed under it.
 */
struct lw_settings {
    int error; /* LW_OK, or why this configuration cannot be used */
    struct lw_endpoints ep; /* ep.urls[0] is the server in LW_TOPO_SINGLE */
    char *prefix;
    size_t prefix_len;
    int connect_timeout_ms;
    int command_timeout_ms;
    int handoff_ms;      /* a waiter this old is handed the lock on release */
    int wait_replicas;   /* > 0: WAIT for this many replicas after SET */
    int wait_timeout_ms; /* how long that WAIT may take */
    int local_handoffs;  /* a lock goes from thread to thread of this
                            process at most this many times in a row before
                            it goes back through Redis; 0: never */
    struct lw_tls_opts tls;     /* rediss:// only */
    struct ssl_ctx_st *ssl_ctx; /* rediss://: built from tls when loaded,
                                   shared by every connection (SSL_new() on
                                   one SSL_CTX is thread-safe); else NULL */
    unsigned gen;
    struct lw_settings *older;
};

/* A struct that grows (lockweave.h), as the program passed it: its `size`
 * bytes at src copied into the library's own struct of `have` bytes at dst,
 * fields the program's version lacks zeroed (their defaults).  0, or -1 when
 * the program set a byte past the library's struct: a field of a newer
 * version, which this library cannot honour. */
static inline int lw__struct_in(void *dst, size_t have, const void *src,
                                size_t size)
{
    const unsigned char *p = src;
    size_t n = size < have ? size : have;

    memcpy(dst, src, n);
    memset((unsigned char *)dst + n, 0, have - n);
    for (size_t i = n; i < size; i++)
        if (p[i] != 0)
            return -1;
    return 0;
}

/* The current snapshot; built from the environment on first use.  Never NULL
 * (on out-of-memory a static snapshot carrying LW_ENOMEM is returned). */
const struct lw_settings *lw__settings(void);

void lw__settings_free_all(void);

#endif

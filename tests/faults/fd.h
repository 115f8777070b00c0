/* The fault driver: owns the redis-server, the worker processes and the
 * faults; one run is one case. */
#ifndef LW_FAULTS_DRIVER_H
#define LW_FAULTS_DRIVER_H

#include <stdint.h>
#include <sys/types.h>

#include "fd_proxy.h"
#include "fw_shared.h"
#include "redis_harness.h"
#include "rh_sentinel.h"

#define FD_MAX_PROCS 32

/* What the checker must find for the case to pass (fc_check.h). */
enum {
    FD_EXPECT_CLEAN = 0,      /* no violation of any kind */
    FD_EXPECT_STORE_SAFE = 1, /* exclusion may fail, the store must not */
    FD_EXPECT_OVERLAP = 2,    /* self-test: overlaps must be detected */
    FD_EXPECT_LOST_UPDATE = 3 /* self-test: a lost update must be detected */
};

struct fd_run;

struct fd_case {
    const char *name;
    int aof;         /* redis-server with appendonly + fsync always */
    int proxy;       /* workers reach Redis through the delay proxy */
    int mode;        /* FW_GUARDED / FW_UNGUARDED */
    int fence_check; /* the store's fence rule on */
    int (*inject)(struct fd_run *r); /* one fault; NULL: none */
    int gap_ms;                      /* normal running between two faults */
    int expect;                      /* FD_EXPECT_* */
    int kind;                        /* FW_KIND_*: the workers' lock */
    int evict;       /* redis-server with a small maxmemory, allkeys-lru */
    int ctl;         /* the fault runs lockweave-ctl (--ctl) */
    int del_refused; /* forced-unlock: DEL a key lockweave-ctl refuses */
    int threads;     /* threads per worker unless --threads says (0: 3) */
    /* Redis Sentinel (tests/harness/rh_sentinel.h) instead of one server:
     * 1 master + 2 replicas + 3 sentinels; worker i gets the sentinel URL
     * listing the sentinels from i on (so the processes listen to
     * different sentinels for +switch-master). */
    int sentinel;
    int wait_replicas; /* LOCKWEAVE_WAIT_REPLICAS for the workers (0: off) */
};

struct fd_run {
    const struct fd_case *c;
    rh_server srv;  /* one server; unused by the Sentinel cases */
    rh_sentinel sn; /* the Sentinel cases' servers */
    int sentinel_up;
    int wait_replicas; /* the workers': the case's, or --wait-replicas */
    struct fd_proxy *proxy;
    struct fw_shared *shared;
    char dir[512];
    char shared_path[600];
    char worker_exe[600];
    int log_fd; /* driver.log */
    int procs, threads, keys;
    pid_t pids[FD_MAX_PROCS];
    int faults;    /* injected so far */
    int nth;       /* fault number, for faults that alternate */
    char ctl[600]; /* lockweave-ctl, for the forced-unlock cases */
    /* eviction: the subscriber to evicted-key events, and what it heard */
    redisContext *sub;
    unsigned long long filler_seq;
    long long evicted[6]; /* by kind of key: see fd_faults.c */
};

/* The faults' own state, closed at the end of a run (fd_faults.c). */
void fd_faults_finish(struct fd_run *r);

/* The case table (fd_faults.c); NULL-name terminated. */
extern const struct fd_case fd_cases[];
const struct fd_case *fd_case_find(const char *name);

/* A line in driver.log (printf-style, newline added). */
void fd_log(struct fd_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Start worker slot i (again, after a kill); 0 or -1. */
int fd_spawn_worker(struct fd_run *r, int i);

int64_t fd_now_ms(void);
void fd_sleep_ms(int ms);

#endif

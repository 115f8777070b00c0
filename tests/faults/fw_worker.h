/* A worker process: threads that run guarded sections on shared keys and log
 * what each section did. */
#ifndef LW_FAULTS_WORKER_H
#define LW_FAULTS_WORKER_H

#include <stdint.h>

#include "fw_shared.h"

/* One worker thread's state; the section body fills in its results. */
struct fw_thread {
    struct fw_shared *shared;
    int log_fd;     /* this thread's record file */
    int store_fd;   /* the run's store.log (O_APPEND) */
    uint64_t rng;   /* xorshift state */
    uint64_t sid;   /* id of the section about to run */
    int entered;    /* the body ran */
    int read_rc;    /* FW_ACCEPTED / FW_REJECTED */
    int write_rc;   /* FW_ACCEPTED / FW_REJECTED / FW_SKIPPED */
    int still_held; /* lw_still_held() just before the write; -1 unguarded */
    int64_t end_ns; /* when the body finished */
};

/* The section itself, by role (FW_ROLE_*): an exclusive one (mutex holder,
 * writer) reads the key's counter from the store, does some "work", writes
 * it back plus one, both with `fence`; a reader reads, works, reads again; a
 * semaphore's holder only works.  Logs its start and end. */
int fw_section_body(struct fw_thread *t, int key, uint64_t fence, int guarded,
                    int role);

/* The same body behind REDIS_LOCK: fw_section.c, woven by
 * lockweave_generate().  Each returns -1 (on_fail) when the body did not
 * run.  Mutex "faults:{key}"; read/write lock "faults-rw:{key}" (mode =
 * write, mode = read); semaphore "faults-sem:{key}" (permits = 2). */
int fw_guarded_section(int key, struct fw_thread *t);
int fw_write_section(int key, struct fw_thread *t);
int fw_read_section(int key, struct fw_thread *t);
int fw_sem_section(int key, struct fw_thread *t);

uint64_t fw_rand(struct fw_thread *t);

#endif

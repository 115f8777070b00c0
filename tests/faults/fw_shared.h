/*
 * What the fault driver and its worker processes share: one file mapped
 * MAP_SHARED by every process of a run.  It holds
 *  - the control block: the driver's requests to the workers (stop, "pause
 *    yourself inside a section", "get yourself killed inside a section") and
 *    the workers' answers;
 *  - the fenced store: one record per key, changed only under a
 *    process-shared robust mutex, that accepts an operation only if its fence
 *    is at least the highest it has seen for the key — and a fence equal to
 *    that highest only from the section that brought it (a new section needs
 *    a strictly greater one).
 *
 * The store is the "resource" of the fencing-token argument: a section reads
 * the key's counter and writes it back plus one, both with its fence.  A
 * stale holder (its lease ran out while it was paused) is refused as soon as
 * a newer holder has touched the key, so no increment is lost even when two
 * sections overlap.
 *
 * Under a read/write lock, writers do the same; readers only read (at the
 * start of the body and again at its end), and a read is refused only when
 * a writer with a higher fence has touched the key: readers share a key, so
 * they do not raise the bar against each other, but they do raise it for
 * writers (a writer's fence must exceed every fence the store has seen).
 * Semaphore holders (N at once) do not use the store.
 */
#ifndef LW_FAULTS_SHARED_H
#define LW_FAULTS_SHARED_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define FW_MAGIC    0x6c776661u /* "lwfa" */
#define FW_MAX_KEYS 64

/* Modes of a run (fw_shared.mode). */
enum {
    FW_GUARDED = 0,   /* the REDIS_LOCK'ed section: the real user path */
    FW_UNGUARDED = 1, /* the same body, no lock (checker self-test) */
};

/* The lock kind a run's workers use (fw_shared.kind). */
enum {
    FW_KIND_MUTEX = 0, /* REDIS_LOCK("faults:{key}", ...) */
    FW_KIND_RW = 1,    /* mode = write / mode = read on "faults-rw:{key}" */
    FW_KIND_SEM = 2,   /* permits = FW_SEM_PERMITS on "faults-sem:{key}" */
};
#define FW_SEM_PERMITS 2

/* A section's role, the last field of its B record. */
#define FW_ROLE_MUTEX  'x'
#define FW_ROLE_WRITER 'w'
#define FW_ROLE_READER 'r'
#define FW_ROLE_PERMIT 's'

/* The lock key's template, before "{key}", for a kind ("faults"...): the
 * full Redis key is "lock:<this>:<key>" (fw_section.c). */
static inline const char *fw_kind_key(int kind)
{
    return kind == FW_KIND_RW    ? "faults-rw"
           : kind == FW_KIND_SEM ? "faults-sem"
                                 : "faults";
}

/* "mutex", "rw", "sem": driver.log's CASE line. */
static inline const char *fw_kind_name(int kind)
{
    return kind == FW_KIND_RW ? "rw" : kind == FW_KIND_SEM ? "sem" : "mutex";
}

/* Fault requests a worker thread acts on from inside a section. */
enum {
    FW_REQ_NONE = 0,
    FW_REQ_PAUSE = 1, /* raise(SIGSTOP) between the read and the write */
    FW_REQ_KILL = 2,  /* wait inside the section for the driver's SIGKILL */
};

/* Store answers. */
enum {
    FW_ACCEPTED = 0,
    FW_REJECTED = 1, /* stale fence */
    FW_SKIPPED = 2,  /* not attempted (the read was rejected) */
};

struct fw_key {
    uint64_t max_fence;  /* highest fence seen (read or write, any role) */
    uint64_t max_sid;    /* the section that brought it */
    uint64_t wmax_fence; /* highest fence of an exclusive section (a mutex
                            holder or a writer): what readers must exceed */
    int64_t value;       /* the counter the sections increment */
    uint64_t writes;     /* accepted writes */
};

struct fw_shared {
    uint32_t magic;
    int32_t mode;        /* FW_GUARDED / FW_UNGUARDED */
    int32_t fence_check; /* 0: the store accepts anything (self-test) */
    int32_t nkeys;
    int32_t kind;       /* FW_KIND_* */
    pthread_mutex_t mu; /* the store's; robust and process-shared */
    /* Control block; atomics (GCC builtins) from every process. */
    int32_t stop;       /* 1: workers finish their section and exit */
    int32_t request;    /* FW_REQ_*, claimed by one thread with a CAS */
    int32_t victim_pid; /* the claiming process, once it is ready */
    uint64_t fence_seq; /* unguarded mode: fences from here */
    uint64_t recovered; /* store mutex taken over from a dead owner */
    struct fw_key keys[FW_MAX_KEYS];
};

/* Create (driver) or map (worker) the shared file; NULL on error (printed). */
struct fw_shared *fw_shared_create(const char *path, int nkeys, int mode,
                                   int kind, int fence_check);
struct fw_shared *fw_shared_open(const char *path);

/* Store operations; log_fd gets one "W key fence sid value" line per
 * accepted write, written under the store's mutex so the lines of all
 * processes are in the store's order. */
int fw_store_read(struct fw_shared *s, int key, uint64_t fence, uint64_t sid,
                  int64_t *value);
/* A reader's read: refused only if an exclusive section with a higher (or
 * the same) fence has touched the key; raises the bar for writers, not for
 * other readers. */
int fw_store_read_shared(struct fw_shared *s, int key, uint64_t fence,
                         uint64_t sid, int64_t *value);
int fw_store_write(struct fw_shared *s, int key, uint64_t fence, uint64_t sid,
                   int64_t value, int log_fd);

/* CLOCK_MONOTONIC in nanoseconds: one clock for every process of the host,
 * so section times of different processes compare. */
int64_t fw_now_ns(void);
void fw_sleep_us(long us);

/* write() all of buf (a record line), retrying on EINTR and short writes. */
void fw_write_all(int fd, const char *buf, size_t len);

#endif

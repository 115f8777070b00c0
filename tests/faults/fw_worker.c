/*
 * lw_faults_worker SHARED_FILE RUN_DIR THREADS
 *
 * One worker process of a fault run, started by the driver with
 * LOCKWEAVE_REDIS_URL set.  THREADS threads call the section of the run's
 * lock kind (the shared file says which: a mutex; a read/write lock, writer
 * one call in three, reader otherwise; a semaphore of 2) on random keys
 * until the driver sets stop, writing one record file per thread in RUN_DIR:
 *   B sid key fence start_ns role     the body began (written by the body);
 *                                     role: x mutex, w writer, r reader,
 *                                     s semaphore holder
 *   e sid end_ns read write           the body finished (written by the body)
 *   E sid end_ns rc still_held read write
 *                                     the call returned after the body ran:
 *                                     rc is lw_last_error()
 *   F key rc                          the body did not run (rc says why)
 */
#include <lockweave.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw_worker.h"

static struct fw_shared *shared;
static const char *run_dir;
static int store_fd = -1;
static uint64_t next_sid; /* atomic; sids are pid << 32 | this */

static int open_append(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        perror(path);
    return fd;
}

/* Which section this call runs: the kind's, a writer one time in 3 under a
 * read/write lock. */
static int pick_role(struct fw_thread *t)
{
    switch (shared->kind) {
    case FW_KIND_RW:
        return fw_rand(t) % 3 == 0 ? FW_ROLE_WRITER : FW_ROLE_READER;
    case FW_KIND_SEM:
        return FW_ROLE_PERMIT;
    default:
        return FW_ROLE_MUTEX;
    }
}

static void run_one(struct fw_thread *t)
{
    int key = (int)(fw_rand(t) % (uint64_t)shared->nkeys);
    int role = pick_role(t);
    char line[160];
    int rc, n;

    t->sid = (uint64_t)getpid() << 32 |
             __atomic_add_fetch(&next_sid, 1, __ATOMIC_RELAXED);
    t->entered = 0;
    if (shared->mode == FW_UNGUARDED) {
        uint64_t f =
            __atomic_add_fetch(&shared->fence_seq, 1, __ATOMIC_SEQ_CST);
        fw_section_body(t, key, f, 0, role);
        rc = LW_OK;
    } else {
        switch (role) {
        case FW_ROLE_WRITER:
            fw_write_section(key, t);
            break;
        case FW_ROLE_READER:
            fw_read_section(key, t);
            break;
        case FW_ROLE_PERMIT:
            fw_sem_section(key, t);
            break;
        default:
            fw_guarded_section(key, t);
            break;
        }
        rc = lw_last_error();
    }
    if (t->entered)
        n = snprintf(line, sizeof line,
                     "E %" PRIu64 " %" PRId64 " %d %d %d %d\n", t->sid,
                     t->end_ns, rc, t->still_held, t->read_rc, t->write_rc);
    else
        n = snprintf(line, sizeof line, "F %d %d\n", key, rc);
    fw_write_all(t->log_fd, line, (size_t)n);
    /* Redis down answers at once: do not spin on it. */
    if (!t->entered)
        fw_sleep_us(5000);
}

static void *thread_main(void *arg)
{
    struct fw_thread *t = arg;

    while (!__atomic_load_n(&shared->stop, __ATOMIC_ACQUIRE))
        run_one(t);
    return NULL;
}

int main(int argc, char **argv)
{
    struct fw_thread *ts = NULL;
    pthread_t *tids = NULL;
    int nthreads, started = 0, rc = 1;
    char path[512];

    if (argc != 4 || (nthreads = atoi(argv[3])) <= 0) {
        fprintf(stderr, "usage: %s SHARED_FILE RUN_DIR THREADS\n", argv[0]);
        return 2;
    }
    run_dir = argv[2];
    shared = fw_shared_open(argv[1]);
    snprintf(path, sizeof path, "%s/store.log", run_dir);
    if (shared == NULL || (store_fd = open_append(path)) < 0)
        goto cleanup;
    ts = calloc((size_t)nthreads, sizeof *ts);
    tids = calloc((size_t)nthreads, sizeof *tids);
    if (ts == NULL || tids == NULL)
        goto cleanup;
    for (int i = 0; i < nthreads; i++) {
        snprintf(path, sizeof path, "%s/w%d.%d.log", run_dir, (int)getpid(), i);
        ts[i].shared = shared;
        ts[i].store_fd = store_fd;
        ts[i].rng = ((uint64_t)getpid() << 20 | (uint64_t)i) * 2654435761u + 1;
        if ((ts[i].log_fd = open_append(path)) < 0)
            goto cleanup;
        if (pthread_create(&tids[i], NULL, thread_main, &ts[i]) != 0) {
            /* Threads already running would never be joined: leave. */
            fprintf(stderr, "faults worker: pthread_create failed\n");
            exit(1);
        }
        started++;
    }
    rc = 0;
cleanup:
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (ts != NULL)
        for (int i = 0; i < nthreads; i++)
            if (ts[i].log_fd > 0)
                close(ts[i].log_fd);
    free(ts);
    free(tids);
    if (store_fd >= 0)
        close(store_fd);
    lw_shutdown();
    return rc;
}

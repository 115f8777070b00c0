/* The shared file and the fenced store in it. */
#include "fw_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static struct fw_shared *map_file(int fd)
{
    void *p = mmap(NULL, sizeof(struct fw_shared), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

struct fw_shared *fw_shared_create(const char *path, int nkeys, int mode,
                                   int kind, int fence_check)
{
    struct fw_shared *s = NULL;
    pthread_mutexattr_t ma;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

    if (fd < 0 || ftruncate(fd, sizeof *s) != 0 || (s = map_file(fd)) == NULL) {
        fprintf(stderr, "faults: cannot create %s: %s\n", path,
                strerror(errno));
        goto cleanup;
    }
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->fence_check = fence_check;
    s->nkeys = nkeys;
    s->kind = kind;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    /* A worker SIGKILLed inside the store must not wedge every other
     * process: the next locker is told and takes the mutex over. */
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&s->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    __atomic_store_n(&s->magic, FW_MAGIC, __ATOMIC_RELEASE);
cleanup:
    if (fd >= 0)
        close(fd);
    return s;
}

struct fw_shared *fw_shared_open(const char *path)
{
    struct fw_shared *s = NULL;
    int fd = open(path, O_RDWR);

    if (fd < 0 || (s = map_file(fd)) == NULL)
        fprintf(stderr, "faults: cannot map %s: %s\n", path, strerror(errno));
    else if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != FW_MAGIC) {
        fprintf(stderr, "faults: %s is not a shared file of this run\n", path);
        munmap(s, sizeof *s);
        s = NULL;
    }
    if (fd >= 0)
        close(fd);
    return s;
}

static void store_lock(struct fw_shared *s)
{
    if (pthread_mutex_lock(&s->mu) == EOWNERDEAD) {
        __atomic_add_fetch(&s->recovered, 1, __ATOMIC_RELAXED);
        pthread_mutex_consistent(&s->mu);
    }
}

/* The fence rule: at least the highest seen; equal only for the section
 * that brought it (its read, then its write). */
static int fence_ok(const struct fw_shared *s, const struct fw_key *k,
                    uint64_t fence, uint64_t sid)
{
    if (!s->fence_check)
        return 1;
    return fence > k->max_fence || (fence == k->max_fence && sid == k->max_sid);
}

int fw_store_read(struct fw_shared *s, int key, uint64_t fence, uint64_t sid,
                  int64_t *value)
{
    struct fw_key *k = &s->keys[key];
    int rc = FW_REJECTED;

    store_lock(s);
    if (fence_ok(s, k, fence, sid)) {
        /* A read raises the bar too: a stale holder that read before us
         * must not write back what it read. */
        k->max_fence = fence;
        k->max_sid = sid;
        k->wmax_fence = fence;
        *value = k->value;
        rc = FW_ACCEPTED;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int fw_store_read_shared(struct fw_shared *s, int key, uint64_t fence,
                         uint64_t sid, int64_t *value)
{
    struct fw_key *k = &s->keys[key];
    int rc = FW_REJECTED;

    store_lock(s);
    if (!s->fence_check || fence > k->wmax_fence) {
        /* Readers do not refuse each other, whatever their order: only a
         * writer must come after every fence seen. */
        if (fence > k->max_fence) {
            k->max_fence = fence;
            k->max_sid = sid;
        }
        *value = k->value;
        rc = FW_ACCEPTED;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int fw_store_write(struct fw_shared *s, int key, uint64_t fence, uint64_t sid,
                   int64_t value, int log_fd)
{
    struct fw_key *k = &s->keys[key];
    char line[128];
    int rc = FW_REJECTED;

    store_lock(s);
    if (fence_ok(s, k, fence, sid)) {
        k->max_fence = fence;
        k->max_sid = sid;
        k->wmax_fence = fence;
        k->value = value;
        k->writes++;
        int n = snprintf(line, sizeof line,
                         "W %d %" PRIu64 " %" PRIu64 " %" PRId64 "\n", key,
                         fence, sid, value);
        fw_write_all(log_fd, line, (size_t)n);
        rc = FW_ACCEPTED;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int64_t fw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fw_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void fw_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the checker will find the record missing */
        buf += n;
        len -= (size_t)n;
    }
}

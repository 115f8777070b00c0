/*
 * Read/write locks (LW_LOCK_READ; writers are the plain mutex) on one
 * server:
 *   - readers share: three hold at once (a barrier proves it) while a
 *     writer and the plain mutex are refused; a writer excludes readers;
 *   - a writer is not starved by a stream of overlapping readers: once it
 *     is queued, readers that come after it wait, and it gets the lock
 *     within its wait, and no reader is inside while it writes;
 *   - readers queued behind a writer are all let in when it leaves;
 *   - the watchdog renews readers;
 *   - a writer may read what it holds; a reader asking to write is
 *     LW_EINVAL; a SIGKILLed reader stops blocking writers when its lease
 *     ends; a semaphore's key asked for as a read lock is LW_EINVAL; under
 *     Redlock a read lock is LW_ECONFIG;
 *   - a reader tried against a writer 1 or 2 ms from the end of its lease
 *     finds it busy (or free), never "held as another kind";
 *   - a reader whose key was removed (forced, evicted) while it read, and
 *     set again by a writer and then other readers, learns LW_ELOST: its
 *     entry in the readers' set does not carry over to the key set anew.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static rh_server srv;

static lw_lock_opts rw_opts(uint32_t expire_ms, uint32_t wait_ms, int read)
{
    lw_lock_opts o = lock_opts(expire_ms, wait_ms, -1);
    o.flags = read ? LW_LOCK_READ : 0;
    return o;
}

static int take(lw_guard *g, const char *key, lw_lock_opts o)
{
    return lw_lock(g, key, strlen(key), &o);
}

static pthread_barrier_t in, out;

static void *reader(void *arg)
{
    lw_guard g;

    CHECK_RC(take(&g, arg, rw_opts(10000, 5000, 1)), LW_OK);
    pthread_barrier_wait(&in); /* every reader holds it at once */
    pthread_barrier_wait(&out);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void readers_share(void)
{
    pthread_t t[3];
    lw_guard g;

    pthread_barrier_init(&in, NULL, 4);
    pthread_barrier_init(&out, NULL, 4);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, reader, "doc:1") == 0);
    pthread_barrier_wait(&in);
    CHECK_EQ(rh_cmd_int(&srv, "ZCARD {lock:doc:1}:r"), 3);
    CHECK_RC(take(&g, "doc:1", rw_opts(10000, 0, 0)), LW_ETIMEOUT);
    pthread_barrier_wait(&out);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(lock_exists(&srv, "doc:1"), 0);
    pthread_barrier_destroy(&in);
    pthread_barrier_destroy(&out);
}

static void *try_read(void *arg)
{
    lw_guard g;
    int *rc = arg;

    *rc = take(&g, "doc:2", rw_opts(10000, 0, 1));
    if (*rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

/* A writer holds doc:2: a reader (another thread) is refused. */
static void writer_excludes(void)
{
    pthread_t t;
    lw_guard g;
    int rc = -100;

    CHECK_RC(take(&g, "doc:2", rw_opts(10000, 0, 0)), LW_OK);
    CHECK(pthread_create(&t, NULL, try_read, &rc) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_RC(rc, LW_ETIMEOUT);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static atomic_int writer_in, overlaps;

/* A ring of readers that never lets the key go free: each takes the read
 * lock, passes the turn on, and leaves only once the next one holds it too
 * (or after 200 ms, when the next one waits: behind a writer, if fair). */
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ring_cv = PTHREAD_COND_INITIALIZER;
static int ring_turn, ring_stop, ring_reads;

static void *ring_reader(void *arg)
{
    int me = (int)(intptr_t)arg;

    pthread_mutex_lock(&ring_mu);
    for (;;) {
        while (ring_turn != me && !ring_stop)
            pthread_cond_wait(&ring_cv, &ring_mu);
        if (ring_stop)
            break;
        pthread_mutex_unlock(&ring_mu);
        lw_guard g;
        int rc = take(&g, "doc:3", rw_opts(10000, 20000, 1));
        pthread_mutex_lock(&ring_mu);
        if (rc != LW_OK)
            continue;
        if (atomic_load(&writer_in))
            atomic_fetch_add(&overlaps, 1);
        int seen = ++ring_reads;
        ring_turn = (me + 1) % 3;
        pthread_cond_broadcast(&ring_cv);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (ring_reads == seen && !ring_stop &&
               pthread_cond_timedwait(&ring_cv, &ring_mu, &until) == 0)
            ;
        if (atomic_load(&writer_in))
            atomic_fetch_add(&overlaps, 1);
        pthread_mutex_unlock(&ring_mu);
        lw_guard_leave(&g);
        pthread_mutex_lock(&ring_mu);
    }
    pthread_mutex_unlock(&ring_mu);
    return NULL;
}

/* Readers that always overlap (the key never goes free between them) and
 * a writer that comes later: it must get in within its wait. */
static void writer_not_starved(void)
{
    pthread_t t[3];
    lw_guard g;
    int64_t t0;

    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, ring_reader, (void *)(intptr_t)i) ==
              0);
    sleep_ms(300);
    t0 = now_ms();
    CHECK_RC(take(&g, "doc:3", rw_opts(10000, 5000, 0)), LW_OK);
    atomic_store(&writer_in, 1);
    usleep(20000);
    atomic_store(&writer_in, 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    pthread_mutex_lock(&ring_mu);
    printf("writer in after %lld ms among %d reads\n",
           (long long)(now_ms() - t0), ring_reads);
    ring_stop = 1;
    pthread_cond_broadcast(&ring_cv);
    pthread_mutex_unlock(&ring_mu);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(atomic_load(&overlaps), 0);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int holding, queued_ok;

static void *queued_reader(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(take(&g, "doc:4", rw_opts(10000, 10000, 1)), LW_OK);
    pthread_mutex_lock(&mu);
    holding++;
    pthread_cond_broadcast(&cv);
    while (holding < 3 && holding > 0)
        pthread_cond_wait(&cv, &mu);
    queued_ok++;
    pthread_mutex_unlock(&mu);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

/* Three readers queue behind a writer; when it leaves, all three hold the
 * lock together. */
static void readers_after_writer(void)
{
    pthread_t t[3];
    lw_guard g;
    long long three = 3;

    CHECK_RC(take(&g, "doc:4", rw_opts(10000, 0, 0)), LW_OK);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, queued_reader, NULL) == 0);
    while (rh_cmd_int(&srv, "ZCARD {lock:doc:4}:q") != three)
        sleep_ms(10);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(queued_ok, 3);
}

static void reentry(void)
{
    lw_guard w, r, r2, w2;

    CHECK_RC(take(&w, "doc:5", rw_opts(10000, 0, 0)), LW_OK);
    CHECK_RC(take(&r, "doc:5", rw_opts(10000, 0, 1)), LW_OK); /* write, read */
    CHECK_RC(lw_guard_leave(&r), LW_OK);
    CHECK_RC(lw_guard_leave(&w), LW_OK);
    CHECK_RC(take(&r2, "doc:5", rw_opts(10000, 0, 1)), LW_OK);
    CHECK_RC(take(&w2, "doc:5", rw_opts(10000, 5000, 0)), LW_EINVAL);
    CHECK_RC(lw_guard_leave(&r2), LW_OK);
}

/* A reader killed while it reads: the writer gets in when the reader's
 * 1 s lease ends. */
static void killed_reader(void)
{
    lw_lock_opts o = rw_opts(1000, 0, 1);
    lw_guard g;

    die_holding(&srv, "doc:6", &o);
    CHECK_RC(take(&g, "doc:6", rw_opts(10000, 0, 0)), LW_ETIMEOUT);
    CHECK_RC(take(&g, "doc:6", rw_opts(10000, 10000, 0)), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

/* The watchdog renews a reader's lease: read for 2.5 leases, while a
 * writer stays out. */
static void reader_renewed(void)
{
    lw_guard g;
    int rc = -100;
    pthread_t t;

    CHECK_RC(take(&g, "doc:2", rw_opts(1000, 0, 1)), LW_OK);
    sleep_ms(2500);
    CHECK_EQ(lw_still_held(), 1);
    CHECK_EQ(lock_exists(&srv, "doc:2"), 1);
    CHECK(pthread_create(&t, NULL, try_read, &rc) == 0); /* readers share */
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_RC(rc, LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

static void other_kinds(void)
{
    lw_lock_opts sem = lock_opts(10000, 0, -1);
    lw_guard g;
    rh_server s[3];
    char url[256];
    int n = 0;

    freeReplyObject(rh_cmd(&srv, "ZADD lock:doc:7 +inf n:2"));
    CHECK_RC(take(&g, "doc:7", rw_opts(10000, 0, 1)), LW_EINVAL);
    sem.permits = 2;
    sem.flags = LW_LOCK_READ;
    CHECK_RC(lw_lock(&g, "doc:8", 5, &sem), LW_EINVAL);

    for (int i = 0; i < 3; i++) {
        CHECK_EQ(rh_start(&s[i], NULL), 0);
        n += snprintf(url + n, sizeof url - (size_t)n, "%s%s", i ? "," : "",
                      s[i].url);
    }
    use_url(url, 1000, 2000);
    CHECK_RC(take(&g, "doc:9", rw_opts(10000, 0, 1)), LW_ECONFIG);
    lw_shutdown();
    for (int i = 0; i < 3; i++)
        rh_stop(&s[i]);
}

/* A read lock tried while a writer's lease ends in 1 or 2 ms: the busy
 * reply carries the writer's TTL, which must never read as "held as
 * another kind". */
static void ending_writer(void)
{
    int busy = 0, free_now = 0;

    for (int i = 0; i < 300; i++) {
        lw_guard g;
        redisReply *r =
            rh_cmd(&srv, "SET lock:doc:end writer PX %d", 1 + i % 2);
        CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        int rc = take(&g, "doc:end", rw_opts(10000, 0, 1));
        CHECK_MSG(rc == LW_ETIMEOUT || rc == LW_OK, "try %d: %s", i,
                  lw_strerror(rc));
        if (rc == LW_OK) {
            free_now++;
            CHECK_RC(lw_guard_leave(&g), LW_OK);
        } else {
            busy++;
        }
    }
    printf("ending_writer: 300 tries, %d busy, %d found the key free\n", busy,
           free_now);
}

struct section {
    lw_lock_opts o;
    pthread_barrier_t *entered, *leave; /* NULL: leave at once */
    int rc;                             /* what leaving returned */
};

static void *one_section(void *arg)
{
    struct section *s = arg;
    lw_guard g;

    CHECK_RC(take(&g, "doc:gone", s->o), LW_OK);
    if (s->entered != NULL) {
        pthread_barrier_wait(s->entered);
        pthread_barrier_wait(s->leave);
    }
    s->rc = lw_guard_leave(&g);
    return NULL;
}

/* Another thread's section on doc:gone, start to end. */
static int section_in_thread(lw_lock_opts o)
{
    struct section s = {.o = o};
    pthread_t t;

    CHECK(pthread_create(&t, NULL, one_section, &s) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    return s.rc;
}

static void removed_reader(void)
{
    pthread_barrier_t entered, leave;
    struct section later = {
        .o = rw_opts(30000, 0, 1), .entered = &entered, .leave = &leave};
    pthread_t t;
    lw_guard g;

    pthread_barrier_init(&entered, NULL, 2);
    pthread_barrier_init(&leave, NULL, 2);
    CHECK_RC(take(&g, "doc:gone", rw_opts(30000, 0, 1)), LW_OK);
    /* The key removed behind our back, the readers' set left. */
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:doc:gone"), 1);
    CHECK_RC(section_in_thread(rw_opts(30000, 5000, 0)), LW_OK); /* writer */
    CHECK_RC(section_in_thread(rw_opts(30000, 0, 1)), LW_OK);    /* reader */
    CHECK(pthread_create(&t, NULL, one_section, &later) == 0);
    pthread_barrier_wait(&entered); /* a reader holds it again */
    /* Our section overlapped the writer's: it must not end LW_OK. */
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    pthread_barrier_wait(&leave);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_RC(later.rc, LW_OK);
    CHECK_EQ(lock_exists(&srv, "doc:gone"), 0);
    pthread_barrier_destroy(&entered);
    pthread_barrier_destroy(&leave);
}

int main(void)
{
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);

    readers_share();
    writer_excludes();
    writer_not_starved();
    readers_after_writer();
    reentry();
    killed_reader();
    reader_renewed();
    ending_writer();
    removed_reader();
    other_kinds();

    lw_shutdown();
    rh_stop(&srv);
    printf("rwlock: ok\n");
    return 0;
}

/*
 * Read/write locks and semaphores while their slot is moved by hand, again
 * and again: CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE of its keys one
 * at a time, SETSLOT NODE, from master to master.  Meanwhile readers queue
 * behind writers (so a writer's release hands the lock to readers), readers
 * and permit holders release while the keys of their lock (lock key, queue,
 * readers' set, fence counter, waiters' keys) lie on two nodes, and the
 * watchdog renews leases there.
 *
 * Every section must end with LW_OK: a release Redis did not confirm is
 * reported LW_ELOST, so a release that failed only because of the
 * migration would be a false loss.  No script may fail on the half-moved
 * slot ("non local key"), no release may be left to the TTL, and exclusion
 * holds throughout: a writer alone, readers only among readers, at most
 * PERMITS permit holders.
 * First, each way a lock's keys can lie mid-migration is met alone
 * (split_case), then all kinds run at once while the slot moves
 * LW_TEST_MOVES times (default MOVES_DEFAULT).
 */
#include <lockweave.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rh_cluster.h"
#include "core/keynames.h"
#include "topology/slot.h"

#define MOVES_DEFAULT 8
#define RW_KEYS       2
#define READERS       5 /* threads */
#define WRITERS       2
#define SEM_THREADS   4
#define PERMITS       2
/* Leases shorter than a move: a release that waits for the move to end
 * runs out of lease. */
#define EXPIRE_MS    1000
#define KEY_PAUSE_US 15000  /* between two keys' MIGRATE */
#define STABLE_US    250000 /* between two moves */

static rh_cluster cl;
static atomic_int stop;
static atomic_int sections, reads, writes, permits_taken;
static atomic_int overlaps, lock_failures, leave_failures, timeouts;
static atomic_int script_errors, unconfirmed, lost_logs, warn_lines;
static atomic_int writers_in[RW_KEYS], readers_in[RW_KEYS], holders_in;
static atomic_int moving;      /* a migration is in progress */
static atomic_int during_move; /* sections that ended during one */

static void on_log(int level, const char *msg, void *ud)
{
    (void)ud;
    if (level < LW_LOG_WARN)
        return;
    atomic_fetch_add(&warn_lines, 1);
    if (strstr(msg, "non local key") != NULL ||
        strstr(msg, "Redis error reply") != NULL)
        atomic_fetch_add(&script_errors, 1);
    if (strstr(msg, "could not release") != NULL ||
        strstr(msg, "did not confirm") != NULL ||
        strstr(msg, "ends by its TTL") != NULL)
        atomic_fetch_add(&unconfirmed, 1);
    if (strstr(msg, "lost") != NULL)
        atomic_fetch_add(&lost_logs, 1);
    fprintf(stderr, "lockweave: %s\n", msg);
}

/* All in one slot: the hash tag {mk}. */
static int rw_key(int k, char *buf, size_t cap)
{
    return snprintf(buf, cap, "rw{mk}:%d", k);
}

static const char sem_key[] = "sem{mk}";

static void opts_for(lw_lock_opts *o, uint32_t flags, uint32_t permits)
{
    memset(o, 0, sizeof *o);
    o->expire_ms = EXPIRE_MS;
    o->wait_ms = 60000; /* acquisitions wait out the moves */
    o->max_renew = -1;
    o->flags = flags;
    o->permits = permits;
}

/* A short body, sometimes long enough for the watchdog to renew. */
static void body(unsigned *seed)
{
    int r = rand_r(seed) % 100;

    usleep(r < 90 ? 2000 + (unsigned)(r * 200) : (unsigned)EXPIRE_MS * 600);
}

static int enter(lw_guard *g, const char *key, int len, const lw_lock_opts *o)
{
    int rc = lw_lock(g, key, (size_t)len, o);

    if (rc == LW_ETIMEOUT)
        atomic_fetch_add(&timeouts, 1);
    else if (rc != LW_OK) {
        fprintf(stderr, "lock %s: %s\n", key, lw_strerror(rc));
        atomic_fetch_add(&lock_failures, 1);
    }
    return rc;
}

static void leave(lw_guard *g, const char *key)
{
    int rc = lw_guard_leave(g);

    if (rc != LW_OK) {
        fprintf(stderr, "leave %s: %s%s\n", key, lw_strerror(rc),
                atomic_load(&moving) ? " (during a move)" : "");
        atomic_fetch_add(&leave_failures, 1);
    }
    if (atomic_load(&moving))
        atomic_fetch_add(&during_move, 1);
    atomic_fetch_add(&sections, 1);
}

static void *rw_worker(void *arg)
{
    int id = (int)(intptr_t)arg, writer = id < WRITERS;
    unsigned seed = (unsigned)id * 7919u + 1;
    lw_lock_opts o;

    opts_for(&o, writer ? 0 : LW_LOCK_READ, 0);
    while (!atomic_load(&stop)) {
        int k = rand_r(&seed) % RW_KEYS;
        char key[32];
        int len = rw_key(k, key, sizeof key);
        lw_guard g;

        if (enter(&g, key, len, &o) != LW_OK)
            continue;
        if (writer) {
            if (atomic_fetch_add(&writers_in[k], 1) != 0 ||
                atomic_load(&readers_in[k]) != 0)
                atomic_fetch_add(&overlaps, 1);
            body(&seed);
            atomic_fetch_sub(&writers_in[k], 1);
            atomic_fetch_add(&writes, 1);
        } else {
            atomic_fetch_add(&readers_in[k], 1);
            if (atomic_load(&writers_in[k]) != 0)
                atomic_fetch_add(&overlaps, 1);
            body(&seed);
            atomic_fetch_sub(&readers_in[k], 1);
            atomic_fetch_add(&reads, 1);
        }
        leave(&g, key);
    }
    return NULL;
}

static void *sem_worker(void *arg)
{
    unsigned seed = (unsigned)(intptr_t)arg * 104729u + 3;
    lw_lock_opts o;

    opts_for(&o, 0, PERMITS);
    while (!atomic_load(&stop)) {
        lw_guard g;

        if (enter(&g, sem_key, (int)strlen(sem_key), &o) != LW_OK)
            continue;
        if (atomic_fetch_add(&holders_in, 1) >= PERMITS)
            atomic_fetch_add(&overlaps, 1);
        body(&seed);
        atomic_fetch_sub(&holders_in, 1);
        atomic_fetch_add(&permits_taken, 1);
        leave(&g, sem_key);
    }
    return NULL;
}

/* Start moving slot from src to dst (keys stay where they are). */
static void begin_migration(rh_server *src, rh_server *dst, int slot)
{
    CHECK_EQ(rh_cluster_migrate_begin(&cl, src, dst, slot), 0);
    atomic_store(&moving, 1);
}

static void migrate_key(rh_server *src, rh_server *dst, const char *key,
                        size_t len)
{
    CHECK_EQ(rh_cluster_migrate_keys(src, dst, 1, &key, &len), 0);
}

/* Move every key of slot left on src to dst, one at a time, pause_us
 * apart, then give dst the slot; returns how many keys were moved. */
static int finish_migration(rh_server *src, rh_server *dst, int slot,
                            unsigned pause_us)
{
    int moved = 0;

    for (;;) {
        redisReply *keys = rh_cmd(src, "CLUSTER GETKEYSINSLOT %d 1", slot);

        CHECK(keys != NULL && keys->type == REDIS_REPLY_ARRAY);
        if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        }
        migrate_key(src, dst, keys->element[0]->str, keys->element[0]->len);
        freeReplyObject(keys);
        moved++;
        usleep(pause_us); /* the workers meet the half-moved slot */
    }
    CHECK_EQ(rh_cluster_migrate_end(&cl, dst, slot), 0);
    atomic_store(&moving, 0);
    return moved;
}

/* 1 if s holds key: ASKING first, so that the node a slot is being moved
 * to answers too; the node it leaves answers ASK for a key it does not
 * hold. */
static long long holds(rh_server *s, const char *key, size_t len)
{
    const char *argv[] = {"EXISTS", key};
    size_t lens[] = {6, len};
    redisReply *r;
    long long n;

    CHECK_EQ(rh_ok(rh_cmd(s, "ASKING"), "ASKING"), 0);
    r = rh_cmd_argv(s, 2, argv, lens);

    CHECK(r != NULL);
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0)
        n = 0;
    else {
        CHECK_MSG(r->type == REDIS_REPLY_INTEGER, "EXISTS: %s",
                  r->type == REDIS_REPLY_ERROR ? r->str : "?");
        n = r->integer;
    }
    freeReplyObject(r);
    return n;
}

/*
 * One lock of one kind in a slot of src, its slot's migration to dst begun
 * (and some of its keys moved: KEY_MOVED, READERS_MOVED) while it is held,
 * then released (after lasting renew_ms, renewed meanwhile).  A writer
 * leaves with a reader queued (WITH_READER).  Every step must succeed, no
 * script fail, and the keys be gone after the release.  The migration is
 * finished afterwards.
 */
enum { KEY_MOVED = 1, READERS_MOVED = 2, WITH_READER = 4 };

struct queued_reader {
    const char *key;
    int rc;
};

static void *read_after_writer(void *arg)
{
    struct queued_reader *w = arg;
    lw_lock_opts o;
    lw_guard g;

    opts_for(&o, LW_LOCK_READ, 0);
    o.wait_ms = 20000;
    w->rc = lw_lock(&g, w->key, strlen(w->key), &o);
    if (w->rc == LW_OK)
        w->rc = lw_guard_leave(&g);
    return NULL;
}

static void split_case(const char *what, rh_server *src, rh_server *dst,
                       uint32_t flags, uint32_t permits, int how,
                       unsigned renew_ms)
{
    static int tag;
    char full[48];
    const char *key = full + 5; /* without the prefix, "lock:" */
    struct queued_reader w = {key, 0};
    struct lw_names n;
    pthread_t t;
    lw_lock_opts o;
    lw_guard g;
    int slot = -1, len = 0;

    for (; slot < 0 || rh_cluster_master_of(&cl, slot) != src; tag++) {
        len = snprintf(full, sizeof full, "lock:case{%d}", tag);
        slot = lw__key_slot(full, (size_t)len);
    }
    CHECK_EQ(lw__names_init(&n, full, (size_t)len, 5, 1), LW_OK);
    opts_for(&o, flags, permits);
    if (renew_ms > 0)
        o.expire_ms = 900;
    CHECK_EQ(lw_lock(&g, key, (size_t)len - 5, &o), LW_OK);
    if (how & WITH_READER) {
        CHECK_EQ(pthread_create(&t, NULL, read_after_writer, &w), 0);
        for (int i = 0; i < 1000; i++) {
            const char *argv[] = {"ZCARD", n.queue};
            size_t lens[] = {5, n.queuelen};
            redisReply *r = rh_cmd_argv(src, 2, argv, lens);
            long long q = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
            freeReplyObject(r);
            if (q == 1)
                break;
            usleep(10000);
        }
        usleep(50000); /* blocked on its mailbox: it is listening */
    }
    begin_migration(src, dst, slot);
    if (how & KEY_MOVED)
        migrate_key(src, dst, full, (size_t)len);
    if (how & READERS_MOVED)
        migrate_key(src, dst, n.readers, n.readerslen);
    if (renew_ms > 0) {
        usleep(renew_ms * 1000);
        CHECK_MSG(lw_still_held() == 1, "%s: lost while held", what);
    }
    CHECK_MSG(lw_guard_leave(&g) == LW_OK, "%s: leave failed", what);
    /* Freed at once, not left to its TTL. */
    CHECK_MSG(holds(src, full, (size_t)len) + holds(dst, full, (size_t)len) ==
                  0,
              "%s: the lock key is still there", what);
    CHECK_MSG(holds(src, n.readers, n.readerslen) +
                      holds(dst, n.readers, n.readerslen) ==
                  0,
              "%s: the readers' set is still there", what);
    finish_migration(src, dst, slot, 0);
    if (how & WITH_READER) {
        CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_MSG(w.rc == LW_OK, "%s: the queued reader: %s", what,
                  lw_strerror(w.rc));
    }
    lw__names_free(&n);
    CHECK_MSG(atomic_load(&script_errors) == 0 &&
                  atomic_load(&unconfirmed) == 0 &&
                  atomic_load(&lost_logs) == 0,
              "%s: errors logged", what);
    printf("%s: ok\n", what);
}

int main(void)
{
    char full[48];
    const char *env = getenv("LW_TEST_MOVES");
    int moves = env ? atoi(env) : MOVES_DEFAULT;
    pthread_t rw[READERS + WRITERS], sem[SEM_THREADS];
    rh_server *masters[3], *owner;
    int nmasters = 0, slot, cur = -1, moved_keys = 0, before;
    lw_config cfg;

    /* Threads of this process stand in for other processes: every wait
     * and hand-off goes through Redis (test_cohort.c has the local ones). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    slot = lw__key_slot(
        full, (size_t)snprintf(full, sizeof full, "lock:%s", sem_key));
    owner = rh_cluster_master_of(&cl, slot);
    CHECK(owner != NULL);
    for (int i = 0; i < cl.n; i++)
        if (rh_cluster_is_master(&cl.node[i])) {
            if (&cl.node[i] == owner)
                cur = nmasters;
            masters[nmasters++] = &cl.node[i];
        }
    CHECK_EQ(nmasters, 3);
    CHECK(cur >= 0);

    lw_set_logger(on_log, NULL, LW_LOG_WARN);
    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    CHECK_EQ(lw_configure(&cfg), LW_OK);

    /* Each way a lock's keys can lie while its slot moves, one at a time. */
    split_case("writer's release, a reader queued, all keys on the source",
               masters[0], masters[1], 0, 0, WITH_READER, 0);
    split_case("reader's release, nobody queued", masters[0], masters[1],
               LW_LOCK_READ, 0, 0, 0);
    split_case("reader's release, its set moved", masters[0], masters[1],
               LW_LOCK_READ, 0, READERS_MOVED, 0);
    split_case("reader's release, its key moved", masters[0], masters[1],
               LW_LOCK_READ, 0, KEY_MOVED, 0);
    split_case("reader renewed and released, its set moved", masters[0],
               masters[1], LW_LOCK_READ, 0, READERS_MOVED, 1200);
    split_case("reader renewed and released, its key moved", masters[0],
               masters[1], LW_LOCK_READ, 0, KEY_MOVED, 1200);
    split_case("permit's release, nobody queued", masters[0], masters[1], 0,
               PERMITS, 0, 0);
    split_case("permit renewed and released, its key moved", masters[0],
               masters[1], 0, PERMITS, KEY_MOVED, 1200);

    /* Then all kinds at once, the slot moving again and again. */
    for (int i = 0; i < READERS + WRITERS; i++)
        CHECK_EQ(pthread_create(&rw[i], NULL, rw_worker, (void *)(intptr_t)i),
                 0);
    for (int i = 0; i < SEM_THREADS; i++)
        CHECK_EQ(pthread_create(&sem[i], NULL, sem_worker, (void *)(intptr_t)i),
                 0);
    usleep(300000);
    before = atomic_load(&sections);

    for (int m = 0; m < moves; m++) {
        int next = (cur + 1) % nmasters;
        int n;

        begin_migration(masters[cur], masters[next], slot);
        n = finish_migration(masters[cur], masters[next], slot, KEY_PAUSE_US);
        printf("move %d: slot %d :%d -> :%d, %d keys; %d sections so far\n",
               m + 1, slot, masters[cur]->port, masters[next]->port, n,
               atomic_load(&sections));
        fflush(stdout);
        moved_keys += n;
        cur = next;
        usleep(STABLE_US);
    }
    CHECK_EQ(rh_cluster_wait_ok(&cl, 10000), 0);
    usleep(300000);
    atomic_store(&stop, 1);
    for (int i = 0; i < READERS + WRITERS; i++)
        CHECK_EQ(pthread_join(rw[i], NULL), 0);
    for (int i = 0; i < SEM_THREADS; i++)
        CHECK_EQ(pthread_join(sem[i], NULL), 0);

    printf("%d moves of slot %d (%d keys moved); %d sections (%d before the "
           "first move, %d ended during a move): %d reads, %d writes, %d "
           "permits; overlaps %d, failed acquisitions %d, timeouts %d, "
           "failed leaves %d, script errors %d, releases not confirmed %d, "
           "loss lines %d, warnings %d\n",
           moves, slot, moved_keys, atomic_load(&sections), before,
           atomic_load(&during_move), atomic_load(&reads), atomic_load(&writes),
           atomic_load(&permits_taken), atomic_load(&overlaps),
           atomic_load(&lock_failures), atomic_load(&timeouts),
           atomic_load(&leave_failures), atomic_load(&script_errors),
           atomic_load(&unconfirmed), atomic_load(&lost_logs),
           atomic_load(&warn_lines));
    CHECK_EQ(rh_cluster_master_of(&cl, slot) == masters[cur], 1);
    CHECK(moved_keys > 0);
    CHECK_EQ(atomic_load(&overlaps), 0);
    CHECK_EQ(atomic_load(&leave_failures), 0);
    CHECK_EQ(atomic_load(&script_errors), 0);
    CHECK_EQ(atomic_load(&unconfirmed), 0);
    CHECK_EQ(atomic_load(&lost_logs), 0);
    CHECK_EQ(atomic_load(&lock_failures), 0);
    CHECK_EQ(atomic_load(&timeouts), 0);
    CHECK_MSG(atomic_load(&during_move) > 0, "no section ended during a move");
    CHECK_MSG(atomic_load(&reads) > 0 && atomic_load(&writes) > 0 &&
                  atomic_load(&permits_taken) > 0,
              "every kind must have run");
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}

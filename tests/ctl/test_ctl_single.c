/*
 * lockweave-ctl against one real redis-server: inspect a free key, a held
 * one and its waiters (a live one, a dead one), unlock refused without a
 * terminal or declined at it, unlock breaking a held lock (its holder gets
 * LW_ELOST, the live waiter is handed the lock at once, the dead one
 * skipped), a lock that changed hands while the prompt waited left alone,
 * list over many SCAN pages with lockweave's companion keys left out,
 * list showing semaphores and read locks with their kinds,
 * binary keys escaped, and the exit statuses of bad URLs, unreachable
 * servers and bad command lines, passwords never shown; who holds a lock
 * (process, thread, host), also when handed between threads or held by a
 * process that died; an ACL user that may only read inspects and lists.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctl_util.h"
#include "util.h"

static rh_server srv;

/* A thread that waits for a lock and holds it until told. */
struct waiter {
    const char *key;
    int rc; /* atomic: 1 until lock_str() returned */
    int64_t got_ms;
    int release; /* atomic */
    int left;    /* lw_guard_leave()'s result */
    lw_guard g;
    pthread_t th;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    int rc = lock_str(&w->g, w->key, 10000, 10000);

    w->got_ms = now_ms();
    __atomic_store_n(&w->rc, rc, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&w->release, __ATOMIC_ACQUIRE))
        sleep_ms(2);
    if (rc == LW_OK)
        w->left = lw_guard_leave(&w->g);
    return NULL;
}

static void waiter_start(struct waiter *w, const char *key)
{
    memset(w, 0, sizeof *w);
    w->key = key;
    w->rc = 1;
    CHECK(pthread_create(&w->th, NULL, waiter_main, w) == 0);
}

static int waiter_done(void *arg)
{
    return __atomic_load_n(&((struct waiter *)arg)->rc, __ATOMIC_ACQUIRE) != 1;
}

static long long queue_len;
static int queue_has(void *arg)
{
    return rh_cmd_int(&srv, "ZCARD %s", (const char *)arg) >= queue_len;
}

/* The value of key, or "" when it does not exist (static buffer). */
static const char *value_of(const char *key)
{
    static char buf[128];
    redisReply *r = rh_cmd(&srv, "GET %s", key);

    CHECK(r != NULL);
    snprintf(buf, sizeof buf, "%s",
             r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return buf;
}

static long long server_time_us(void)
{
    redisReply *r = rh_cmd(&srv, "TIME");
    long long t;

    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    t = atoll(r->element[0]->str) * 1000000 + atoll(r->element[1]->str);
    freeReplyObject(r);
    return t;
}

static void free_key(void)
{
    struct ctl_run r;
    jv *j;

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", "free:1", NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.out, "held     no") != NULL);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "inspect", "free:1",
            NULL);
    CHECK_EQ(r.status, 1);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "key"), "free:1");
    CHECK_STR(jv_str(j, "redis_key"), "lock:free:1");
    CHECK_EQ(jv_bool(j, "held"), 0);
    CHECK(jv_get(j, "waiters") != NULL && jv_get(j, "waiters")->n == 0);
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes",
            "free:1", NULL);
    CHECK_EQ(r.status, 1);
    ctl_run_free(&r);
}

/* A semaphore with two of its three permits taken, and a read lock with
 * two readers (each held from its own thread: one thread re-enters): the
 * kind and the holders are shown, and unlock --force refuses them (7). */
static pthread_barrier_t shared_in, shared_out;

static void *shared_holder(void *arg)
{
    const lw_lock_opts *o = arg;
    lw_guard g;

    CHECK_RC(lw_lock(&g, "kind:1", 6, o), LW_OK);
    pthread_barrier_wait(&shared_in);
    pthread_barrier_wait(&shared_out);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void shared_kind(const lw_lock_opts *o, const char *kind,
                        long long permits)
{
    pthread_t t[2];
    struct ctl_run r;
    jv *j;

    pthread_barrier_init(&shared_in, NULL, 3);
    pthread_barrier_init(&shared_out, NULL, 3);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, shared_holder, (void *)o) == 0);
    pthread_barrier_wait(&shared_in);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "inspect", "kind:1",
            NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_bool(j, "held"), 1);
    CHECK_STR(jv_str(j, "kind"), kind);
    CHECK_EQ(jv_int(j, "holders"), 2);
    if (permits > 0)
        CHECK_EQ(jv_int(j, "permits"), permits);
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "unlock", "--force", "--yes",
            "kind:1", NULL);
    CHECK_EQ(r.status, 7);
    ctl_run_free(&r);
    pthread_barrier_wait(&shared_out);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    pthread_barrier_destroy(&shared_in);
    pthread_barrier_destroy(&shared_out);
}

static void shared_kinds(void)
{
    lw_lock_opts sem = {.expire_ms = 10000, .permits = 3};
    lw_lock_opts rd = {.expire_ms = 10000, .flags = LW_LOCK_READ};

    shared_kind(&sem, "semaphore", 3);
    shared_kind(&rd, "read", -1);
}

/* A held lock with a dead and a live waiter, inspected, then broken. */
static void held_waiters_unlock(void)
{
    static const char dead[] = "deaddeaddeaddeaddeaddeaddeaddead:1|10000";
    struct ctl_run r;
    struct waiter w;
    lw_guard g;
    uint64_t fence;
    char token[128];
    const jv *ws, *fj;
    int64_t t_unlock;
    jv *j;

    CHECK_RC(lock_str(&g, "stock:42", 10000, 0), LW_OK);
    fence = lw_fence();
    snprintf(token, sizeof token, "%s", value_of("lock:stock:42"));
    CHECK(token[0] != '\0');
    /* A waiter that died 5 s ago: in the queue, no alive key. */
    CHECK(rh_cmd_int(&srv, "ZADD {lock:stock:42}:q %lld %s",
                     server_time_us() - 5000000, dead) == 1);
    waiter_start(&w, "stock:42");
    queue_len = 2;
    CHECK(wait_until(queue_has, "{lock:stock:42}:q", 5000) >= 0);
    sleep_ms(20); /* past LOCKWEAVE_HANDOFF_MS: the waiter is handed it */

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", "stock:42", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "held     yes") != NULL);
    CHECK(strstr(r.out, "waiters  2") != NULL);
    CHECK(strstr(r.out, "1  dead") != NULL);
    CHECK(strstr(r.out, "2  alive") != NULL);
    ctl_run_free(&r);

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "inspect", "stock:42",
            NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_bool(j, "held"), 1);
    CHECK_STR(jv_str(j, "topology"), "single");
    CHECK_RANGE(jv_int(j, "ttl_ms"), 1, 10000);
    fj = jv_get(j, "fence");
    CHECK_STR(jv_str(fj, "counter"), "{lockweave}lock:fences");
    /* Nothing was locked since: the counter is the holder's fence, or one
     * past it for the waiter's first, busy, try (its INCR leaves a gap). */
    CHECK_RANGE(jv_int(fj, "counter_value"), (long long)fence,
                (long long)fence + 1);
    ws = jv_get(j, "waiters");
    CHECK(ws != NULL && ws->type == 'a' && ws->n == 2);
    CHECK_EQ(jv_int(ws->items[0], "position"), 1);
    CHECK_EQ(jv_bool(ws->items[0], "alive"), 0);
    CHECK_RANGE(jv_int(ws->items[0], "waited_ms"), 4900, 60000);
    CHECK_EQ(jv_int(ws->items[0], "lease_ms"), 10000);
    CHECK_EQ(jv_bool(ws->items[1], "alive"), 1);
    CHECK_RANGE(jv_int(ws->items[1], "waited_ms"), 0, 4899);
    CHECK_EQ(jv_int(ws->items[1], "lease_ms"), 10000);
    jv_free(j);
    ctl_run_free(&r);

    /* Not a terminal, no --yes: refused before anything is touched. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "unlock", "--force", "stock:42",
            NULL);
    CHECK_EQ(r.status, 5);
    CHECK(strstr(r.err, "--yes") != NULL);
    CHECK_STR(value_of("lock:stock:42"), token);
    ctl_run_free(&r);
    /* Declined at the terminal. */
    ctl_run(&r, srv.url, CTL_IN_TTY, "n\n", "unlock", "--force", "stock:42",
            NULL);
    CHECK_EQ(r.status, 5);
    CHECK(strstr(r.err, "[y/N]") != NULL);
    CHECK_STR(value_of("lock:stock:42"), token);
    ctl_run_free(&r);

    /* Broken: the release script hands the lock to the live waiter at
     * once, skipping the dead one. */
    t_unlock = now_ms();
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "unlock", "--force",
            "--yes", "stock:42", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "result"), "unlocked");
    CHECK_EQ(jv_int(j, "waiters"), 2);
    jv_free(j);
    ctl_run_free(&r);
    CHECK(strcmp(value_of("lock:stock:42"), "") != 0);
    CHECK(strcmp(value_of("lock:stock:42"), token) != 0);
    CHECK_EQ(rh_cmd_int(&srv, "ZCARD {lock:stock:42}:q"), 0);
    CHECK(wait_until(waiter_done, &w, 5000) >= 0);
    CHECK_RC(w.rc, LW_OK);
    printf("waiter had the lock %lld ms after the unlock began\n",
           (long long)(w.got_ms - t_unlock));
    CHECK_RANGE(w.got_ms - t_unlock, 0, 3000);
    /* The holder learns it lost the lock. */
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
    __atomic_store_n(&w.release, 1, __ATOMIC_RELEASE);
    CHECK(pthread_join(w.th, NULL) == 0);
    CHECK_RC(w.left, LW_OK);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:stock:42"), 0);
}

/* While the prompt waits, the lock is released and taken again: the
 * answer "y" must not break the new holder's lock. */
static lw_guard *changing;
static void change_hands(void)
{
    CHECK_RC(lw_guard_leave(changing), LW_OK);
    CHECK_RC(lock_str(changing, "swap:1", 10000, 0), LW_OK);
}

static void changed_hands(void)
{
    struct ctl_run r;
    lw_guard g;
    char first[128];

    CHECK_RC(lock_str(&g, "swap:1", 10000, 0), LW_OK);
    snprintf(first, sizeof first, "%s", value_of("lock:swap:1"));
    changing = &g;
    ctl_before_answer = change_hands;
    ctl_run(&r, srv.url, CTL_IN_TTY, "y\n", "unlock", "--force", "swap:1",
            NULL);
    ctl_before_answer = NULL;
    CHECK_EQ(r.status, 6);
    CHECK(strstr(r.out, "changed hands") != NULL);
    ctl_run_free(&r);
    CHECK(strcmp(value_of("lock:swap:1"), "") != 0);
    CHECK(strcmp(value_of("lock:swap:1"), first) != 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* Confirmed at the terminal, with nothing in between: unlocked. */
    CHECK_RC(lock_str(&g, "swap:1", 10000, 0), LW_OK);
    ctl_run(&r, srv.url, CTL_IN_TTY, "yes\n", "unlock", "--force", "swap:1",
            NULL);
    CHECK_EQ(r.status, 0);
    ctl_run_free(&r);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:swap:1"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_ELOST);
}

/* A run-once mark (REDIS_ONCE's guard): running, inspected; done,
 * inspected; its removal asked for at the terminal, saying that the body
 * may run again, and done. */
static void once_marks(void)
{
    lw_lock_opts o = {
        .expire_ms = 10000, .max_renew = -1, .once_window_ms = 60000};
    struct ctl_run r;
    lw_guard g;
    const jv *oj;
    jv *j;

    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "order:7");
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    /* Running: a mark that a run holds, not a mutex; its holder known. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", "order:7", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "once     running") != NULL);
    CHECK(strstr(r.out, "holder   process") != NULL);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "inspect", "order:7",
            NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "kind"), "once");
    oj = jv_get(j, "once");
    CHECK(oj != NULL);
    CHECK_STR(jv_str(oj, "state"), "running");
    CHECK(jv_get(oj, "result") == NULL);
    CHECK_RANGE(jv_int(j, "ttl_ms"), 1, 10000);
    jv_free(j);
    ctl_run_free(&r);
    lw_once_done_i64(&g, -42);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* Done: its result, and the rest of its window. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", "order:7", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "once     done: its run returned -42,") != NULL);
    CHECK(strstr(r.out, "holder   ") == NULL); /* its run has ended */
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "inspect", "order:7",
            NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "kind"), "once");
    CHECK_EQ(jv_bool(j, "held"), 1);
    oj = jv_get(j, "once");
    CHECK(oj != NULL);
    CHECK_STR(jv_str(oj, "state"), "done");
    CHECK_STR(jv_str(oj, "result"), "i:-42");
    CHECK_RANGE(jv_int(j, "ttl_ms"), 1, 60000);
    jv_free(j);
    ctl_run_free(&r);

    /* Not a terminal, no --yes: refused; declined at the terminal, told
     * what removing it allows: the mark stays. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "unlock", "--force", "order:7",
            NULL);
    CHECK_EQ(r.status, 5);
    CHECK(strstr(r.err, "--yes") != NULL);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_TTY, "n\n", "unlock", "--force", "order:7",
            NULL);
    CHECK_EQ(r.status, 5);
    CHECK(strstr(r.err, "a done run-once mark: its run returned i:-42") !=
          NULL);
    CHECK(strstr(r.err, "run the body again") != NULL);
    CHECK(strstr(r.err, "[y/N]") != NULL);
    ctl_run_free(&r);
    CHECK(strncmp(value_of("lock:order:7"), "done:i:-42 ", 11) == 0);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "order:7");
    CHECK_RC(lw_guard_enter(&g), LW_EDONE);
    lw_guard_cleanup(&g);

    /* Confirmed: gone, and the next call runs the body again. */
    ctl_run(&r, srv.url, CTL_IN_TTY, "y\n", "unlock", "--force", "order:7",
            NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "runs the body again") != NULL);
    ctl_run_free(&r);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:order:7"), 0);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "order:7");
    CHECK_RC(lw_guard_enter(&g), LW_OK);
    lw_once_done_i64(&g, 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "unlock", "--force",
            "--yes", "order:7", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "result"), "unlocked");
    CHECK_STR(jv_str(j, "once"), "done");
    jv_free(j);
    ctl_run_free(&r);
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS lock:order:7"), 0);
}

#define BULK 500
static const char binkey[] = "bin\x01\n\xff\x1b[31m";
#define BINKEY_SHOWN "\"bin\\x01\\x0a\\xff\\x1b[31m\""

/* 500 locks to list among 500 others and every kind of companion key. */
static void list_many(void)
{
    static const char tok[] = "0123456789abcdef0123456789abcdef:7";
    struct ctl_run r;
    char seen[BULK] = {0};
    lw_guard g;
    const jv *locks;
    jv *j;
    int lines = 0;

    for (int i = 0; i < BULK; i++) {
        CHECK(rh_cmd_int(&srv, "EXISTS lock:bulk:%d", i) == 0);
        freeReplyObject(rh_cmd(&srv, "SET lock:bulk:%d %s PX 60000", i, tok));
        freeReplyObject(rh_cmd(&srv, "SET lock:other:%d %s PX 60000", i, tok));
    }
    /* Companions of bulk:0 as lockweave names them: a queue of 3, an alive
     * key, a mailbox, a receipt; the fence counter exists already. */
    for (int i = 0; i < 3; i++) {
        char member[64];
        snprintf(member, sizeof member, "%.32s:%d|10000", tok, i);
        CHECK_EQ(rh_cmd_int(&srv, "ZADD {lock:bulk:0}:q %d %s", i, member), 1);
    }
    freeReplyObject(rh_cmd(&srv, "SET {lock:bulk:0}:w:%s 1 PX 60000", tok));
    freeReplyObject(rh_cmd(&srv, "RPUSH {lock:bulk:0}:w:%s:g w", tok));
    freeReplyObject(rh_cmd(&srv, "SET {lock:bulk:0}:w:%s:rel 1 PX 60000", tok));
    CHECK_EQ(rh_cmd_int(&srv, "EXISTS {lockweave}lock:fences"), 1);
    CHECK_RC(lw_lock(&g, binkey, sizeof binkey - 1,
                     &(lw_lock_opts){.expire_ms = 60000}),
             LW_OK);

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "list", "bulk:*", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    locks = jv_get(j, "locks");
    CHECK(locks != NULL && locks->type == 'a');
    CHECK_EQ(locks->n, BULK);
    CHECK_EQ(jv_int(j, "held"), BULK);
    for (size_t i = 0; i < locks->n; i++) {
        const char *k = jv_str(locks->items[i], "key");
        int n = -1;
        CHECK_MSG(sscanf(k, "bulk:%d", &n) == 1 && n >= 0 && n < BULK &&
                      !seen[n],
                  "unexpected or repeated key %s", k);
        seen[n] = 1;
        CHECK_RANGE(jv_int(locks->items[i], "ttl_ms"), 1, 60000);
        CHECK_EQ(jv_int(locks->items[i], "waiters"), n == 0 ? 3 : 0);
    }
    jv_free(j);
    ctl_run_free(&r);

    /* People's output: one line per lock and a count. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--scan-count", "7", "list",
            "bulk:*", NULL);
    CHECK_EQ(r.status, 0);
    for (const char *p = r.out; (p = strstr(p, "\"bulk:")) != NULL; p++)
        lines++;
    CHECK_EQ(lines, BULK);
    CHECK(strstr(r.out, "500 locks held") != NULL);
    ctl_run_free(&r);

    /* Whole keys: every lock key, none of the companions. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "--raw", "list", "*",
            NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    locks = jv_get(j, "locks");
    CHECK_EQ(locks->n, 2 * BULK + 1);
    for (size_t i = 0; i < locks->n; i++)
        CHECK_MSG(jv_str(locks->items[i], "redis_key")[0] != '{',
                  "companion listed: %s", jv_str(locks->items[i], "redis_key"));
    jv_free(j);
    ctl_run_free(&r);

    /* A binary key: escaped for people, exact in JSON's _hex. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "list", "bin*", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(ctl_printable(r.out, r.outlen));
    CHECK(strstr(r.out, BINKEY_SHOWN) != NULL);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "list", "bin*", NULL);
    j = ctl_json(&r);
    locks = jv_get(j, "locks");
    CHECK_EQ(locks->n, 1);
    CHECK_STR(jv_str(locks->items[0], "key_hex"), "62696e010aff1b5b33316d");
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--escaped", "inspect",
            "bin\\x01\\x0a\\xff\\x1b[31m", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(ctl_printable(r.out, r.outlen));
    ctl_run_free(&r);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "list", "nothing:*", NULL);
    CHECK_EQ(r.status, 1);
    ctl_run_free(&r);
}

/* list finds the locks of kinds several hold at once: a semaphore (its key a
 * sorted set) and a read lock (its holders in the readers' set), each held
 * while someone holds it and shown with its kind and holders. */
static void list_shared(void)
{
    lw_lock_opts sem = {.expire_ms = 10000, .permits = 3};
    lw_lock_opts rd = {.expire_ms = 10000, .flags = LW_LOCK_READ};
    struct ctl_run r;
    lw_guard gs, gr;
    const jv *locks;
    jv *j;

    CHECK_RC(lw_lock(&gs, "sem:1", 5, &sem), LW_OK);
    CHECK_RC(lw_lock(&gr, "sem:2", 5, &rd), LW_OK);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "list", "sem:*", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "\"sem:1\"  semaphore, 1 of 3 permits, ") != NULL);
    CHECK(strstr(r.out, "\"sem:2\"  read lock, 1 reader, ") != NULL);
    CHECK(strstr(r.out, "2 locks held") != NULL);
    ctl_run_free(&r);

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "list", "sem:*", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_EQ(jv_int(j, "held"), 2);
    locks = jv_get(j, "locks");
    CHECK(locks != NULL && locks->type == 'a' && locks->n == 2);
    CHECK_STR(jv_str(locks->items[0], "key"), "sem:1");
    CHECK_STR(jv_str(locks->items[0], "kind"), "semaphore");
    CHECK_EQ(jv_int(locks->items[0], "holders"), 1);
    CHECK_EQ(jv_int(locks->items[0], "permits"), 3);
    CHECK_RANGE(jv_int(locks->items[0], "ttl_ms"), 1, 10000);
    CHECK_STR(jv_str(locks->items[1], "key"), "sem:2");
    CHECK_STR(jv_str(locks->items[1], "kind"), "read");
    CHECK_EQ(jv_int(locks->items[1], "holders"), 1);
    CHECK(jv_get(locks->items[1], "permits") == NULL);
    CHECK_RANGE(jv_int(locks->items[1], "ttl_ms"), 1, 10000);
    jv_free(j);
    ctl_run_free(&r);

    /* A mutex says its kind in JSON too. */
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "list", "bulk:1", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    locks = jv_get(j, "locks");
    CHECK(locks != NULL && locks->n == 1);
    CHECK_STR(jv_str(locks->items[0], "kind"), "mutex");
    CHECK_EQ(jv_int(locks->items[0], "holders"), 1);
    jv_free(j);
    ctl_run_free(&r);

    /* Given back: the semaphore's key may stay (it records N), but no
     * permit is held and nothing is listed. */
    CHECK_RC(lw_guard_leave(&gr), LW_OK);
    CHECK_RC(lw_guard_leave(&gs), LW_OK);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "list", "sem:*", NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.out, "0 locks held") != NULL);
    ctl_run_free(&r);
}

static void bad_config_and_usage(void)
{
    static const struct {
        const char *url;
        int status;
    } cases[] = {
        {"redis://alice:s3cret@127.0.0.1:99999", 4},
        {"http://alice:s3cret@127.0.0.1:6379", 4},
        {"redis://127.0.0.1:1\x1b[2J/0", 4},
        {"redis://alice:s3cret@127.0.0.1:1", 3},
        {"redis://alice:s3cret@127.0.0.1:1,redis://127.0.0.1:2", 3},
    };
    struct ctl_run r;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ctl_run(&r, cases[i].url, CTL_IN_NULL, NULL, "inspect", "k", NULL);
        CHECK_EQ(r.status, cases[i].status);
        CHECK(strstr(r.err, "s3cret") == NULL &&
              strstr(r.out, "s3cret") == NULL);
        CHECK(ctl_printable(r.err, r.errlen));
        ctl_run_free(&r);
        ctl_run(&r, cases[i].url, CTL_IN_NULL, NULL, "list", NULL);
        CHECK_EQ(r.status, cases[i].status);
        CHECK(strstr(r.err, "s3cret") == NULL &&
              strstr(r.out, "s3cret") == NULL);
        ctl_run_free(&r);
        ctl_run(&r, cases[i].url, CTL_IN_NULL, NULL, "unlock", "-f", "-y", "k",
                NULL);
        CHECK_EQ(r.status, cases[i].status);
        ctl_run_free(&r);
    }
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, NULL);
    CHECK_EQ(r.status, 2);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "frob", NULL);
    CHECK_EQ(r.status, 2);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "unlock", "--yes", "k", NULL);
    CHECK_EQ(r.status, 2);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", NULL);
    CHECK_EQ(r.status, 2);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--bogus", "list", NULL);
    CHECK_EQ(r.status, 2);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--escaped", "inspect", "a\\q",
            NULL);
    CHECK_EQ(r.status, 2);
    ctl_run_free(&r);
    ctl_run(&r, NULL, CTL_IN_NULL, NULL, "--help", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "exit status") != NULL);
    ctl_run_free(&r);
}

/* --prefix: the key names of a program that configured another prefix. */
static void other_prefix(void)
{
    struct ctl_run r;
    lw_config cfg;
    lw_guard g;
    jv *j;

    lw_config_init(&cfg);
    cfg.redis_url = srv.url;
    cfg.key_prefix = "app:";
    CHECK_RC(lw_configure(&cfg), LW_OK);
    CHECK_RC(lock_str(&g, "job", 10000, 0), LW_OK);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", "job", NULL);
    CHECK_EQ(r.status, 1);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "--prefix",
            "app:", "inspect", "job", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK_STR(jv_str(j, "redis_key"), "app:job");
    CHECK_STR(jv_str(jv_get(j, "fence"), "counter"), "{lockweave}app:fences");
    CHECK_EQ(jv_int(jv_get(j, "fence"), "counter_value"),
             (long long)lw_fence());
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--raw", "inspect", "app:job",
            NULL);
    CHECK_EQ(r.status, 0);
    ctl_run_free(&r);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    use_server(&srv);
}

/* ---- who holds ------------------------------------------------------ */

static void holder_expect(const char *key, long tid, int connected)
{
    char host[65] = "", text[256];
    struct ctl_run r;
    const jv *h;
    jv *j;

    gethostname(host, sizeof host - 1);
    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "inspect", key, NULL);
    CHECK_EQ(r.status, 0);
    if (connected) {
        snprintf(text, sizeof text,
                 "holder   process %ld, thread %ld, on host \"%s\"",
                 (long)getpid(), tid, host);
        CHECK_MSG(strstr(r.out, text) != NULL, "no \"%s\" in:\n%s", text,
                  r.out);
        CHECK(strstr(r.out, " is open, idle ") != NULL);
    } else {
        CHECK(strstr(r.out, "holder   not known: no connection of its "
                            "thread is open") != NULL);
    }
    ctl_run_free(&r);

    ctl_run(&r, srv.url, CTL_IN_NULL, NULL, "--json", "inspect", key, NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    h = jv_get(j, "holder");
    CHECK(h != NULL && h->type == 'o');
    CHECK_EQ(jv_bool(h, "connected"), connected);
    if (connected) {
        CHECK_EQ(jv_int(h, "pid"), (long long)getpid());
        CHECK_EQ(jv_int(h, "thread"), (long long)tid);
        CHECK_STR(jv_str(h, "host"), host);
        CHECK(strncmp(jv_str(h, "addr"), "127.0.0.1:", 10) == 0);
        CHECK_RANGE(jv_int(h, "connected_s"), 0, 600);
        CHECK_RANGE(jv_int(h, "idle_s"), 0, 600);
    } else {
        CHECK(jv_get(h, "pid") == NULL);
    }
    jv_free(j);
    ctl_run_free(&r);
}

static long my_tid(void)
{
    return (long)syscall(SYS_gettid);
}

/* A thread that takes "who:2" while the main thread holds it: handed on
 * in the process, its token stays the one the main thread took. */
static void *second_holder(void *arg)
{
    long tid = *(long *)arg;
    lw_guard g;

    CHECK_RC(lock_str(&g, "who:2", 10000, 10000), LW_OK);
    /* Handed on: inspect names this process, and the thread that took it
     * from Redis, not this one. */
    holder_expect("who:2", tid, 1);
    CHECK(tid != my_tid());
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static uint64_t contended_before;

static int cohort_waiting(void *arg)
{
    lw_stats st;

    (void)arg;
    lw_stats_get(&st);
    return st.contended > contended_before;
}

/* No client of the server is named with tag (a token's first 16 digits). */
static int tag_gone(void *arg)
{
    redisReply *r = rh_cmd(&srv, "CLIENT LIST");
    int gone;

    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    gone = strstr(r->str, (const char *)arg) == NULL;
    freeReplyObject(r);
    return gone;
}

/*
 * inspect says which process and thread hold a lock, on which host: this
 * process's pid and host, and this thread's id, from the name the
 * library gave its connection; in --json too.  A lock handed between two
 * threads shows the one that took it from Redis.  A holder whose process
 * died shows as gone.
 */
static void holder_shown(void)
{
    lw_lock_opts o = {.expire_ms = 60000};
    pthread_t t;
    lw_guard g;
    long tid = my_tid();

    CHECK_RC(lock_str(&g, "who:1", 10000, 0), LW_OK);
    holder_expect("who:1", tid, 1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* Threads of this process hand the lock on. */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "15", 1);
    use_server(&srv);
    CHECK_RC(lock_str(&g, "who:2", 10000, 0), LW_OK);
    lw_stats st;
    lw_stats_get(&st);
    contended_before = st.contended;
    CHECK(pthread_create(&t, NULL, second_holder, &tid) == 0);
    /* The thread waits in the process's cohort before this one leaves. */
    CHECK(wait_until(cohort_waiting, NULL, 5000) >= 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(pthread_join(t, NULL) == 0);
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    use_server(&srv);

    /* A process that died holding it: no connection of its is open. */
    die_holding(&srv, "who:3", &o);
    char tag[17];
    snprintf(tag, sizeof tag, "%.16s", value_of("lock:who:3"));
    CHECK(wait_until(tag_gone, tag, 5000) >= 0);
    holder_expect("who:3", 0, 0);
}

/* An ACL user allowed what inspect and list read, and no more: the tool's
 * connections are not refused for the rights a locking process needs,
 * and inspect says it cannot tell who holds (no CLIENT LIST). */
static void read_only_user(void)
{
    struct ctl_run r;
    lw_guard g;
    char url[128];
    jv *j;

    snprintf(url, sizeof url, "redis://viewer:pw@127.0.0.1:%d", srv.port);
    CHECK_RC(lock_str(&g, "view:1", 10000, 0), LW_OK);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "inspect", "view:1", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "holder   not known: the server did not list its "
                        "clients") != NULL);
    ctl_run_free(&r);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "--json", "inspect", "view:1", NULL);
    CHECK_EQ(r.status, 0);
    j = ctl_json(&r);
    CHECK(jv_get(j, "holder") != NULL && jv_get(j, "holder")->type == 'z');
    jv_free(j);
    ctl_run_free(&r);
    ctl_run(&r, url, CTL_IN_NULL, NULL, "list", "view:*", NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "view:1") != NULL);
    ctl_run_free(&r);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
}

int main(int argc, char **argv)
{
    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    /* viewer may read keys and the clock, nothing else. */
    static const char *const acl[] = {"--user", "viewer", "on",    ">pw",
                                      "~*",     "+@read", "+time", NULL};
    rh_opts o;

    ctl_init(argc, argv);
    rh_opts_init(&o);
    o.extra_args = acl;
    CHECK(rh_start(&srv, &o) == 0);
    use_server(&srv);
    free_key();
    held_waiters_unlock();
    changed_hands();
    once_marks();
    list_many();
    list_shared();
    other_prefix();
    shared_kinds();
    holder_shown();
    read_only_user();
    bad_config_and_usage();
    lw_shutdown();
    rh_stop(&srv);
    printf("ctl_single: ok\n");
    return 0;
}

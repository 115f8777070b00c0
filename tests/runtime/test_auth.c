/* Credentials and database from the URL: an ACL user (AUTH user pass) gets
 * in, a wrong password or unknown user is LW_EAUTH (body not run), and the
 * /db path selects the database the lock key lands in; a database the
 * server does not have is LW_ECONFIG, logged as SELECT's refusal.  A user
 * denied BLPOP still waits for a busy lock, by polling, and is never handed a
 * lock it would hear of only at its next poll. */
#include "util.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static rh_server srv;

static void url_for(char *buf, size_t n, const char *userinfo, int db)
{
    if (db >= 0)
        snprintf(buf, n, "redis://%s127.0.0.1:%d/%d", userinfo, srv.port, db);
    else
        snprintf(buf, n, "redis://%s127.0.0.1:%d", userinfo, srv.port);
}

static long long exists_in_db(int db, const char *key)
{
    redisReply *r = rh_cmd(&srv, "SELECT %d", db);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    long long n = rh_cmd_int(&srv, "EXISTS %s", key);
    r = rh_cmd(&srv, "SELECT 0");
    freeReplyObject(r);
    return n;
}

static void acl_user(void)
{
    char url[256];
    url_for(url, sizeof url, "alice:secret@", -1);
    use_url(url, 1000, 2000);
    lw_guard g;
    CHECK_RC(lock_str(&g, "acl", 5000, 1000), LW_OK);
    CHECK_EQ(exists_in_db(0, "lock:acl"), 1);
    /* The server agrees alice is connected. */
    redisReply *r = rh_cmd(&srv, "CLIENT LIST");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    CHECK_MSG(strstr(r->str, "user=alice") != NULL, "no client as alice:\n%s",
              r->str);
    freeReplyObject(r);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(exists_in_db(0, "lock:acl"), 0);
}

static int mailbox_logs; /* log lines about the mailbox falling back */

static void count_mailbox_logs(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    if (strstr(msg, "BLPOP") != NULL && strstr(msg, "poll") != NULL)
        __atomic_add_fetch(&mailbox_logs, 1, __ATOMIC_RELAXED);
}

static void *wait_denied(void *arg)
{
    lw_guard g;
    int *rc = arg;

    *rc = lock_str(&g, "noblock", 5000, 5000);
    if (*rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

/* "nopop" may run everything but BLPOP: a waiter cannot block on its
 * mailbox, so it polls, and still gets the lock when the holder leaves —
 * both times, with one log line for the process, not one per wait. */
static void blpop_denied(void)
{
    char url[256];
    url_for(url, sizeof url, "nopop:secret@", -1);
    use_url(url, 1000, 2000);
    lw_set_logger(count_mailbox_logs, NULL, LW_LOG_INFO);
    for (int i = 0; i < 2; i++) {
        lw_guard g;
        pthread_t t;
        int rc = -100;
        CHECK_RC(lock_str(&g, "noblock", 5000, 0), LW_OK);
        CHECK_EQ(pthread_create(&t, NULL, wait_denied, &rc), 0);
        sleep_ms(300); /* the waiter queues, then polls */
        CHECK_RC(lw_guard_leave(&g), LW_OK);
        CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_RC(rc, LW_OK);
    }
    CHECK_EQ(__atomic_load_n(&mailbox_logs, __ATOMIC_RELAXED), 1);
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
}

/* The value of the one alive key of the queue of "passover" ("" if none). */
static void alive_value(char *out, size_t n)
{
    redisReply *keys = rh_cmd(&srv, "KEYS {lock:passover}:w:*");
    out[0] = '\0';
    CHECK(keys && keys->type == REDIS_REPLY_ARRAY);
    if (keys->elements == 1) {
        redisReply *v = rh_cmd(&srv, "GET %s", keys->element[0]->str);
        if (v && v->type == REDIS_REPLY_STRING)
            snprintf(out, n, "%s", v->str);
        freeReplyObject(v);
    }
    freeReplyObject(keys);
}

static int polling(void *arg)
{
    char v[8];
    (void)arg;
    alive_value(v, sizeof v);
    return strcmp(v, "p") == 0;
}

/* A waiter that polls (here: a child as "nopop") is passed over by a
 * release, which leaves the lock free for its next poll instead of handing
 * it a lock that would sit idle until then.  The child is stopped right
 * after a poll, so no poll of its own can take the lock between the release
 * and the look at the key: the key must be gone, not the child's. */
static void pollers_passed_over(void)
{
    char url[256];
    lw_guard g;
    pid_t pid;
    int status;

    url_for(url, sizeof url, "alice:secret@", -1);
    use_url(url, 1000, 2000);
    CHECK_RC(lock_str(&g, "passover", 30000, 0), LW_OK);
    url_for(url, sizeof url, "nopop:secret@", -1);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        lw_guard c;
        use_url(url, 1000, 2000);
        int rc = lock_str(&c, "passover", 5000, 20000);
        if (rc == LW_OK)
            rc = lw_guard_leave(&c);
        _exit(rc == LW_OK ? 0 : 1);
    }
    CHECK(wait_until(polling, NULL, 10000) >= 0);
    CHECK_EQ(kill(pid, SIGSTOP), 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "passover"), 0);
    redisReply *boxes = rh_cmd(&srv, "KEYS {lock:passover}:w:*:g");
    CHECK(boxes && boxes->type == REDIS_REPLY_ARRAY);
    CHECK_EQ(boxes->elements, 0);
    freeReplyObject(boxes);
    CHECK_EQ(kill(pid, SIGCONT), 0);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void refused(const char *userinfo)
{
    char url[256];
    url_for(url, sizeof url, userinfo, -1);
    use_url(url, 1000, 2000);
    for (int i = 0; i < 2; i++) {
        lw_guard g;
        int64_t t0 = now_ms();
        int rc = lock_str(&g, "acl", 5000, 2000);
        printf("%s: %s after %lld ms\n", userinfo, lw_strerror(rc),
               (long long)(now_ms() - t0));
        CHECK_RC(rc, LW_EAUTH);
        CHECK_RC(lw_last_error(), LW_EAUTH);
        if (rc == LW_OK)
            lw_guard_leave(&g);
    }
    CHECK_EQ(exists_in_db(0, "lock:acl"), 0);
}

static void no_credentials(void)
{
    /* The default user has a password here: no AUTH at all is refused. */
    char url[256];
    url_for(url, sizeof url, "", -1);
    use_url(url, 1000, 2000);
    lw_guard g;
    int rc = lock_str(&g, "acl", 5000, 500);
    printf("no credentials: %s\n", lw_strerror(rc));
    CHECK(rc != LW_OK);
    CHECK_MSG(rc == LW_EAUTH || rc == LW_EREDIS, "got %s", lw_strerror(rc));
}

static char said[4096];

static void keep_said(int level, const char *msg, void *ud)
{
    size_t n = strlen(said);

    (void)level;
    (void)ud;
    snprintf(said + n, sizeof said - n, "%s\n", msg);
}

static void clear_said(void)
{
    said[0] = '\0';
}

static void select_db(void)
{
    char url[256];
    url_for(url, sizeof url, "alice:secret@", 3);
    use_url(url, 1000, 2000);
    lw_guard g;
    CHECK_RC(lock_str(&g, "in-db3", 5000, 1000), LW_OK);
    CHECK_EQ(exists_in_db(3, "lock:in-db3"), 1);
    CHECK_EQ(exists_in_db(0, "lock:in-db3"), 0);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(exists_in_db(3, "lock:in-db3"), 0);

    /* A database the server does not have: refused by SELECT, a bad URL
     * (LW_ECONFIG, said as such), not refused credentials. */
    url_for(url, sizeof url, "alice:secret@", 99);
    use_url(url, 1000, 2000);
    clear_said();
    lw_set_logger(keep_said, NULL, LW_LOG_WARN);
    int rc = lock_str(&g, "in-db99", 5000, 500);
    printf("db 99 of 16: %s\n", lw_strerror(rc));
    CHECK_RC(rc, LW_ECONFIG);
    CHECK_RC(lw_last_error(), LW_ECONFIG);
    CHECK_MSG(strstr(said, "SELECT 99 refused: ERR DB index is out of "
                           "range") != NULL,
              "log:\n%s", said);
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
}

int main(void)
{
    /* alice may do everything; the default user needs a password the
     * runtime is never told. */
    static const char *const acl[] = {
        "--user", "alice", "on",      ">secret", "~*",    "+@all",  "--user",
        "nopop",  "on",    ">secret", "~*",      "+@all", "-blpop", NULL};
    rh_opts o;

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    rh_opts_init(&o);
    o.password = "adminpw";
    o.extra_args = acl;
    CHECK_EQ(rh_start(&srv, &o), 0);

    acl_user();
    blpop_denied();
    pollers_passed_over();
    refused("alice:wrong@");
    refused("mallory:secret@");
    no_credentials();
    select_db();

    lw_shutdown();
    rh_stop(&srv);
    printf("auth: ok\n");
    return 0;
}

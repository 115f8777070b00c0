/*
 * Least-privilege ACL users (docs/operations.md, "Credentials and ACLs").
 * A user that may not run a command a lock needs is refused when its
 * connection is made, before any body runs: LW_EAUTH from lw_guard_enter()
 * and a log line naming the command (EVAL and EVALSHA; ZADD and INCRBY,
 * which only scripts run; a key pattern that leaves out the companion
 * keys).  The ACL the manual gives, read from it, works for every kind of
 * lock: a mutex renewed by the watchdog, read and write locks, a
 * semaphore, a minimum hold, several keys, a waiter handed the lock
 * through Redis and a thread handed it in the process.  And every command
 * the scripts call is one the connect-time check asks about, and one the
 * manual's ACL allows.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scripts.h"
#include "net/handshake.h"
#include "util.h"

static rh_server srv;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char logs[16384];

static void keep_log(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&mu);
    size_t n = strlen(logs);
    snprintf(logs + n, sizeof logs - n, "%s\n", msg);
    pthread_mutex_unlock(&mu);
}

static int logged(const char *what)
{
    pthread_mutex_lock(&mu);
    int found = strstr(logs, what) != NULL;
    pthread_mutex_unlock(&mu);
    return found;
}

static void use_user(const char *user)
{
    char url[128];

    snprintf(url, sizeof url, "redis://%s:pw@127.0.0.1:%d", user, srv.port);
    use_url(url, 1000, 2000);
    pthread_mutex_lock(&mu);
    logs[0] = '\0';
    pthread_mutex_unlock(&mu);
}

/* ---- the manual's ACL ---------------------------------------------------- */

/* The words of the manual's "ACL SETUSER locker ..." line, the password
 * ">password" made ">pw". */
static int doc_acl(char words[64][64])
{
    char line[2048];
    FILE *f = fopen(LW_DOCS_DIR "/operations.md", "r");
    int n = 0;

    CHECK_MSG(f != NULL, "cannot read %s/operations.md", LW_DOCS_DIR);
    char *at = NULL;

    while (at == NULL && fgets(line, sizeof line, f) != NULL)
        at = strstr(line, "ACL SETUSER locker ");
    CHECK_MSG(at != NULL, "no \"ACL SETUSER locker\" line in operations.md");
    fclose(f);
    for (char *w = strtok(at, " \n"); w != NULL && n < 64;
         w = strtok(NULL, " \n"))
        snprintf(words[n++], 64, "%s", strcmp(w, ">password") ? w : ">pw");
    return n;
}

static void make_locker(void)
{
    char words[64][64];
    const char *argv[64];
    size_t lens[64];
    int n = doc_acl(words);

    for (int i = 0; i < n; i++) {
        argv[i] = words[i];
        lens[i] = strlen(words[i]);
    }
    CHECK_EQ(rh_ok(rh_cmd_argv(&srv, n, argv, lens), "ACL SETUSER locker"), 0);
}

/* Whether the manual's ACL allows cmd ("+cmd" among its words). */
static int doc_allows(const char *cmd)
{
    char words[64][64], want[64];
    int n = doc_acl(words);

    snprintf(want, sizeof want, "+%s", cmd);
    for (int i = 0; i < n; i++)
        if (strcmp(words[i], want) == 0)
            return 1;
    return 0;
}

/* Every redis.call('x' and redis.pcall('x' of every script: asked about
 * at connect, and allowed by the manual's ACL. */
static void scripts_covered(void)
{
    int seen = 0;

    for (struct lw_script *const *s = lw__scripts; *s != NULL; s++) {
        for (const char *p = (*s)->text; (p = strstr(p, "redis.")) != NULL;
             p++) {
            char cmd[32];
            size_t n = 0;
            const char *q = p + 6;
            if (strncmp(q, "call('", 6) == 0)
                q += 6;
            else if (strncmp(q, "pcall('", 7) == 0)
                q += 7;
            else
                continue;
            while (islower((unsigned char)q[n]) && n < sizeof cmd - 1) {
                cmd[n] = q[n];
                n++;
            }
            cmd[n] = '\0';
            CHECK_MSG(lw__handshake_needs(cmd),
                      "a script calls %s, which "
                      "the connect-time ACL check does not ask about",
                      cmd);
            CHECK_MSG(doc_allows(cmd),
                      "a script calls %s, which the "
                      "manual's ACL does not allow",
                      cmd);
            seen++;
        }
    }
    CHECK(seen > 50);
    /* And what the lock's own requests send. */
    static const char *const plain[] = {"set",  "get",     "incr",
                                        "eval", "evalsha", "blpop"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        CHECK_MSG(doc_allows(plain[i]), "the manual's ACL lacks %s", plain[i]);
}

/* ---- refused at connect -------------------------------------------------- */

static void refused(const char *user, const char *said)
{
    int body = 0;

    use_user(user);
    for (int i = 0; i < 2; i++) {
        lw_guard g;
        int rc = lock_str(&g, "acl:x", 5000, 1000);
        if (rc == LW_OK) {
            body++;
            lw_guard_leave(&g);
        }
        CHECK_MSG(rc == LW_EAUTH, "%s: got %s; log:\n%s", user, lw_strerror(rc),
                  logs);
        CHECK_RC(lw_last_error(), LW_EAUTH);
    }
    CHECK_EQ(body, 0);
    CHECK_EQ(lock_exists(&srv, "acl:x"), 0);
    CHECK_MSG(logged(said), "%s: no \"%s\" in the log:\n%s", user, said, logs);
}

/* ---- the manual's ACL at work -------------------------------------------- */

static void *hold_permit(void *arg)
{
    lw_lock_opts o = lock_opts(5000, 2000, -1);
    pthread_barrier_t *b = arg;
    lw_guard g;

    o.permits = 2;
    CHECK_RC(lw_lock(&g, "acl:sem", 7, &o), LW_OK);
    pthread_barrier_wait(b);
    pthread_barrier_wait(b);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static void every_kind(void)
{
    lw_lock_opts o;
    lw_guard g, h, *both[2] = {&g, &h};
    pthread_barrier_t b;
    pthread_t t[2];

    /* A mutex, kept past its lease by the watchdog. */
    CHECK_RC(lock_str(&g, "acl:mutex", 400, 0), LW_OK);
    CHECK(lw_fence() > 0);
    sleep_ms(900);
    CHECK(lw_still_held());
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* A reader (entered twice: re-entry), renewed, then a writer. */
    o = lock_opts(400, 0, -1);
    o.flags = LW_LOCK_READ;
    CHECK_RC(lw_lock(&g, "acl:rw", 6, &o), LW_OK);
    CHECK_RC(lw_lock(&h, "acl:rw", 6, &o), LW_OK); /* re-entered */
    sleep_ms(900);
    CHECK(lw_still_held());
    CHECK_RC(lw_guard_leave(&h), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    o.flags = 0;
    CHECK_RC(lw_lock(&g, "acl:rw", 6, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* A semaphore of 2: two holders, a third refused. */
    pthread_barrier_init(&b, NULL, 3);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, hold_permit, &b) == 0);
    pthread_barrier_wait(&b);
    o = lock_opts(5000, 0, -1);
    o.permits = 2;
    CHECK_RC(lw_lock(&g, "acl:sem", 7, &o), LW_ETIMEOUT);
    pthread_barrier_wait(&b);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    pthread_barrier_destroy(&b);

    /* A minimum hold: the key stays after the release. */
    o = lock_opts(5000, 0, -1);
    o.hold_at_least_ms = 2000;
    CHECK_RC(lw_lock(&g, "acl:hold", 8, &o), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(lock_exists(&srv, "acl:hold"), 1);

    /* Several keys as one lock. */
    o = lock_opts(5000, 1000, -1);
    lw_guard_init(&g, &o);
    lw_guard_key_str(&g, "acl:b");
    lw_guard_init(&h, &o);
    lw_guard_key_str(&h, "acl:a");
    CHECK_RC(lw_guard_enter_all(both, 2), LW_OK);
    CHECK_EQ(lock_exists(&srv, "acl:a") + lock_exists(&srv, "acl:b"), 2);
    CHECK_RC(lw_guard_leave_all(both, 2), LW_OK);
}

struct waiter {
    int rc;
    int64_t got_ms;
};

static void *wait_for_it(void *arg)
{
    struct waiter *w = arg;
    lw_guard g;

    w->rc = lock_str(&g, "acl:handoff", 5000, 5000);
    w->got_ms = now_ms();
    if (w->rc == LW_OK)
        lw_guard_leave(&g);
    return NULL;
}

static int queued(void *arg)
{
    (void)arg;
    return rh_cmd_int(&srv, "ZCARD {lock:acl:handoff}:q") == 1;
}

/* A waiter in Redis's queue (blocked on its mailbox) is handed the lock by
 * the release, at once; then threads of one process hand it on. */
static void contended(void)
{
    struct waiter w = {.rc = 1};
    pthread_t t;
    lw_guard g;
    int64_t left_ms;

    CHECK_RC(lock_str(&g, "acl:handoff", 5000, 0), LW_OK);
    CHECK(pthread_create(&t, NULL, wait_for_it, &w) == 0);
    CHECK(wait_until(queued, NULL, 5000) >= 0);
    sleep_ms(50); /* blocked in BLPOP */
    left_ms = now_ms();
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_RC(w.rc, LW_OK);
    CHECK_RANGE(w.got_ms - left_ms, 0, 150); /* handed, not polled for */
    CHECK_MSG(!logged("BLPOP"), "log:\n%s", logs);

    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "15", 1);
    use_user("locker");
    w.rc = 1;
    CHECK_RC(lock_str(&g, "acl:handoff", 5000, 0), LW_OK);
    CHECK(pthread_create(&t, NULL, wait_for_it, &w) == 0);
    sleep_ms(100); /* waits in the process, behind this thread */
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_RC(w.rc, LW_OK);
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
}

int main(void)
{
    static const char *const acl[] = {
        "--user",     "noeval",   "on",     ">pw",     "~*",      "+@all",
        "-eval",      "-evalsha", "-fcall", "--user",  "nozadd",  "on",
        ">pw",        "~*",       "+@all",  "-zadd",   "--user",  "noincrby",
        "on",         ">pw",      "~*",     "+@all",   "-incrby", "--user",
        "narrowkeys", "on",       ">pw",    "~lock:*", "+@all",   NULL};
    rh_opts o;

    scripts_covered();
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    rh_opts_init(&o);
    o.extra_args = acl;
    CHECK_EQ(rh_start(&srv, &o), 0);
    make_locker();
    lw_set_logger(keep_log, NULL, LW_LOG_INFO);

    refused("noeval", "the ACL user noeval may not run EVALSHA (NOPERM");
    refused("nozadd", "the ACL user nozadd may not run ZADD");
    refused("noincrby", "the ACL user noincrby may not run INCRBY");
    refused("narrowkeys", "the ACL user narrowkeys may not run EVALSHA on "
                          "key {lock:lockweave-acl-check}:q");

    use_user("locker");
    every_kind();
    contended();
    CHECK_MSG(!logged("NOPERM") && !logged("may not run"), "log:\n%s", logs);

    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    lw_shutdown();
    rh_stop(&srv);
    printf("acl: ok\n");
    return 0;
}

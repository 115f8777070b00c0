/*
 * A release whose reply was lost is sent again (net/exchange.c replays it on a
 * new connection).  When the first run had handed the lock to a waiter, the
 * second finds the waiter's token in the key; the hand-off's receipt must
 * make it answer "released by me", not "another owner holds it" — or every
 * CLIENT KILL during a hand-off reports a spurious LW_ELOST (found by the
 * faults suite's client-kill case).
 *
 * The same when the first run only woke a young waiter ("w"): the woken
 * waiter (or anyone) may take the key before the replay arrives.
 *
 * And the hand-off message such a release writes is one the waiter can
 * read.
 *
 * The lost reply is played by hand: the release script is run once on the
 * harness's own connection with our token, exactly as lockweave sends it;
 * lockweave's own release, which follows, is then the "replay".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scripts.h"
#include "util.h"

static rh_server srv;

static void *waiter(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "rr", 5000, 20000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

static int queued(void *arg)
{
    (void)arg;
    return rh_cmd_int(&srv, "ZCARD {lock:rr}:q") == 1;
}

/* Run the release script with our token, as lockweave's first attempt. */
static long long release_by_hand(const char *token, const char *age_ms)
{
    const char *names[] = {"lock:rr", "{lock:rr}:q", "{lockweave}lock:fences"};
    const char *argv[] = {"EVAL",
                          lw__script_release.text,
                          "3",
                          names[0],
                          names[1],
                          names[2],
                          token,
                          "1000", /* mailbox ms */
                          age_ms, /* hand off to a waiter this old */
                          "{lock:rr}:w:",
                          "6000"};
    redisReply *r = rh_cmd_argv(&srv, 11, argv, NULL);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;

    if (r)
        freeReplyObject(r);
    return v;
}

/* Take "rr" (its token into token), start a waiter and let it queue. */
static void hold_with_waiter(lw_guard *g, char *token, size_t cap, pthread_t *t)
{
    redisReply *r;

    CHECK_RC(lock_str(g, "rr", 5000, 0), LW_OK);
    r = rh_cmd(&srv, "GET lock:rr");
    CHECK(r && r->type == REDIS_REPLY_STRING && r->len < cap);
    memcpy(token, r->str, r->len + 1);
    freeReplyObject(r);
    CHECK_EQ(pthread_create(t, NULL, waiter, NULL), 0);
    CHECK(wait_until(queued, NULL, 10000) >= 0);
}

/* The receipt a first run left for token: it must exist (1..6 s left). */
static void check_receipt(const char *token, char *receipt, size_t cap)
{
    snprintf(receipt, cap, "{lock:rr}:w:%s:rel", token);
    CHECK_RANGE(rh_cmd_int(&srv, "PTTL %s", receipt), 1, 6000);
}

/* The hand-off message, "g<fence> <entry score>", as the release script
 * writes it for a queued waiter (played by hand: no thread reads it first).
 * The fence must be written in digits: Lua prints numbers past 14 digits
 * as "1.7955509984812e+15", which the waiter cannot take as a grant. */
static void grant_message(void)
{
    redisReply *r;

    freeReplyObject(rh_cmd(&srv, "SET lock:rr mytoken PX 5000"));
    freeReplyObject(rh_cmd(&srv, "ZADD {lock:rr}:q 1234 fake|5000"));
    freeReplyObject(rh_cmd(&srv, "SET {lock:rr}:w:fake 1 PX 5000"));
    CHECK_EQ(release_by_hand("mytoken", "0"), 1);
    r = rh_cmd(&srv, "LPOP {lock:rr}:w:fake:g");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    printf("grant message: \"%s\"\n", r->str);
    size_t digits = strspn(r->str + 1, "0123456789");
    CHECK_MSG(r->str[0] == 'g' && digits >= 13 &&
                  strcmp(r->str + 1 + digits, " 1234") == 0,
              "grant message \"%s\"", r->str);
    freeReplyObject(r);
    r = rh_cmd(&srv, "GET lock:rr");
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "fake") == 0);
    freeReplyObject(r);
    freeReplyObject(rh_cmd(&srv, "DEL lock:rr {lock:rr}:w:fake"));
}

int main(void)
{
    lw_guard g;
    pthread_t t;
    char token[128], receipt[160];

    /* Threads of this process stand in for other processes' waiters in
     * Redis's queue: no hand-offs from thread to thread (test_cohort.c). */
    setenv("LOCKWEAVE_LOCAL_HANDOFFS", "0", 1);
    CHECK_EQ(rh_start(&srv, NULL), 0);
    use_server(&srv);
    hold_with_waiter(&g, token, sizeof token, &t);

    /* First run: deletes our key and hands it to the waiter. */
    CHECK_EQ(release_by_hand(token, "0"), 1);
    check_receipt(token, receipt, sizeof receipt);
    /* The replay, by hand, then by lockweave itself: ours, not lost. */
    CHECK_EQ(release_by_hand(token, "0"), 2);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK_EQ(pthread_join(t, NULL), 0);

    /* Without a receipt, a token that is not in the key is not ours. */
    CHECK_EQ(rh_cmd_int(&srv, "DEL %s", receipt), 1);
    CHECK_RC(lock_str(&g, "rr", 5000, 0), LW_OK);
    CHECK_EQ(release_by_hand(token, "0"), -1);
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    /* A first run that only wakes the waiter (it is younger than an hour),
     * then the key is taken before the replay. */
    hold_with_waiter(&g, token, sizeof token, &t);
    CHECK_EQ(release_by_hand(token, "3600000"), 1);
    check_receipt(token, receipt, sizeof receipt);
    CHECK_EQ(pthread_join(t, NULL), 0); /* woken: it took the key and left */
    CHECK_EQ(rh_cmd_int(&srv, "DEL lock:rr"), 0);
    freeReplyObject(rh_cmd(&srv, "SET lock:rr someone-else PX 5000"));
    CHECK_RC(lw_guard_leave(&g), LW_OK);

    grant_message();

    lw_shutdown();
    rh_stop(&srv);
    printf("release_retry: ok\n");
    return 0;
}

/*
 * Scripts run by SHA.  The runtime names each script by the SHA-1 it
 * computes itself, so it must be the name Redis gives the same text (or
 * every EVALSHA would meet NOSCRIPT and send the text again), and no
 * connection spends a round trip on SCRIPT LOAD: the first EVALSHA a server
 * does not know is answered NOSCRIPT, the text goes once as EVAL, and every
 * later call is an EVALSHA again.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/sha1.h"
#include "core/scripts.h"
#include "util.h"

static rh_server srv;

/* Calls of one command since the last CONFIG RESETSTAT (0 if never run). */
static long long calls(const char *cmd)
{
    return command_calls(&srv, &cmd, 1);
}

static void check_sha(struct lw_script *s)
{
    redisReply *r;
    const char *argv[] = {"SCRIPT", "LOAD", s->text};
    size_t lens[] = {6, 4, s->len};

    r = rh_cmd_argv(&srv, 3, argv, lens);
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40);
    CHECK_MSG(strcmp(r->str, lw__script_sha(s)) == 0,
              "Redis names the script %s, the runtime %s", r->str,
              lw__script_sha(s));
    freeReplyObject(r);
}

static void check_vectors(void)
{
    static char million[1000000];
    char hex[41];

    /* FIPS 180 examples, and lengths around the padding's block edge. */
    lw__sha1_hex("abc", 3, hex);
    CHECK(strcmp(hex, "a9993e364706816aba3e25717850c26c9cd0d89d") == 0);
    lw__sha1_hex("", 0, hex);
    CHECK(strcmp(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709") == 0);
    lw__sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
                 hex);
    CHECK(strcmp(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1") == 0);
    memset(million, 'a', sizeof million);
    lw__sha1_hex(million, sizeof million, hex);
    CHECK(strcmp(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f") == 0);
}

static void *contender(void *arg)
{
    lw_guard g;

    (void)arg;
    CHECK_RC(lock_str(&g, "s", 5000, 5000), LW_OK);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    return NULL;
}

/* Two threads on one key: the try script, the queueing script, the release
 * script (with a hand-off) all run. */
static void contend(void)
{
    pthread_t t;
    lw_guard g;

    CHECK_RC(lock_str(&g, "s", 5000, 5000), LW_OK);
    CHECK(pthread_create(&t, NULL, contender, NULL) == 0);
    sleep_ms(100);
    CHECK_RC(lw_guard_leave(&g), LW_OK);
    CHECK(pthread_join(t, NULL) == 0);
}

int main(void)
{
    long long eval_first;

    check_vectors();
    CHECK(rh_start(&srv, NULL) == 0);
    use_server(&srv);

    contend();
    CHECK_EQ(calls("script"), 0); /* no SCRIPT LOAD */
    eval_first = calls("eval");
    /* The connect-time ACL check (net/handshake.c), the acquire script,
     * the release; the hand-off fences' script if a run was handed on. */
    CHECK(eval_first >= 3 && eval_first <= 4);
    contend();
    CHECK_EQ(calls("eval"), eval_first); /* known now: EVALSHA only */
    CHECK(calls("evalsha") > 0);

    for (struct lw_script *const *s = lw__scripts; *s != NULL; s++)
        check_sha(*s);

    lw_shutdown();
    CHECK(rh_stop(&srv) == 0);
    printf("scripts: ok\n");
    return 0;
}

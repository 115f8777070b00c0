/*
 * The FIFO floor: the least Redis work a lock can do that serves its
 * waiters in arrival order, each on its own connection, and what each of
 * lockweave's guarantees beyond that adds to it, one at a time
 * (bench/fifo.sh runs the ladder).
 *
 * The floor.  A try is one plain SET NX, or, for a key the worker had to
 * queue for in the last 100 ms, none (lockweave skips it the same way): it
 * joins the queue and blocks in one write, a script that takes the key if
 * it is free (granting itself) or appends the caller to the key's list,
 * pipelined with BLPOP on the caller's own mailbox.  The release is one
 * script: compare the token, then give the key to the head of the list
 * (its token in the key, a push to its mailbox) or delete it.  A hand-off
 * between processes is so the release and the next waiter's join: one
 * wake-up, nothing left in Redis.  It keeps nothing else: a waiter that
 * dies or gives up stays in the list and the lock handed to it sits until
 * its lease ends; no fences; a release retried after a lost reply cannot
 * tell its own hand-off from a loss.
 *
 * --adds LIST (comma-separated) adds lockweave's mechanism for each of
 * these guarantees, as docs/protocol.md describes it:
 *   alive     a waiter that died is skipped, and what it leaves expires:
 *             each joiner sets an alive key (1 s); the release reads the
 *             head's and passes over a dead one; a mailbox written to is
 *             kept 1 s
 *   places    a waiter keeps its place across polls and can tell a grant
 *             meant for it from a late one: the queue is a sorted set
 *             scored by the server's clock, kept alive with a TTL, and the
 *             join returns the holder's TTL (lockweave caps its block with
 *             it; here it is only read) and the waiter's entry, which the
 *             grant names
 *   receipts  a release sent again after its reply was lost knows its own
 *             hand-off: each hand-off leaves a receipt key (4 s)
 *   fences    every holder gets a fence: an INCR beside the plain SET and
 *             in every grant
 * It is a measuring stick, not a lock to use: none of these is complete
 * here (no polls, no renewal, no retries), only their Redis work on the
 * path of a section, and a wait that runs out leaves the waiter queued.
 * Threads of one process do not share a place in the queue as lockweave's
 * do.  Same command line and JSON line as the other drivers
 * (bench/driver.c); --retry-ms is accepted and echoed, not used (waiters
 * are handed the lock); "impl" is fifo-floor, with "+NAME" for each
 * addition.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOT_NS 100000000u /* as lockweave's: queued in the last 100 ms */

enum { ADD_ALIVE = 1, ADD_PLACES = 2, ADD_RECEIPTS = 4, ADD_FENCES = 8 };
static const char *const add_names[] = {"alive", "places", "receipts",
                                        "fences"};
static int adds;

static char join_sha[41], release_sha[41];

/* The key this worker last queued for, and until when it is hot. */
static __thread char hot_key[32];
static __thread uint64_t hot_until;

/* KEYS: lock, queue, mailbox, key prefix ("<lock>:"); ARGV: token, ttl.
 * 1 taken (a grant pushed to our own mailbox), 0 queued; with places,
 * queued is {holder's ttl, our entry}. */
static void join_lua(char *buf, size_t n)
{
    snprintf(buf, n,
             "if redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then %s"
             "redis.call('lpush',KEYS[3],'g') return 1 end %s%s",
             adds & ADD_FENCES ? "redis.call('incr',KEYS[4]..'f') " : "",
             adds & ADD_ALIVE
                 ? "redis.call('set',KEYS[4]..'a:'..ARGV[1],'1','PX',"
                   "1000) "
                 : "",
             adds & ADD_PLACES
                 ? "local t=redis.call('time') "
                   "redis.call('zadd',KEYS[2],'NX',tonumber(t[1])*1000000+"
                   "tonumber(t[2]),ARGV[1]) "
                   "redis.call('pexpire',KEYS[2],5000) "
                   "return {redis.call('pttl',KEYS[1]),"
                   "redis.call('zscore',KEYS[2],ARGV[1])}"
                 : "redis.call('rpush',KEYS[2],ARGV[1]) return 0");
}

/* KEYS: lock, queue, key prefix; ARGV: token, ttl.  1 released, 0 not ours
 * (2 with receipts: released by an earlier run of this release). */
static void release_lua(char *buf, size_t n)
{
    snprintf(
        buf, n,
        "if redis.call('get',KEYS[1])~=ARGV[1] then %s return 0 end "
        "while true do %s"
        "if not h then redis.call('del',KEYS[1]) return 1 end "
        "if %s then "
        "redis.call('set',KEYS[1],h,'PX',ARGV[2]) %s%s"
        "local box=KEYS[3]..'m:'..h "
        "redis.call('rpush',box,'g '..e) %s"
        "return 1 end end",
        adds & ADD_RECEIPTS ? "if redis.call('exists',KEYS[3]..'rel:'..ARGV[1])"
                              "==1 then return 2 end"
                            : "",
        adds & ADD_PLACES ? "local h,e=nil,'' "
                            "local z=redis.call('zrange',KEYS[2],0,0,"
                            "'WITHSCORES') "
                            "if z[1] then h,e=z[1],z[2] "
                            "redis.call('zrem',KEYS[2],h) end "
                          : "local h,e=redis.call('lpop',KEYS[2]),'' ",
        adds & ADD_ALIVE ? "redis.call('get',KEYS[3]..'a:'..h)" : "true",
        adds & ADD_FENCES ? "redis.call('incr',KEYS[3]..'f') " : "",
        adds & ADD_RECEIPTS ? "redis.call('set',KEYS[3]..'rel:'..ARGV[1],'1',"
                              "'PX',4000) "
                            : "",
        adds & ADD_ALIVE ? "redis.call('pexpire',box,1000) " : "");
}

static void load(redisContext *c, void (*build)(char *, size_t), char *sha)
{
    char lua[2048];
    redisReply *r;

    build(lua, sizeof lua);
    r = bench_cmd(c, "SCRIPT LOAD %s", lua);
    snprintf(sha, 41, "%s", r->str);
    freeReplyObject(r);
}

/* The next reply on c, which must not be an error. */
static redisReply *reply(redisContext *c)
{
    redisReply *r;

    if (redisGetReply(c, (void **)&r) != REDIS_OK)
        bench_die(c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        bench_die(r->str);
    return r;
}

/* The plain try: 1 when it took the key. */
static int try_plain(redisContext *c, const char *key, const char *token)
{
    redisReply *r;
    int ok;

    redisAppendCommand(c, "SET %s %s NX PX %d", key, token, bench_opt.ttl_ms);
    if (adds & ADD_FENCES)
        redisAppendCommand(c, "INCR %s:f", key);
    r = reply(c);
    ok = r->type == REDIS_REPLY_STATUS; /* +OK; nil when busy */
    freeReplyObject(r);
    if (adds & ADD_FENCES)
        freeReplyObject(reply(c));
    return ok;
}

/* 1: acquired, 0: wait-ms ran out (the caller stays queued: see above). */
static int acquire(redisContext *c, const char *key, const char *token)
{
    char queue[48], mailbox[128], prefix[48];
    redisReply *r;
    int queued, ok;

    if ((strcmp(key, hot_key) != 0 || bench_now_ns() >= hot_until) &&
        try_plain(c, key, token))
        return 1;
    snprintf(queue, sizeof queue, "%s:q", key);
    snprintf(prefix, sizeof prefix, "%s:", key);
    snprintf(mailbox, sizeof mailbox, "%s:m:%s", key, token);
    redisAppendCommand(c, "EVALSHA %s 4 %s %s %s %s %s %d", join_sha, key,
                       queue, mailbox, prefix, token, bench_opt.ttl_ms);
    redisAppendCommand(c, "BLPOP %s %.3f", mailbox, bench_opt.wait_ms / 1e3);
    r = reply(c);
    queued = r->type != REDIS_REPLY_INTEGER || r->integer == 0;
    freeReplyObject(r);
    if (queued) {
        snprintf(hot_key, sizeof hot_key, "%s", key);
        hot_until = bench_now_ns() + HOT_NS;
    }
    r = reply(c);
    ok = r->type == REDIS_REPLY_ARRAY; /* nil when the wait ran out */
    freeReplyObject(r);
    return ok;
}

static void release(redisContext *c, const char *key, const char *token)
{
    char queue[48], prefix[48];

    snprintf(queue, sizeof queue, "%s:q", key);
    snprintf(prefix, sizeof prefix, "%s:", key);
    freeReplyObject(bench_cmd(c, "EVALSHA %s 3 %s %s %s %s %d", release_sha,
                              key, queue, prefix, token, bench_opt.ttl_ms));
}

static const struct bench_driver driver = {
    .name = "lw_bench_fifo",
    .usage = "usage: lw_bench_fifo --workload WORKLOAD --port PORT "
             "[--adds alive,places,receipts,fences] [--procs P] [--threads T] "
             "[--keys K] [--iters N] [--ttl-ms T] [--wait-ms W (> 0)] "
             "[--retry-ms R]\n"
             "  the least a first-come-first-served Redis lock can do, and "
             "what each of lockweave's guarantees adds (bench/fifo.c); "
             "WORKLOAD as lw_bench_driver's\n",
    .first_workload = BENCH_UNCONTENDED,
    .impl = "fifo-floor",
    .impl_flag = 0,
    .acquire = acquire,
    .release = release,
};

/* Takes --adds LIST out of argv (the shared parser does not know it) into
 * adds: the new argc, or -1 for a name it does not know. */
static int parse_adds(int argc, char **argv)
{
    int out = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--adds") != 0 || i + 1 == argc) {
            argv[out++] = argv[i];
            continue;
        }
        for (char *s = strtok(argv[++i], ","); s; s = strtok(NULL, ",")) {
            size_t a = 0;

            while (a < 4 && strcmp(s, add_names[a]))
                a++;
            if (a == 4)
                return -1;
            adds |= 1 << a;
        }
    }
    return out;
}

int main(int argc, char **argv)
{
    static char impl[64] = "fifo-floor";
    redisContext *c;

    argc = parse_adds(argc, argv);
    if (argc < 0) {
        fputs(driver.usage, stderr);
        return 2;
    }
    bench_parse_args(&driver, argc, argv);
    /* BLPOP's 0 would block for ever. */
    if (bench_opt.wait_ms < 1)
        bench_usage();
    /* Named in one order whatever order --adds gave. */
    for (size_t a = 0; a < 4; a++)
        if (adds & 1 << a)
            snprintf(impl + strlen(impl), sizeof impl - strlen(impl), "+%s",
                     add_names[a]);
    bench_opt.impl = impl;
    c = bench_connect();
    load(c, join_lua, join_sha);
    load(c, release_lua, release_sha);
    redisFree(c);
    bench_run(bench_nkeys());
    return 0;
}

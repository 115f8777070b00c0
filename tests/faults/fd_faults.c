/*
 * The faults, one function per kind, each injecting one instance and logging
 *   FAULT kind t0_ns t1_ns detail
 * to driver.log (t0..t1: while the fault was in force).  And the case table.
 *
 * The lease of the guarded section is 1 s (fw_section.c): every "long" fault
 * lasts 2 s or more, so leases do run out during it.
 */
#include "fd.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEASE_MS        1000
#define LONG_FAULT_MS   (2 * LEASE_MS)
#define HOLDER_PAUSE_MS (LEASE_MS * 5 / 2)
#define VICTIM_WAIT_MS  10000

static void log_fault(struct fd_run *r, const char *kind, int64_t t0,
                      const char *detail)
{
    fd_log(r, "FAULT %s %lld %lld %s", kind, (long long)t0,
           (long long)fw_now_ns(), detail);
    r->faults++;
}

/* redis-server stopped (SIGSTOP) past the lease, then continued. */
static int redis_pause(struct fd_run *r)
{
    int64_t t0 = fw_now_ns();
    if (rh_pause(&r->srv) != 0)
        return -1;
    fd_sleep_ms(LONG_FAULT_MS);
    if (rh_resume(&r->srv) != 0)
        return -1;
    log_fault(r, "redis-pause", t0, "SIGSTOP 2000ms");
    return 0;
}

/* SIGTERM and start again on the same port (AOF or not: the case says). */
static int redis_restart(struct fd_run *r)
{
    int64_t t0 = fw_now_ns();
    if (rh_restart(&r->srv) != 0)
        return -1;
    log_fault(r, "redis-restart", t0, r->c->aof ? "aof" : "no-persistence");
    return 0;
}

/* SIGKILL (no shutdown work) and start again from the AOF. */
static int redis_crash(struct fd_run *r)
{
    int64_t t0 = fw_now_ns();
    if (rh_kill(&r->srv) != 0 || rh_start_again(&r->srv) != 0)
        return -1;
    log_fault(r, "redis-crash", t0, "SIGKILL+aof");
    return 0;
}

static long long kill_type(struct fd_run *r, const char *type)
{
    redisReply *rep = rh_cmd(&r->srv, "CLIENT KILL TYPE %s SKIPME yes", type);
    long long n = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep)
        freeReplyObject(rep);
    return n;
}

/* Every connection of the workers closed by the server: lock threads' (a
 * waiter's, blocked in BLPOP on its mailbox, too) and watchdogs', all TYPE
 * normal.  The runtime opens no pub/sub connection, so TYPE pubsub finds
 * none; it is killed anyway, so that one would be noticed, and its count
 * ("killed=normal+pubsub") should stay 0. */
static int client_kill(struct fd_run *r)
{
    char detail[64];
    int64_t t0 = fw_now_ns();
    long long normal = kill_type(r, "normal");
    long long pubsub = kill_type(r, "pubsub");
    if (normal < 0 || pubsub < 0)
        return -1;
    snprintf(detail, sizeof detail, "killed=%lld+%lld", normal, pubsub);
    log_fault(r, "client-kill", t0, detail);
    return 0;
}

/* CLIENT PAUSE ALL past the lease: connections stay up, nothing answers. */
static int client_pause(struct fd_run *r)
{
    int64_t t0 = fw_now_ns();
    redisReply *rep = rh_cmd(&r->srv, "CLIENT PAUSE %d ALL", LONG_FAULT_MS);
    int ok = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep)
        freeReplyObject(rep);
    if (!ok)
        return -1;
    /* Our own next command would wait out the pause too: sleep it out. */
    fd_sleep_ms(LONG_FAULT_MS);
    log_fault(r, "client-pause", t0, "ALL 2000ms");
    return 0;
}

/* Ask one worker thread, inside a section, to act; wait for its process. */
static pid_t request_victim(struct fd_run *r, int req)
{
    int64_t deadline = fd_now_ms() + VICTIM_WAIT_MS;
    int want = req;
    pid_t pid;

    __atomic_store_n(&r->shared->victim_pid, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&r->shared->request, req, __ATOMIC_RELEASE);
    while ((pid = __atomic_load_n(&r->shared->victim_pid, __ATOMIC_ACQUIRE)) ==
           0) {
        if (fd_now_ms() > deadline) {
            /* Withdraw it, unless claimed this very moment. */
            if (__atomic_compare_exchange_n(&r->shared->request, &want,
                                            FW_REQ_NONE, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                return 0;
            deadline = fd_now_ms() + VICTIM_WAIT_MS;
        }
        fd_sleep_ms(1);
    }
    return pid;
}

/* State letter of /proc/PID/stat ('T': stopped), or 0. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* A holder stopped between its read and its write for 2.5 leases (the "GC
 * pause"), then continued: it must learn LW_ELOST and the store must refuse
 * its stale write if a newer holder got there first. */
static int holder_pause(struct fd_run *r)
{
    char detail[64];
    pid_t pid = request_victim(r, FW_REQ_PAUSE);
    if (pid == 0) {
        fd_log(r, "NOTE holder-pause: no section claimed the request");
        return 0;
    }
    for (int i = 0; i < 5000 && proc_state(pid) != 'T'; i++)
        fd_sleep_ms(1);
    int64_t t0 = fw_now_ns();
    fd_sleep_ms(HOLDER_PAUSE_MS);
    kill(pid, SIGCONT);
    snprintf(detail, sizeof detail, "pid=%d", (int)pid);
    log_fault(r, "holder-pause", t0, detail);
    return 0;
}

/* A holder SIGKILLed inside its section: its lock must keep everyone out
 * until the lease runs out, never longer.  The slot gets a new process. */
static int holder_kill(struct fd_run *r)
{
    char detail[64];
    int st, slot = -1;
    pid_t pid = request_victim(r, FW_REQ_KILL);
    if (pid == 0) {
        fd_log(r, "NOTE holder-kill: no section claimed the request");
        return 0;
    }
    int64_t t0 = fw_now_ns();
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    /* Every section of that process ended by now, at the latest. */
    fd_log(r, "KILLED %d %lld", (int)pid, (long long)fw_now_ns());
    snprintf(detail, sizeof detail, "pid=%d", (int)pid);
    log_fault(r, "holder-kill", t0, detail);
    for (int i = 0; i < r->procs; i++)
        if (r->pids[i] == pid)
            slot = i;
    return slot < 0 ? -1 : fd_spawn_worker(r, slot);
}

/* Latency spikes through the proxy, alternately below and above the lease
 * (one way; a round trip pays it twice). */
static int latency(struct fd_run *r)
{
    char detail[64];
    int spike = r->nth++ % 2 ? 1500 : 200;
    int64_t t0 = fw_now_ns();
    fd_proxy_set_delay(r->proxy, spike);
    fd_sleep_ms(spike == 200 ? LEASE_MS : 1500);
    fd_proxy_set_delay(r->proxy, 1);
    snprintf(detail, sizeof detail, "one-way=%dms", spike);
    log_fault(r, "latency", t0, detail);
    return 0;
}

const struct fd_case fd_cases[] = {
    {"none", 0, 0, FW_GUARDED, 1, NULL, 0, FD_EXPECT_CLEAN},
    {"redis-pause", 0, 0, FW_GUARDED, 1, redis_pause, 1500, FD_EXPECT_CLEAN},
    {"redis-restart-aof", 1, 0, FW_GUARDED, 1, redis_restart, 1500,
     FD_EXPECT_CLEAN},
    {"redis-crash-aof", 1, 0, FW_GUARDED, 1, redis_crash, 1500,
     FD_EXPECT_CLEAN},
    /* Not claimed: the restart forgets held locks and fence counters. */
    {"redis-restart-noaof", 0, 0, FW_GUARDED, 1, redis_restart, 1500,
     FD_EXPECT_STORE_SAFE},
    {"client-kill", 0, 0, FW_GUARDED, 1, client_kill, 300, FD_EXPECT_CLEAN},
    {"client-pause", 0, 0, FW_GUARDED, 1, client_pause, 1500, FD_EXPECT_CLEAN},
    {"holder-pause", 0, 0, FW_GUARDED, 1, holder_pause, 1000, FD_EXPECT_CLEAN},
    {"holder-kill", 0, 0, FW_GUARDED, 1, holder_kill, 1000, FD_EXPECT_CLEAN},
    /* Late hand-off messages: see regress_stale_grant.c and README.md. */
    {"latency", 0, 1, FW_GUARDED, 1, latency, 1500, FD_EXPECT_CLEAN},
    /* The checker's self-tests: these must be caught. */
    {"selftest-unguarded", 0, 0, FW_UNGUARDED, 1, NULL, 0, FD_EXPECT_OVERLAP},
    {"selftest-nofence", 0, 0, FW_GUARDED, 0, holder_pause, 1000,
     FD_EXPECT_LOST_UPDATE},
    {NULL, 0, 0, 0, 0, NULL, 0, 0},
};

const struct fd_case *fd_case_find(const char *name)
{
    for (const struct fd_case *c = fd_cases; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

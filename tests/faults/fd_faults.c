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
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEASE_MS        1000
#define LONG_FAULT_MS   (2 * LEASE_MS)
#define HOLDER_PAUSE_MS (LEASE_MS * 5 / 2)
#define VICTIM_WAIT_MS  10000

/* eviction: filler values this big (few keys, so that lockweave's keys are
 * a good share of what a random eviction picks), one every FILL_EVERY_MS
 * for EVICT_BURST_MS per fault. */
#define FILLER_BYTES   (64 * 1024)
#define FILL_EVERY_MS  2
#define EVICT_BURST_MS 300

/* forced-unlock: tries per key and round while it is found free or
 * read-held. */
#define UNLOCK_TRIES 5

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

/* lockweave-ctl unlock --force --yes KEY; its exit status (ctl.h's CTL_*:
 * 0 unlocked, 1 not held, 6 changed hands, 7 shared), or -1.  Its output
 * goes to ctl.log in the run directory. */
static int run_ctl(struct fd_run *r, const char *key)
{
    char logpath[600];
    char *argv[] = {r->ctl, "unlock", "--force", "--yes", (char *)key, NULL};
    pid_t parent = getpid(), pid;
    int st;

    snprintf(logpath, sizeof logpath, "%s/ctl.log", r->dir);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Only async-signal-safe calls until exec: the driver may have
         * threads (the proxy). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int null = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (null >= 0)
            dup2(null, 0);
        execv(r->ctl, argv);
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The operator's forced unlock, the real command, on every lock key of the
 * run: the holder keeps running without the lock.  lockweave-ctl refuses a
 * key with several holders (a read lock, a semaphore: exit 7); with the
 * case's del_refused such a key is then deleted with DEL, as an operator
 * left with nothing else would do with redis-cli (the semaphore case: ctl
 * never breaks a semaphore).  A round that removed nothing is a NOTE, not
 * a fault. */
static int forced_unlock(struct fd_run *r)
{
    char key[64], detail[160];
    int unlocked = 0, not_held = 0, shared = 0, changed = 0, other = 0;
    int deleted = 0;
    int64_t t0 = fw_now_ns();

    for (int k = 0; k < r->keys; k++) {
        int rc;
        snprintf(key, sizeof key, "%s:%d", fw_kind_key(r->c->kind), k);
        /* A key found free, or read-held, is tried again a few times: a
         * read/write lock's key is writer-held only now and then. */
        for (int tries = 1;; tries++) {
            rc = run_ctl(r, key);
            if (tries == UNLOCK_TRIES ||
                (rc != 1 && (rc != 7 || r->c->del_refused)))
                break;
            not_held += rc == 1;
            shared += rc == 7;
            fd_sleep_ms(2);
        }
        if (rc < 0 || rc == 127) {
            fd_log(r, "FAULT-ERROR lockweave-ctl %s: exit %d (see ctl.log)",
                   key, rc);
            return -1;
        }
        unlocked += rc == 0;
        not_held += rc == 1;
        changed += rc == 6;
        shared += rc == 7;
        other += rc != 0 && rc != 1 && rc != 6 && rc != 7;
        if (rc == 7 && r->c->del_refused) {
            long long n = rh_cmd_int(&r->srv, "DEL lock:%s", key);
            if (n == LLONG_MIN)
                return -1;
            deleted += n > 0;
        }
    }
    snprintf(detail, sizeof detail,
             "ctl:unlocked=%d,not-held=%d,changed-hands=%d,shared=%d,"
             "other=%d;del-after-refusal=%d",
             unlocked, not_held, changed, shared, other, deleted);
    if (unlocked + deleted == 0) {
        fd_log(r, "NOTE forced-unlock: nothing removed (%s)", detail);
        return 0;
    }
    log_fault(r, "forced-unlock", t0, detail);
    return 0;
}

/* Redis's evicted_keys (INFO stats), or -1. */
static long long evicted_keys(struct fd_run *r)
{
    redisReply *rep = rh_cmd(&r->srv, "INFO stats");
    long long n = -1;
    const char *p;
    if (rep && rep->type == REDIS_REPLY_STRING &&
        (p = strstr(rep->str, "evicted_keys:")) != NULL)
        n = atoll(p + strlen("evicted_keys:"));
    if (rep)
        freeReplyObject(rep);
    return n;
}

enum { EV_FILLER, EV_LOCK, EV_FENCE, EV_QUEUE, EV_READERS, EV_WAITER, EV_N };

/* What an evicted key was, by its name (runtime/core/keynames.c): the lock
 * key "lock:...", the fence counter "{lockweave}lock:fences", a queue
 * "{...}:q", a readers' set "{...}:r", or a waiter's alive key, mailbox or
 * a release's receipt "{...}:w:<token>[:g|:rel]". */
static int key_class(const char *k, size_t len)
{
#define ENDS(s)                                                                \
    (len >= sizeof s - 1 &&                                                    \
     memcmp(k + len - (sizeof s - 1), s, sizeof s - 1) == 0)
    if (strncmp(k, "filler:", 7) == 0)
        return EV_FILLER;
    if (strncmp(k, "lock:", 5) == 0)
        return EV_LOCK;
    if (ENDS("fences"))
        return EV_FENCE;
    if (ENDS(":q"))
        return EV_QUEUE;
    if (ENDS(":r"))
        return EV_READERS;
    return EV_WAITER;
#undef ENDS
}

/* Read what the subscriber has been sent, waiting up to wait_ms for the
 * first of it; counts evicted keys by class.  0, or -1 (connection lost). */
static int drain_sub(struct fd_run *r, int wait_ms)
{
    for (;;) {
        void *v = NULL;
        if (redisGetReplyFromReader(r->sub, &v) != REDIS_OK)
            return -1;
        if (v != NULL) {
            redisReply *m = v;
            /* ["message", channel, key] */
            if (m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                m->element[2]->type == REDIS_REPLY_STRING &&
                strcmp(m->element[0]->str, "message") == 0)
                r->evicted[key_class(m->element[2]->str, m->element[2]->len)]++;
            freeReplyObject(m);
            continue;
        }
        struct pollfd p = {.fd = r->sub->fd, .events = POLLIN};
        int n = poll(&p, 1, wait_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n;
        if (redisBufferRead(r->sub) != REDIS_OK)
            return -1;
        wait_ms = 0;
    }
}

/* The subscriber to Redis's evicted-key events (notify-keyspace-events Ee,
 * set at the server's start). */
static int open_sub(struct fd_run *r)
{
    redisReply *rep;
    if (r->sub != NULL)
        return 0;
    if ((r->sub = rh_connect(&r->srv)) == NULL)
        return -1;
    rep = redisCommand(r->sub, "SUBSCRIBE __keyevent@0__:evicted");
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY) {
        if (rep)
            freeReplyObject(rep);
        redisFree(r->sub);
        r->sub = NULL;
        return -1;
    }
    freeReplyObject(rep);
    return 0;
}

/* Keep the server (small maxmemory, allkeys-lru, one sample: a nearly
 * random victim) full with filler keys for a while, so that it keeps
 * evicting, lockweave's keys among the rest.  The fault is proven only if
 * Redis evicted something (INFO's evicted_keys) and one of the evicted keys
 * was lockweave's; otherwise a NOTE. */
static int eviction(struct fd_run *r)
{
    static char filler[FILLER_BYTES];
    long long before, after, lw0 = 0, lw1 = 0, by[EV_N];
    char detail[200];
    int64_t t0 = fw_now_ns(), end = fd_now_ms() + EVICT_BURST_MS;

    if (filler[0] == '\0')
        memset(filler, 'f', sizeof filler);
    if (open_sub(r) != 0 || drain_sub(r, 0) != 0 ||
        (before = evicted_keys(r)) < 0)
        return -1;
    memcpy(by, r->evicted, sizeof by);
    while (fd_now_ms() < end) {
        redisReply *rep = rh_cmd(&r->srv, "SET filler:%llu %b", r->filler_seq++,
                                 filler, sizeof filler);
        if (rep == NULL)
            return -1;
        /* An OOM error would say eviction could not make room: logged,
         * not fatal (the next write tries again). */
        if (rep->type == REDIS_REPLY_ERROR)
            fd_log(r, "NOTE eviction: SET answered %s", rep->str);
        freeReplyObject(rep);
        if (drain_sub(r, 0) != 0)
            return -1;
        fd_sleep_ms(FILL_EVERY_MS);
    }
    if (drain_sub(r, 20) != 0 || (after = evicted_keys(r)) < 0)
        return -1;
    for (int i = EV_LOCK; i < EV_N; i++) {
        lw0 += by[i];
        lw1 += r->evicted[i];
    }
    snprintf(detail, sizeof detail,
             "evicted_keys=%lld(+%lld);lockweave=+%lld:lock=+%lld,fence=+%lld,"
             "queue=+%lld,readers=+%lld,waiter=+%lld;filler=+%lld",
             after, after - before, lw1 - lw0,
             r->evicted[EV_LOCK] - by[EV_LOCK],
             r->evicted[EV_FENCE] - by[EV_FENCE],
             r->evicted[EV_QUEUE] - by[EV_QUEUE],
             r->evicted[EV_READERS] - by[EV_READERS],
             r->evicted[EV_WAITER] - by[EV_WAITER],
             r->evicted[EV_FILLER] - by[EV_FILLER]);
    if (after == before || lw1 == lw0) {
        fd_log(r, "NOTE eviction: no lockweave key evicted (%s)", detail);
        return 0;
    }
    log_fault(r, "eviction", t0, detail);
    return 0;
}

/* Redis Sentinel (fd_case.sentinel).  Every wait is bounded by a
 * deadline this generous, never a fixed sleep: a promotion takes
 * down-after-milliseconds (0.5 s) plus an election, a node that came back
 * is made a replica a second or two later, and on a loaded machine either
 * can take several times that.  A deadline missed is a FAULT-ERROR (the
 * case fails as "could not inject"), not a verdict on lockweave. */
#define SENTINEL_WAIT_MS 30000

/* SENTINEL MASTER field `name` (a flat list of names and values), or "". */
static const char *field(const redisReply *r, const char *name)
{
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i]->str, name) == 0 &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            return r->element[i + 1]->str;
    return "";
}

/* 1 when node n is a replica of master m done with its sync. */
static int synced_replica_of(rh_server *n, const rh_server *m)
{
    char port[32];
    redisReply *rep = rh_cmd(n, "INFO replication");
    snprintf(port, sizeof port, "master_port:%d\r\n", m->port);
    int ok = rep != NULL && rep->type == REDIS_REPLY_STRING &&
             strstr(rep->str, "role:slave") != NULL &&
             strstr(rep->str, port) != NULL &&
             strstr(rep->str, "master_link_status:up") != NULL &&
             strstr(rep->str, "master_sync_in_progress:0") != NULL;
    freeReplyObject(rep);
    return ok;
}

/* 1 when sentinel k names m master, with no failover under way, and sees
 * both other nodes as replicas that are up (flags exactly "slave": not
 * s_down, not disconnected), so that it can fail m over to either. */
static int sentinel_steady(struct fd_run *r, int k, const rh_server *m)
{
    rh_server *sen = &r->sn.sentinel[k];
    redisReply *rep = rh_cmd(sen, "SENTINEL MASTER %s", RH_SENTINEL_NAME);
    int ok = rep != NULL && atoi(field(rep, "port")) == m->port &&
             strcmp(field(rep, "flags"), "master") == 0 &&
             atoi(field(rep, "num-slaves")) == RH_SENTINEL_NODES - 1;
    freeReplyObject(rep);
    if (!ok)
        return 0;
    rep = rh_cmd(sen, "SENTINEL REPLICAS %s", RH_SENTINEL_NAME);
    int up = 0;
    for (size_t i = 0;
         rep && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
        up += strcmp(field(rep->element[i], "flags"), "slave") == 0;
    freeReplyObject(rep);
    return up == RH_SENTINEL_NODES - 1;
}

/* Wait until m is the master everywhere: ROLE master, the other nodes its
 * synced replicas, every sentinel steady on it.  0, or -1 (logged). */
static int sentinel_settle(struct fd_run *r, rh_server *m)
{
    int64_t deadline = fd_now_ms() + SENTINEL_WAIT_MS;
    for (;;) {
        int ok = rh_sentinel_is_master(m);
        for (int n = 0; ok && n < RH_SENTINEL_NODES; n++)
            if (&r->sn.node[n] != m)
                ok = synced_replica_of(&r->sn.node[n], m);
        for (int k = 0; ok && k < RH_SENTINELS; k++)
            ok = sentinel_steady(r, k, m);
        if (ok)
            return 0;
        if (fd_now_ms() > deadline) {
            fd_log(r,
                   "FAULT-ERROR sentinel: :%d not settled as master after "
                   "%d ms",
                   m->port, SENTINEL_WAIT_MS);
            return -1;
        }
        fd_sleep_ms(20);
    }
}

/* The master every sentinel names, settled; NULL (logged) if none. */
static rh_server *sentinel_master(struct fd_run *r)
{
    rh_server *m = rh_sentinel_master_by(&r->sn, -1);
    if (m == NULL) {
        fd_log(r, "FAULT-ERROR sentinel: no sentinel names a master");
        return NULL;
    }
    return sentinel_settle(r, m) == 0 ? m : NULL;
}

/* Writes the store accepted so far, all keys. */
static unsigned long long store_writes(struct fd_run *r)
{
    unsigned long long n = 0;
    for (int k = 0; k < r->keys; k++)
        n += __atomic_load_n(&r->shared->keys[k].writes, __ATOMIC_ACQUIRE);
    return n;
}

/* Sections resumed after each failover, not only after the last one (which
 * the checker sees): RESUME_WRITES writes accepted since the promotion. */
#define RESUME_WRITES 10

/* After a promotion: the old master back as a replica, the topology steady
 * again (so that the next fault, and WAIT for 2 replicas, find it whole),
 * and sections going on.  `writes`: store_writes() at the promotion. */
static int sentinel_recover(struct fd_run *r, rh_server *old, rh_server *fresh,
                            unsigned long long writes)
{
    int64_t deadline = fd_now_ms() + SENTINEL_WAIT_MS;
    if (rh_sentinel_wait_replica(old, SENTINEL_WAIT_MS) != 0) {
        fd_log(r, "FAULT-ERROR sentinel: :%d not made a replica", old->port);
        return -1;
    }
    if (sentinel_settle(r, fresh) != 0)
        return -1;
    while (store_writes(r) < writes + RESUME_WRITES) {
        if (fd_now_ms() > deadline) {
            fd_log(r,
                   "FAULT-ERROR sentinel: sections did not resume on :%d "
                   "(%llu writes in %d ms)",
                   fresh->port, store_writes(r) - writes, SENTINEL_WAIT_MS);
            return -1;
        }
        fd_sleep_ms(5);
    }
    return 0;
}

/* The master SIGKILLed; the sentinels promote a replica; the killed node
 * started again (an empty dataset: no persistence), which the sentinels
 * make a replica of the new master. */
static int sentinel_failover(struct fd_run *r)
{
    char detail[128];
    rh_server *old = sentinel_master(r), *fresh;
    if (old == NULL)
        return -1;
    int64_t t0 = fw_now_ns();
    if (rh_kill(old) != 0)
        return -1;
    if ((fresh = rh_sentinel_wait_failover(&r->sn, old, SENTINEL_WAIT_MS)) ==
        NULL) {
        fd_log(r, "FAULT-ERROR sentinel: no promotion after killing :%d",
               old->port);
        return -1;
    }
    int64_t promoted = fw_now_ns();
    unsigned long long writes = store_writes(r);
    if (rh_start_again(old) != 0 ||
        sentinel_recover(r, old, fresh, writes) != 0)
        return -1;
    snprintf(detail, sizeof detail,
             "killed=:%d promoted=:%d after=%lldms back-as-replica=%lldms",
             old->port, fresh->port, (long long)(promoted - t0) / 1000000,
             (long long)(fw_now_ns() - t0) / 1000000);
    log_fault(r, "sentinel-failover", t0, detail);
    return 0;
}

/* SENTINEL FAILOVER through one of the sentinels (each fault the next):
 * the master stays up, a replica is promoted, the old master is demoted a
 * second or two later.  The next sentinel is stopped (SIGSTOP) through it,
 * until the old master is a replica: the worker that listens to it (worker
 * i lists sentinel i first) hears no +switch-master and, like a process
 * whose announcement was lost, goes on locking on the old master while the
 * others lock on the new one (tests/sentinel/test_sentinel_switchover.c
 * does the same). */
static int sentinel_switchover(struct fd_run *r)
{
    char detail[160];
    rh_server *old = sentinel_master(r), *fresh;
    int k = r->nth++ % RH_SENTINELS, deaf = (k + 1) % RH_SENTINELS, ok;
    if (old == NULL)
        return -1;
    int64_t t0 = fw_now_ns();
    if (rh_pause(&r->sn.sentinel[deaf]) != 0)
        return -1;
    ok = rh_sentinel_switchover(&r->sn, k, old, SENTINEL_WAIT_MS) == 0;
    if (!ok)
        fd_log(r, "FAULT-ERROR sentinel: :%d not demoted", old->port);
    if (rh_resume(&r->sn.sentinel[deaf]) != 0 || !ok)
        return -1;
    if ((fresh = rh_sentinel_wait_failover(&r->sn, old, SENTINEL_WAIT_MS)) ==
        NULL) {
        fd_log(r, "FAULT-ERROR sentinel: no switchover from :%d", old->port);
        return -1;
    }
    int64_t demoted = fw_now_ns();
    if (sentinel_recover(r, old, fresh, store_writes(r)) != 0)
        return -1;
    snprintf(detail, sizeof detail,
             "via=:%d deaf=:%d old=:%d promoted=:%d demoted=%lldms "
             "steady=%lldms",
             r->sn.sentinel[k].port, r->sn.sentinel[deaf].port, old->port,
             fresh->port, (long long)(demoted - t0) / 1000000,
             (long long)(fw_now_ns() - t0) / 1000000);
    log_fault(r, "sentinel-switchover", t0, detail);
    return 0;
}

void fd_faults_finish(struct fd_run *r)
{
    if (r->sub == NULL)
        return;
    drain_sub(r, 20);
    fd_log(r,
           "NOTE eviction totals: lock=%lld fence=%lld queue=%lld "
           "readers=%lld waiter=%lld filler=%lld",
           r->evicted[EV_LOCK], r->evicted[EV_FENCE], r->evicted[EV_QUEUE],
           r->evicted[EV_READERS], r->evicted[EV_WAITER],
           r->evicted[EV_FILLER]);
    redisFree(r->sub);
    r->sub = NULL;
}

/* Shorthands for the table. */
#define GUARDED .mode = FW_GUARDED, .fence_check = 1
#define MUTEX   .kind = FW_KIND_MUTEX
#define RW      .kind = FW_KIND_RW
#define SEM     .kind = FW_KIND_SEM

const struct fd_case fd_cases[] = {
    {"none", GUARDED, MUTEX, .expect = FD_EXPECT_CLEAN},
    {"none-rw", GUARDED, RW, .expect = FD_EXPECT_CLEAN},
    {"none-sem", GUARDED, SEM, .expect = FD_EXPECT_CLEAN},
    {"redis-pause", GUARDED, MUTEX, .inject = redis_pause, .gap_ms = 1500},
    {"redis-restart-aof", GUARDED, MUTEX, .aof = 1, .inject = redis_restart,
     .gap_ms = 1500},
    {"redis-crash-aof", GUARDED, MUTEX, .aof = 1, .inject = redis_crash,
     .gap_ms = 1500},
    /* Not claimed: the restart forgets held locks and fence counters. */
    {"redis-restart-noaof", GUARDED, MUTEX, .inject = redis_restart,
     .gap_ms = 1500},
    {"client-kill", GUARDED, MUTEX, .inject = client_kill, .gap_ms = 300},
    {"client-pause", GUARDED, MUTEX, .inject = client_pause, .gap_ms = 1500},
    {"holder-pause", GUARDED, MUTEX, .inject = holder_pause, .gap_ms = 1000},
    {"holder-kill", GUARDED, MUTEX, .inject = holder_kill, .gap_ms = 1000},
    /* Late hand-off messages: see regress_stale_grant.c and README.md. */
    {"latency", GUARDED, MUTEX, .proxy = 1, .inject = latency, .gap_ms = 1500},
    /* A lock removed behind its holders' backs: by the operator, and by
     * Redis itself under maxmemory. */
    {"forced-unlock", GUARDED, MUTEX, .inject = forced_unlock, .gap_ms = 300,
     .ctl = 1},
    {"forced-unlock-rw", GUARDED, RW, .inject = forced_unlock, .gap_ms = 300,
     .ctl = 1},
    /* lockweave-ctl refuses a semaphore: DEL it, as an operator would. */
    {"forced-unlock-sem", GUARDED, SEM, .inject = forced_unlock, .gap_ms = 300,
     .ctl = 1, .del_refused = 1},
    {"eviction", GUARDED, MUTEX, .evict = 1, .inject = eviction, .gap_ms = 100},
    /* 5 threads a process: with 3, 1 run in 5 of the code it was written
     * against showed no breach. */
    {"eviction-rw", GUARDED, RW, .evict = 1, .inject = eviction, .gap_ms = 100,
     .threads = 5},
    {"eviction-sem", GUARDED, SEM, .evict = 1, .inject = eviction,
     .gap_ms = 100},
    /* Redis Sentinel: 1 master + 2 replicas + 3 sentinels.  A killed
     * master's last locks may miss the promoted replica: their holders are
     * told LW_ELOST (no wait_replicas needed for the checker's rules).  A
     * switchover leaves the old master writable until it is demoted: only
     * wait_replicas = every replica keeps two LW_OK sections apart
     * (docs/operations.md, "Redis Sentinel"). */
    {"sentinel-failover", GUARDED, MUTEX, .sentinel = 1,
     .inject = sentinel_failover, .gap_ms = 1000},
    {"sentinel-switchover", GUARDED, MUTEX, .sentinel = 1,
     .inject = sentinel_switchover, .gap_ms = 1000,
     .wait_replicas = RH_SENTINEL_NODES - 1},
    /* The checker's self-tests: these must be caught. */
    {"selftest-unguarded", .mode = FW_UNGUARDED, .fence_check = 1, MUTEX,
     .expect = FD_EXPECT_OVERLAP},
    {"selftest-unguarded-rw", .mode = FW_UNGUARDED, .fence_check = 1, RW,
     .expect = FD_EXPECT_OVERLAP},
    {"selftest-unguarded-sem", .mode = FW_UNGUARDED, .fence_check = 1, SEM,
     .expect = FD_EXPECT_OVERLAP},
    {"selftest-nofence", .mode = FW_GUARDED, .fence_check = 0, MUTEX,
     .inject = holder_pause, .gap_ms = 1000, .expect = FD_EXPECT_LOST_UPDATE},
    {.name = NULL},
};

const struct fd_case *fd_case_find(const char *name)
{
    for (const struct fd_case *c = fd_cases; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/*
 * lw_faults: the fault-injection driver.
 *
 *   lw_faults --case NAME [--seconds S | --soak MINUTES] [--procs P]
 *             [--threads T] [--keys K] [--out DIR] [--results FILE]
 *             [--ctl PATH] [--wait-replicas N]
 *   lw_faults --list
 *
 * One run is one case: a private redis-server (tests/harness), P worker
 * processes x T threads running the REDIS_LOCK'ed section on K keys, and the
 * case's fault injected again and again until S seconds are up (the
 * forced-unlock cases run lockweave-ctl: --ctl PATH, by default the one in
 * the same build tree, ../../tools/ctl/lockweave-ctl); then the
 * workers stop and the checker (fc_check.c) reads the records and says
 * whether the case held.  Exit status 0: it did.  The run directory keeps
 * every record (kept on failure or with --out; a temporary one is removed
 * after a pass).
 *
 * The Sentinel cases (sentinel-*) start a master, two replicas and three
 * sentinels (tests/harness/rh_sentinel.h) instead of one server; the
 * workers get a redis+sentinel:// URL.  --wait-replicas N overrides the
 * case's LOCKWEAVE_WAIT_REPLICAS for the workers (0: off), to see what
 * breaks without it.
 */
#include "fc_check.h"
#include "fd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WARMUP_MS    1000
#define SETTLE_MS    1500  /* after the last fault: recovery is visible */
#define STOP_WAIT_MS 30000 /* a worker may be waiting out a 2 s lock wait */

int64_t fd_now_ms(void)
{
    return fw_now_ns() / 1000000;
}

void fd_sleep_ms(int ms)
{
    fw_sleep_us((long)ms * 1000);
}

void fd_log(struct fd_run *r, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    fw_write_all(r->log_fd, line, (size_t)n);
}

/* Behind Sentinel, worker i lists the sentinels from i on: a process asks
 * (and listens to) the first one that answers, so the processes hear
 * +switch-master from different sentinels, at different moments, as the
 * instances of an application configured one by one would. */
static void sentinel_url(struct fd_run *r, int i, char *url, size_t cap)
{
    int len = snprintf(url, cap, "redis+sentinel://");
    for (int k = 0; k < RH_SENTINELS && len > 0 && (size_t)len < cap; k++)
        len +=
            snprintf(url + len, cap - (size_t)len, "%s127.0.0.1:%d",
                     k ? "," : "", r->sn.sentinel[(i + k) % RH_SENTINELS].port);
    if (len > 0 && (size_t)len < cap)
        snprintf(url + len, cap - (size_t)len, "/" RH_SENTINEL_NAME);
}

int fd_spawn_worker(struct fd_run *r, int i)
{
    char errpath[600], nthreads[16];
    char *argv[] = {r->worker_exe, r->shared_path, r->dir, nthreads, NULL};
    pid_t parent = getpid(), pid;

    if (r->c->sentinel) {
        /* The driver's main thread is the only one that spawns; no other
         * thread of it reads the environment. */
        char url[256];
        sentinel_url(r, i, url, sizeof url);
        setenv("LOCKWEAVE_REDIS_URL", url, 1);
    }
    snprintf(nthreads, sizeof nthreads, "%d", r->threads);
    snprintf(errpath, sizeof errpath, "%s/worker%d.err", r->dir, i);
    pid = fork();
    if (pid < 0) {
        perror("faults: fork");
        return -1;
    }
    if (pid == 0) {
        /* Die with the driver (ctest's TIMEOUT kills only the driver). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(errpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(r->worker_exe, argv);
        _exit(127);
    }
    r->pids[i] = pid;
    fd_log(r, "WORKER %d %d", i, (int)pid);
    return 0;
}

/* mkdir -p: ctest gives a directory under the build tree. */
static void make_dirs(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    mkdir(path, 0700);
}

/* Empty a run directory we are about to reuse (files only, no recursion). */
static void clean_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024];
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Stop every worker: ask, wait, then SIGKILL what is left (a straggler is
 * a failure the checker reports, its open sections "unfinished"). */
static int stop_workers(struct fd_run *r)
{
    int64_t deadline = fd_now_ms() + STOP_WAIT_MS;
    int bad = 0;

    __atomic_store_n(&r->shared->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < r->procs; i++)
        if (r->pids[i] > 0)
            kill(r->pids[i], SIGCONT);
    for (int i = 0; i < r->procs; i++) {
        int st;
        while (r->pids[i] > 0) {
            pid_t w = waitpid(r->pids[i], &st, WNOHANG);
            if (w == r->pids[i] || (w < 0 && errno != EINTR)) {
                if (w == r->pids[i] &&
                    !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
                    fd_log(r, "WORKER-FAILED %d 0x%x", (int)r->pids[i], st);
                    bad = 1;
                }
                r->pids[i] = 0;
            } else if (fd_now_ms() > deadline) {
                fd_log(r, "STRAGGLER %d", (int)r->pids[i]);
                kill(r->pids[i], SIGKILL);
                waitpid(r->pids[i], &st, 0);
                r->pids[i] = 0;
                bad = 1;
            } else {
                fd_sleep_ms(5);
            }
        }
    }
    return bad;
}

static int write_final(struct fd_run *r)
{
    char path[600];
    FILE *f;
    snprintf(path, sizeof path, "%s/final.txt", r->dir);
    if ((f = fopen(path, "w")) == NULL)
        return -1;
    for (int k = 0; k < r->keys; k++) {
        const struct fw_key *key = &r->shared->keys[k];
        fprintf(f, "K %d %lld %llu %llu\n", k, (long long)key->value,
                (unsigned long long)key->max_fence,
                (unsigned long long)key->writes);
    }
    fprintf(f, "RECOVERED %llu\n", (unsigned long long)r->shared->recovered);
    return fclose(f);
}

static int locate_worker(struct fd_run *r)
{
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    const char *dir = dirname(self);
    snprintf(r->worker_exe, sizeof r->worker_exe, "%s/lw_faults_worker", dir);
    if (r->c->ctl && r->ctl[0] == '\0')
        /* This build tree's, from tests/faults to tools/ctl. */
        snprintf(r->ctl, sizeof r->ctl, "%s/../../tools/ctl/lockweave-ctl",
                 dir);
    if (r->c->ctl && access(r->ctl, X_OK) != 0) {
        fprintf(stderr,
                "faults: case %s runs lockweave-ctl: none at %s (--ctl "
                "PATH)\n",
                r->c->name, r->ctl);
        return -1;
    }
    return access(r->worker_exe, X_OK);
}

/* Run the case for `seconds`; returns the exit status. */
static int run_case(struct fd_run *r, int seconds, const char *results)
{
    const struct fd_case *c = r->c;
    rh_opts o;
    char url[256];
    int rc = 1, setup_ok = 0;

    r->log_fd = -1;
    make_dirs(r->dir);
    clean_dir(r->dir);
    snprintf(r->shared_path, sizeof r->shared_path, "%s/shared", r->dir);
    char logpath[600];
    snprintf(logpath, sizeof logpath, "%s/driver.log", r->dir);
    r->log_fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (r->log_fd < 0 || locate_worker(r) != 0) {
        fprintf(stderr, "faults: cannot set up %s (worker %s)\n", r->dir,
                r->worker_exe);
        goto cleanup;
    }
    rh_opts_init(&o);
    o.aof = c->aof;
    if (c->evict) {
        /* A few MB above an empty server's ~1 MB; one sample: the victim is
         * nearly random (lockweave's keys, touched all the time, would
         * never be the least recently used of many).  Evictions are
         * published, so that the driver can tell whose keys went. */
        static const char *const evict_args[] = {"--maxmemory",
                                                 "4mb",
                                                 "--maxmemory-policy",
                                                 "allkeys-lru",
                                                 "--maxmemory-samples",
                                                 "1",
                                                 "--notify-keyspace-events",
                                                 "Ee",
                                                 NULL};
        o.extra_args = evict_args;
    }
    if (c->sentinel) {
        if (rh_sentinel_start(&r->sn, NULL) != 0)
            goto cleanup;
        r->sentinel_up = 1;
    } else if (rh_start(&r->srv, &o) != 0) {
        goto cleanup;
    }
    r->shared = fw_shared_create(r->shared_path, r->keys, c->mode, c->kind,
                                 c->fence_check);
    if (r->shared == NULL)
        goto cleanup;
    snprintf(url, sizeof url, "%s", c->sentinel ? r->sn.url : r->srv.url);
    if (c->proxy) {
        if ((r->proxy = fd_proxy_start(r->srv.port)) == NULL)
            goto cleanup;
        fd_proxy_set_delay(r->proxy, 1);
        snprintf(url, sizeof url, "redis://127.0.0.1:%d",
                 fd_proxy_port(r->proxy));
    }
    setenv("LOCKWEAVE_REDIS_URL", url, 1);
    if (r->wait_replicas > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", r->wait_replicas);
        setenv("LOCKWEAVE_WAIT_REPLICAS", n, 1);
        /* Replicas acknowledge in milliseconds, but not always on a loaded
         * machine: the default 100 ms would give locks back for nothing. */
        setenv("LOCKWEAVE_WAIT_TIMEOUT_MS", "1000", 0);
    } else {
        unsetenv("LOCKWEAVE_WAIT_REPLICAS");
    }
    fd_log(r,
           "CASE %s expect=%d faults=%d procs=%d threads=%d keys=%d "
           "seconds=%d kind=%s wait_replicas=%d",
           c->name, c->expect, c->inject != NULL, r->procs, r->threads, r->keys,
           seconds, fw_kind_name(c->kind), r->wait_replicas);
    if (c->sentinel)
        fd_log(r, "SENTINEL %s", r->sn.url);
    for (int i = 0; i < r->procs; i++)
        if (fd_spawn_worker(r, i) != 0)
            goto cleanup;
    setup_ok = 1;

    int64_t end = fd_now_ms() + (int64_t)seconds * 1000 - SETTLE_MS;
    fd_sleep_ms(WARMUP_MS);
    while (fd_now_ms() < end) {
        if (c->inject == NULL) {
            fd_sleep_ms(100);
            continue;
        }
        if (c->inject(r) != 0) {
            fd_log(r, "FAULT-ERROR injecting %s", c->name);
            fprintf(stderr, "faults: could not inject %s\n", c->name);
            setup_ok = 0;
            break;
        }
        int64_t left = end - fd_now_ms();
        fd_sleep_ms(
            (int)(left < c->gap_ms ? (left > 0 ? left : 0) : c->gap_ms));
    }
    fd_sleep_ms(SETTLE_MS);
cleanup:
    if (r->shared != NULL && stop_workers(r) != 0)
        fprintf(stderr, "faults: a worker failed or had to be killed\n");
    if (r->shared != NULL)
        write_final(r);
    if (r->log_fd >= 0) {
        fd_faults_finish(r);
        fd_log(r, "END %lld", (long long)fw_now_ns());
    }
    fd_proxy_stop(r->proxy);
    r->proxy = NULL;
    if (r->sentinel_up)
        rh_sentinel_stop(&r->sn);
    else
        rh_stop(&r->srv);
    r->sentinel_up = 0;
    if (r->log_fd >= 0)
        close(r->log_fd);
    if (setup_ok)
        rc = fc_check(r->dir, stdout, results) == 0 ? 0 : 1;
    return rc;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --case NAME [--seconds S | --soak MINUTES] "
            "[--procs P] [--threads T] [--keys K] [--out DIR] "
            "[--results FILE] [--ctl PATH] [--wait-replicas N]\n"
            "       %s --list\n",
            argv0, argv0);
}

int main(int argc, char **argv)
{
    static struct fd_run run;
    const char *name = NULL, *results = NULL, *out = NULL;
    int seconds = 8, rc, wait_replicas = -1;

    run.procs = 3;
    run.threads = 0; /* the case's, or 3 */
    run.keys = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--list") == 0) {
            for (const struct fd_case *c = fd_cases; c->name; c++)
                printf("%s\n", c->name);
            return 0;
        }
        if (v == NULL) {
            usage(argv[0]);
            return 2;
        }
        i++;
        if (strcmp(a, "--case") == 0)
            name = v;
        else if (strcmp(a, "--seconds") == 0)
            seconds = atoi(v);
        else if (strcmp(a, "--soak") == 0)
            seconds = atoi(v) * 60;
        else if (strcmp(a, "--procs") == 0)
            run.procs = atoi(v);
        else if (strcmp(a, "--threads") == 0)
            run.threads = atoi(v);
        else if (strcmp(a, "--keys") == 0)
            run.keys = atoi(v);
        else if (strcmp(a, "--out") == 0)
            out = v;
        else if (strcmp(a, "--results") == 0)
            results = v;
        else if (strcmp(a, "--wait-replicas") == 0)
            wait_replicas = atoi(v);
        else if (strcmp(a, "--ctl") == 0)
            snprintf(run.ctl, sizeof run.ctl, "%s", v);
        else {
            usage(argv[0]);
            return 2;
        }
    }
    run.c = name ? fd_case_find(name) : NULL;
    if (run.c != NULL && run.threads == 0)
        run.threads = run.c->threads > 0 ? run.c->threads : 3;
    if (run.c != NULL)
        run.wait_replicas =
            wait_replicas >= 0 ? wait_replicas : run.c->wait_replicas;
    if (run.c == NULL || seconds < 3 || run.procs < 1 ||
        run.procs > FD_MAX_PROCS || run.threads < 1 || run.keys < 1 ||
        run.keys > FW_MAX_KEYS) {
        if (name && run.c == NULL)
            fprintf(stderr, "faults: no case named %s (see --list)\n", name);
        usage(argv[0]);
        return 2;
    }
    if (out != NULL) {
        snprintf(run.dir, sizeof run.dir, "%s", out);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(run.dir, sizeof run.dir, "%s/lw-faults-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(run.dir) == NULL) {
            perror("faults: mkdtemp");
            return 1;
        }
    }
    rc = run_case(&run, seconds, results);
    if (rc == 0 && out == NULL) {
        clean_dir(run.dir);
        rmdir(run.dir);
    } else {
        printf("records: %s\n", run.dir);
    }
    return rc;
}

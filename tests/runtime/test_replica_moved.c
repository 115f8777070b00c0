/*
 * Replica-safe acquire when the address the client knows moves to another
 * server between the acquisition and its WAIT: a managed endpoint or a
 * virtual IP failing over, or a Sentinel that names a new master while a
 * WAIT is on its way.  A proxy stands for the address: it forwards to a
 * master A that has no replica until the client sends its WAIT, then cuts
 * that connection and sends every new one to master B, which has one.
 * The WAIT lockweave replays there is answered by B's replica, but the
 * lock lives on A alone: the acquisition must not count (LW_EREPLICAS, body
 * not run, and no lost-lock call for a lock never held).  Then the WAIT of
 * a lock taken on B is cut and replayed on B: the lock is B's, and
 * granted.
 */
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAIT_OK_MS 3000
#define PAIRS_MAX  16

/* The moving address: a loopback proxy, one thread polling every pair. */
static struct {
    int lfd, port;
    int target; /* where new connections go (atomic) */
    int after;  /* where they go once a WAIT was cut (atomic) */
    int armed;  /* cut the next connection that sends WAIT (atomic) */
    int cuts;   /* connections cut so (atomic) */
    int stop;   /* atomic */
    int c[PAIRS_MAX], s[PAIRS_MAX], n;
    pthread_t thread;
} px;

static void pair_close(int i)
{
    close(px.c[i]);
    close(px.s[i]);
    px.n--;
    px.c[i] = px.c[px.n];
    px.s[i] = px.s[px.n];
}

static int write_all(int fd, const char *p, ssize_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, (size_t)n);
        if (w <= 0)
            return -1;
        p += w;
        n -= w;
    }
    return 0;
}

static int connect_to(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int contains(const char *p, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i + len <= n; i++)
        if (memcmp(p + i, s, len) == 0)
            return 1;
    return 0;
}

/* Bytes from one side of pair i; the client's WAIT cuts the pair when
 * armed.  0, or -1 when the pair is gone. */
static int relay(int i, int from_client)
{
    static const char wait_cmd[] = "$4\r\nWAIT\r\n";
    char buf[65536];
    ssize_t n = read(from_client ? px.c[i] : px.s[i], buf, sizeof buf);

    if (n <= 0)
        return -1;
    if (from_client && __atomic_load_n(&px.armed, __ATOMIC_ACQUIRE) &&
        contains(buf, (size_t)n, wait_cmd, sizeof wait_cmd - 1)) {
        __atomic_store_n(&px.target, px.after, __ATOMIC_RELEASE);
        __atomic_store_n(&px.armed, 0, __ATOMIC_RELEASE);
        __atomic_add_fetch(&px.cuts, 1, __ATOMIC_ACQ_REL);
        return -1;
    }
    return write_all(from_client ? px.s[i] : px.c[i], buf, n);
}

static void *proxy_main(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&px.stop, __ATOMIC_ACQUIRE)) {
        struct pollfd fds[1 + 2 * PAIRS_MAX];
        int n = px.n;

        fds[0] = (struct pollfd){.fd = px.lfd, .events = POLLIN};
        for (int i = 0; i < n; i++) {
            fds[1 + 2 * i] = (struct pollfd){.fd = px.c[i], .events = POLLIN};
            fds[2 + 2 * i] = (struct pollfd){.fd = px.s[i], .events = POLLIN};
        }
        if (poll(fds, (nfds_t)(1 + 2 * n), 50) <= 0)
            continue;
        /* From the last pair down: closing one moves the last into its
         * place, which was handled already. */
        for (int i = n - 1; i >= 0; i--)
            if (((fds[1 + 2 * i].revents && relay(i, 1) != 0) ||
                 (fds[2 + 2 * i].revents && relay(i, 0) != 0)))
                pair_close(i);
        if (fds[0].revents && px.n < PAIRS_MAX) {
            int c = accept(px.lfd, NULL, NULL);
            int s = connect_to(__atomic_load_n(&px.target, __ATOMIC_ACQUIRE));
            if (c >= 0 && s >= 0) {
                px.c[px.n] = c;
                px.s[px.n++] = s;
            } else {
                if (c >= 0)
                    close(c);
                if (s >= 0)
                    close(s);
            }
        }
    }
    while (px.n > 0)
        pair_close(0);
    return NULL;
}

static void proxy_start(int target)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;

    px.target = target;
    px.lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(px.lfd >= 0);
    CHECK_EQ(bind(px.lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(px.lfd, 16), 0);
    CHECK_EQ(getsockname(px.lfd, (struct sockaddr *)&a, &len), 0);
    px.port = ntohs(a.sin_port);
    CHECK_EQ(pthread_create(&px.thread, NULL, proxy_main, NULL), 0);
}

static void proxy_stop(void)
{
    __atomic_store_n(&px.stop, 1, __ATOMIC_RELEASE);
    pthread_join(px.thread, NULL);
    close(px.lfd);
}

/* Every connection from now on goes to port; the next one that sends a
 * WAIT is cut first, and then they go to after. */
static void proxy_arm(int port, int after)
{
    __atomic_store_n(&px.target, port, __ATOMIC_RELEASE);
    px.after = after;
    __atomic_store_n(&px.armed, 1, __ATOMIC_RELEASE);
}

static int entered, lost_calls;

static void on_lost(const char *key, size_t keylen, int reason, void *ud)
{
    (void)key, (void)keylen, (void)reason, (void)ud;
    lost_calls++;
}

static int guarded(const char *key)
{
    lw_guard g;
    int rc = lock_str(&g, key, 5000, 0);
    if (rc != LW_OK)
        return rc;
    entered++;
    return lw_guard_leave(&g);
}

int main(void)
{
    static rh_server a, b, b_replica;
    static char port[16];
    static const char *replica_args[PAIR_ARGS];
    char url[64];
    rh_opts o;
    lw_config cfg;

    rh_opts_init(&o);
    CHECK_EQ(rh_start(&a, &o), 0);
    start_pair(&b, &b_replica, port, replica_args);

    proxy_start(a.port);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", px.port);
    lw_config_init(&cfg);
    cfg.redis_url = url;
    cfg.connect_timeout_ms = 1000;
    cfg.command_timeout_ms = 5000;
    cfg.wait_replicas = 1;
    cfg.wait_timeout_ms = WAIT_OK_MS;
    CHECK_RC(lw_configure(&cfg), LW_OK);
    lw_set_lost_handler(on_lost, NULL);

    /* Taken on A, its WAIT cut and replayed on B: B's replica answers, but
     * it has no copy of a lock that B never had. */
    proxy_arm(a.port, b.port);
    int rc = guarded("moved");
    printf("lock taken on A, WAIT replayed on B (1 replica): %s\n",
           lw_strerror(rc));
    CHECK_EQ(__atomic_load_n(&px.cuts, __ATOMIC_ACQUIRE), 1);
    CHECK_RC(rc, LW_EREPLICAS);
    CHECK_RC(lw_last_error(), LW_EREPLICAS);
    CHECK_EQ(entered, 0);
    CHECK_EQ(lock_exists(&b, "moved"), 0);
    /* Never held, so never lost: the lost handler is not called. */
    CHECK_EQ(lost_calls, 0);

    /* Taken on B, its WAIT cut and replayed on B again: the lock is B's
     * and its replica has it, so it counts. */
    proxy_arm(b.port, b.port);
    rc = guarded("stayed");
    printf("lock taken on B, WAIT replayed on B: %s\n", lw_strerror(rc));
    CHECK_EQ(__atomic_load_n(&px.cuts, __ATOMIC_ACQUIRE), 2);
    CHECK_RC(rc, LW_OK);
    CHECK_EQ(entered, 1);

    lw_shutdown();
    proxy_stop();
    rh_stop(&b_replica);
    rh_stop(&b);
    rh_stop(&a);
    printf("replica_moved: ok\n");
    return 0;
}

/*
 * The delay proxy: one thread, poll() over a listening socket and every
 * client/server socket pair.  Bytes read are queued with the time they are
 * due; a queue's head is written once due.  Either side closing closes both,
 * as a dead server or connection would.
 */
#include "fd_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fw_shared.h"

#define MAX_PAIRS 256
#define CHUNK     65536
#define TICK_MS   20 /* longest poll: notices stop and delay changes */

struct chunk {
    struct chunk *next;
    int64_t due_ms;
    size_t len, off;
    char data[];
};

struct dir {
    int from, to;
    struct chunk *head, *tail;
};

struct pair {
    struct dir up, down; /* client -> server, server -> client */
};

struct fd_proxy {
    int listen_fd, port, target_port;
    int delay_ms; /* atomic */
    int stop;     /* atomic */
    pthread_t thread;
    struct pair pairs[MAX_PAIRS];
    int npairs;
};

static int64_t now_ms(void)
{
    return fw_now_ns() / 1000000;
}

static void dir_free(struct dir *d)
{
    while (d->head) {
        struct chunk *c = d->head;
        d->head = c->next;
        free(c);
    }
    d->tail = NULL;
}

static void pair_close(struct fd_proxy *p, int i)
{
    struct pair *pr = &p->pairs[i];
    close(pr->up.from);
    close(pr->up.to);
    dir_free(&pr->up);
    dir_free(&pr->down);
    p->pairs[i] = p->pairs[--p->npairs];
}

static int connect_target(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1; /* server down: the client sees its connection close */
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void accept_one(struct fd_proxy *p)
{
    int c = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    int s, one = 1;

    if (c < 0)
        return;
    if (p->npairs == MAX_PAIRS || (s = connect_target(p->target_port)) < 0) {
        close(c);
        return;
    }
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    p->pairs[p->npairs++] =
        (struct pair){.up = {.from = c, .to = s}, .down = {.from = s, .to = c}};
}

/* Read what is there into the queue; 0 on EOF or error. */
static int pump_in(struct fd_proxy *p, struct dir *d)
{
    struct chunk *c = malloc(sizeof *c + CHUNK);
    ssize_t n;

    if (c == NULL)
        return 0;
    n = read(d->from, c->data, CHUNK);
    if (n <= 0) {
        free(c);
        return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
    c->len = (size_t)n;
    c->off = 0;
    c->next = NULL;
    c->due_ms = now_ms() + __atomic_load_n(&p->delay_ms, __ATOMIC_RELAXED);
    if (d->tail && d->tail->due_ms > c->due_ms)
        c->due_ms = d->tail->due_ms; /* never overtake earlier bytes */
    if (d->tail)
        d->tail->next = c;
    else
        d->head = c;
    d->tail = c;
    return 1;
}

/* Write due chunks; 0 on error. */
static int pump_out(struct dir *d, int64_t now)
{
    while (d->head && d->head->due_ms <= now) {
        struct chunk *c = d->head;
        ssize_t n = write(d->to, c->data + c->off, c->len - c->off);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        c->off += (size_t)n;
        if (c->off < c->len)
            return 1;
        d->head = c->next;
        if (d->head == NULL)
            d->tail = NULL;
        free(c);
    }
    return 1;
}

static int due_wait(const struct dir *d, int64_t now, int wait)
{
    if (d->head && d->head->due_ms > now && d->head->due_ms - now < wait)
        return (int)(d->head->due_ms - now);
    return wait;
}

static void *proxy_main(void *arg)
{
    struct fd_proxy *p = arg;
    struct pollfd fds[1 + 2 * MAX_PAIRS];

    while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
        int64_t now = now_ms();
        int wait = TICK_MS, n = 0;

        fds[n++] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        for (int i = 0; i < p->npairs; i++) {
            struct pair *pr = &p->pairs[i];
            short ev_c = POLLIN, ev_s = POLLIN;
            if (pr->down.head && pr->down.head->due_ms <= now)
                ev_c |= POLLOUT;
            if (pr->up.head && pr->up.head->due_ms <= now)
                ev_s |= POLLOUT;
            fds[n++] = (struct pollfd){.fd = pr->up.from, .events = ev_c};
            fds[n++] = (struct pollfd){.fd = pr->down.from, .events = ev_s};
            wait = due_wait(&pr->up, now, wait);
            wait = due_wait(&pr->down, now, wait);
        }
        if (poll(fds, (nfds_t)n, wait) < 0 && errno != EINTR)
            break;
        now = now_ms();
        /* Walk backwards: pair_close() moves the last pair into the hole. */
        for (int i = p->npairs - 1; i >= 0; i--) {
            struct pair *pr = &p->pairs[i];
            short rc = fds[1 + 2 * i].revents, rs = fds[2 + 2 * i].revents;
            int ok = 1;
            if (rc & (POLLIN | POLLHUP | POLLERR))
                ok = ok && pump_in(p, &pr->up);
            if (rs & (POLLIN | POLLHUP | POLLERR))
                ok = ok && pump_in(p, &pr->down);
            ok = ok && pump_out(&pr->up, now) && pump_out(&pr->down, now);
            if (!ok)
                pair_close(p, i);
        }
        if (fds[0].revents & POLLIN)
            accept_one(p);
    }
    return NULL;
}

struct fd_proxy *fd_proxy_start(int target_port)
{
    struct fd_proxy *p = calloc(1, sizeof *p);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;

    if (p == NULL)
        return NULL;
    p->target_port = target_port;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0 ||
        bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) ||
        listen(p->listen_fd, 128) ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &alen))
        goto fail;
    fcntl(p->listen_fd, F_SETFL, fcntl(p->listen_fd, F_GETFL) | O_NONBLOCK);
    p->port = ntohs(a.sin_port);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0)
        goto fail;
    return p;
fail:
    perror("faults: delay proxy");
    if (p->listen_fd >= 0)
        close(p->listen_fd);
    free(p);
    return NULL;
}

int fd_proxy_port(const struct fd_proxy *p)
{
    return p->port;
}

void fd_proxy_set_delay(struct fd_proxy *p, int ms)
{
    __atomic_store_n(&p->delay_ms, ms, __ATOMIC_RELAXED);
}

void fd_proxy_stop(struct fd_proxy *p)
{
    if (p == NULL)
        return;
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_join(p->thread, NULL);
    while (p->npairs > 0)
        pair_close(p, p->npairs - 1);
    close(p->listen_fd);
    free(p);
}

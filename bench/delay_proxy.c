/*
 * lw_delay_proxy LISTEN_PORT TARGET_PORT [DELAY_US]: a loopback TCP proxy
 * that holds every byte DELAY_US microseconds (default 250) in each
 * direction before passing it on, so that a local redis-server answers like
 * one a network round trip of 2 x DELAY_US away.  For bench/lan/run.sh
 * (one proxy before one server) and bench/redlock/run.sh --latency (one
 * before each master).
 *
 * One thread, one epoll loop, no busy waiting: what is read is stamped with
 * its due time and put on one queue; since the delay is the same for every
 * byte, that queue is in due order, and one timerfd (absolute, armed to the
 * head's due time) says when to pass the head on.  Each direction of a
 * connection keeps what is due but not yet written in its own list, so the
 * bytes of a connection arrive in the order they were sent, and a peer that
 * does not read holds back only its own connection: past 4 MiB in flight a
 * direction stops reading its source until it drains.  An end of stream is
 * passed on (shutdown) in order too, after the bytes before it; an error on
 * either socket closes both.  Both sockets are TCP_NODELAY, so no write of
 * the proxy's waits on Nagle.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define READ_MAX   65536
#define IN_FLIGHT  (4u << 20) /* bytes per direction before reading stops */
#define MAX_EVENTS 64

struct direction;
struct pair;

/* What was read at one time: bytes, or (len 0) the end of the stream. */
struct chunk {
    struct chunk *next; /* on the due queue, then on its direction's */
    struct direction *dir;
    uint64_t due;    /* CLOCK_MONOTONIC ns */
    size_t len, off; /* off: bytes already written */
    char data[];
};

struct direction {
    struct pair *pair;
    int from, to;                 /* indexes of the pair's sockets */
    size_t in_flight;             /* bytes read and not yet written */
    struct chunk *out, *out_tail; /* due, not yet (all) written */
    int eof_read, eof_sent;
};

struct side {
    struct pair *pair;
    int fd, idx;
    uint32_t events; /* as registered with epoll */
};

struct pair {
    struct side side[2];     /* 0: the client, 1: the server */
    struct direction dir[2]; /* 0: client -> server, 1: back */
    struct pair *next_dead;
    int dead;
};

static int epfd, listen_fd, timer_fd, target_port;
static uint64_t delay_ns = 250000;
static struct chunk *due_head, *due_tail;
static uint64_t armed; /* due time the timer is set to, 0: none */
static struct pair *dead;
static char listener_mark, timer_mark; /* epoll data of the two fds */

static void die(const char *what)
{
    fprintf(stderr, "lw_delay_proxy: %s: %s\n", what, strerror(errno));
    exit(2);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Registers with epoll what side s waits for now: input while its outgoing
 * direction is under IN_FLIGHT and open, output while its incoming one has
 * due bytes that did not fit. */
static void update_events(struct side *s)
{
    struct pair *p = s->pair;
    struct direction *from = &p->dir[s->idx], *to = &p->dir[1 - s->idx];
    struct epoll_event ev = {.data.ptr = s};

    if (!from->eof_read && from->in_flight < IN_FLIGHT)
        ev.events |= EPOLLIN;
    if (to->out != NULL)
        ev.events |= EPOLLOUT;
    if (ev.events == s->events)
        return;
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &ev))
        die("epoll_ctl");
    s->events = ev.events;
}

/* Closes both sockets; the pair is freed after this round of events, and
 * its chunks still on the due queue are dropped when they come due. */
static void kill_pair(struct pair *p)
{
    if (p->dead)
        return;
    p->dead = 1;
    for (int i = 0; i < 2; i++) {
        close(p->side[i].fd);
        for (struct chunk *c = p->dir[i].out, *n; c != NULL; c = n) {
            n = c->next;
            free(c);
        }
        p->dir[i].out = NULL;
    }
    p->next_dead = dead;
    dead = p;
}

static int queued(const struct pair *p)
{
    for (const struct chunk *c = due_head; c != NULL; c = c->next)
        if (c->dir == &p->dir[0] || c->dir == &p->dir[1])
            return 1;
    return 0;
}

/* Frees the dead pairs that no chunk on the due queue points to. */
static void reap(void)
{
    struct pair **pp = &dead;

    while (*pp != NULL) {
        struct pair *p = *pp;
        if (queued(p)) {
            pp = &p->next_dead;
            continue;
        }
        *pp = p->next_dead;
        free(p);
    }
}

/* Writes what direction d has due; 0 when the pair was closed. */
static int flush(struct pair *p, struct direction *d)
{
    struct side *to = &p->side[d->to];

    while (d->out != NULL) {
        struct chunk *c = d->out;
        if (c->len == 0) { /* the end of the stream, in its place */
            shutdown(to->fd, SHUT_WR);
            d->eof_sent = 1;
        } else {
            ssize_t n =
                send(to->fd, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                break;
            if (n < 0) {
                kill_pair(p);
                return 0;
            }
            c->off += (size_t)n;
            d->in_flight -= (size_t)n;
            if (c->off < c->len)
                break;
        }
        d->out = c->next;
        free(c);
    }
    if (d->out == NULL)
        d->out_tail = NULL;
    if (d->eof_sent && p->dir[d->to].eof_sent) {
        kill_pair(p); /* both ends have said all they had to say */
        return 0;
    }
    update_events(to);
    update_events(&p->side[d->from]);
    return 1;
}

static void enqueue(struct direction *d, const char *data, size_t len,
                    uint64_t now)
{
    struct chunk *c = malloc(sizeof *c + len);

    if (c == NULL)
        die("malloc");
    *c = (struct chunk){.dir = d, .due = now + delay_ns, .len = len};
    memcpy(c->data, data, len);
    d->in_flight += len;
    if (due_tail != NULL)
        due_tail->next = c;
    else
        due_head = c;
    due_tail = c;
}

/* Reads what side s has: bytes or its end, stamped with their due time. */
static void read_side(struct side *s)
{
    static char buf[READ_MAX];
    struct pair *p = s->pair;
    struct direction *d = &p->dir[s->idx];
    uint64_t now = now_ns();

    while (!d->eof_read && d->in_flight < IN_FLIGHT) {
        ssize_t n = recv(s->fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n < 0) {
            kill_pair(p);
            return;
        }
        if (n == 0)
            d->eof_read = 1;
        enqueue(d, buf, (size_t)n, now);
        if (n < (ssize_t)sizeof buf)
            break;
    }
    update_events(s);
}

/* Moves the chunks that are due to their directions and writes them. */
static void deliver(void)
{
    uint64_t now = now_ns();

    while (due_head != NULL && due_head->due <= now) {
        struct chunk *c = due_head;
        struct direction *d = c->dir;
        struct pair *p = d->pair;

        due_head = c->next;
        if (due_head == NULL)
            due_tail = NULL;
        c->next = NULL;
        if (p->dead) {
            free(c);
            continue;
        }
        if (d->out_tail != NULL)
            d->out_tail->next = c;
        else
            d->out = c;
        d->out_tail = c;
        if (d->out == c) /* nothing was waiting: write now */
            flush(p, d);
    }
}

/* Sets the timer to the head of the due queue. */
static void arm(void)
{
    uint64_t due = due_head != NULL ? due_head->due : 0;
    struct itimerspec it = {0};

    if (due == armed)
        return;
    it.it_value.tv_sec = (time_t)(due / 1000000000u);
    it.it_value.tv_nsec = (long)(due % 1000000000u);
    if (timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &it, NULL))
        die("timerfd_settime");
    armed = due;
}

static int add_fd(int fd, void *ptr, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = ptr};

    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* 0 when there was no connection to accept. */
static int accept_one(void)
{
    struct sockaddr_in to = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)target_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int cfd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    int sfd;
    struct pair *p;

    if (cfd < 0)
        return 0; /* EAGAIN, or a client that gave up */
    /* A blocking connect: on loopback it is answered at once. */
    sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sfd < 0 || connect(sfd, (struct sockaddr *)&to, sizeof to) ||
        fcntl(sfd, F_SETFL, O_NONBLOCK)) {
        if (sfd >= 0)
            close(sfd);
        close(cfd); /* the client sees the server refuse */
        return 1;
    }
    nodelay(cfd);
    nodelay(sfd);
    p = calloc(1, sizeof *p);
    if (p == NULL)
        die("calloc");
    for (int i = 0; i < 2; i++) {
        p->side[i] = (struct side){
            .pair = p, .fd = i ? sfd : cfd, .idx = i, .events = EPOLLIN};
        p->dir[i] = (struct direction){.pair = p, .from = i, .to = 1 - i};
    }
    if (add_fd(cfd, &p->side[0], EPOLLIN) || add_fd(sfd, &p->side[1], EPOLLIN))
        die("epoll_ctl");
    return 1;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct epoll_event ev[MAX_EVENTS];
    int one = 1;

    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: lw_delay_proxy LISTEN_PORT TARGET_PORT "
                        "[DELAY_US (250)]\n");
        return 2;
    }
    addr.sin_port = htons((uint16_t)atoi(argv[1]));
    target_port = atoi(argv[2]);
    if (argc == 4)
        delay_ns = (uint64_t)strtoull(argv[3], NULL, 10) * 1000u;
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the due time, not 50 us on */

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0)
        die("socket");
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) ||
        listen(listen_fd, 512))
        die("listen");
    timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (timer_fd < 0 || epfd < 0)
        die("timerfd/epoll");
    if (add_fd(listen_fd, &listener_mark, EPOLLIN) ||
        add_fd(timer_fd, &timer_mark, EPOLLIN))
        die("epoll_ctl");
    for (;;) {
        int n = epoll_wait(epfd, ev, MAX_EVENTS, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            void *ptr = ev[i].data.ptr;
            struct side *s = ptr;
            uint64_t ticks;

            if (ptr == &listener_mark) {
                while (accept_one())
                    ;
                continue;
            }
            if (ptr == &timer_mark) {
                /* EAGAIN: set again since it fired; deliver() decides. */
                if (read(timer_fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                    die("timerfd");
                continue;
            }
            if (s->pair->dead)
                continue;
            if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                read_side(s);
            /* An error, or both ways shut with nothing left to read. */
            if (!s->pair->dead && (ev[i].events & (EPOLLHUP | EPOLLERR)) &&
                s->pair->dir[s->idx].eof_read)
                kill_pair(s->pair);
            if (!s->pair->dead && (ev[i].events & EPOLLOUT))
                flush(s->pair, &s->pair->dir[1 - s->idx]);
        }
        deliver();
        arm();
        reap();
    }
}

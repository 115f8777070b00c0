/*
 * lockweave on a libevent loop: lw_loop_event(base) watches lockweave's
 * descriptor with a persistent read event and runs finished requests'
 * callbacks on the base's thread.  Header-only, over lw_loop_hooks
 * (<lockweave.h>): link libevent and lockweave.  Call lw_loop_free()
 * before event_base_free().
 */
#ifndef LOCKWEAVE_EVENT_H
#define LOCKWEAVE_EVENT_H

#include <event2/event.h>
#include <lockweave.h>

static inline void lw__event_ready(evutil_socket_t fd, short what, void *lw)
{
    (void)fd;
    (void)what;
    lw_loop_dispatch((lw_loop *)lw);
}

static inline void *lw__event_watch(void *base, int fd, lw_loop *lw)
{
    struct event *ev = event_new((struct event_base *)base, fd,
                                 EV_READ | EV_PERSIST, lw__event_ready, lw);

    if (ev != NULL && event_add(ev, NULL) != 0) {
        event_free(ev);
        ev = NULL;
    }
    return ev;
}

static inline void lw__event_unwatch(void *ev)
{
    event_free((struct event *)ev); /* deletes it first */
}

/* lockweave's state on base, or NULL (lw_loop_new()). */
static inline lw_loop *lw_loop_event(struct event_base *base)
{
    lw_loop_hooks hooks;

    hooks.loop = base;
    hooks.watch = lw__event_watch;
    hooks.unwatch = lw__event_unwatch;
    return lw_loop_new(&hooks);
}

#endif

/*
 * lockweave on a libuv loop: lw_loop_uv(loop) watches lockweave's
 * descriptor with a uv_poll_t and runs finished requests' callbacks on the
 * loop's thread.  Header-only, over lw_loop_hooks (<lockweave.h>): link
 * libuv and lockweave.  Call lw_loop_free() before uv_loop_close(): it
 * closes the poll handle, which libuv frees on the loop's next iteration.
 */
#ifndef LOCKWEAVE_UV_H
#define LOCKWEAVE_UV_H

#include <lockweave.h>
#include <stdlib.h>
#include <uv.h>

static inline void lw__uv_ready(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    lw_loop_dispatch((lw_loop *)h->data);
}

static inline void lw__uv_closed(uv_handle_t *h)
{
    free(h);
}

static inline void *lw__uv_watch(void *loop, int fd, lw_loop *lw)
{
    uv_poll_t *h = (uv_poll_t *)malloc(sizeof *h);

    if (h == NULL)
        return NULL;
    if (uv_poll_init((uv_loop_t *)loop, h, fd) != 0) {
        free(h);
        return NULL;
    }
    h->data = lw;
    if (uv_poll_start(h, UV_READABLE, lw__uv_ready) != 0) {
        uv_close((uv_handle_t *)h, lw__uv_closed);
        return NULL;
    }
    return h;
}

static inline void lw__uv_unwatch(void *h)
{
    uv_poll_stop((uv_poll_t *)h);
    uv_close((uv_handle_t *)h, lw__uv_closed);
}

/* lockweave's state on loop, or NULL (lw_loop_new()). */
static inline lw_loop *lw_loop_uv(uv_loop_t *loop)
{
    lw_loop_hooks hooks;

    hooks.loop = loop;
    hooks.watch = lw__uv_watch;
    hooks.unwatch = lw__uv_unwatch;
    return lw_loop_new(&hooks);
}

#endif

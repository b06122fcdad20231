/* libmicrohttpd in "external select" mode on its epoll fd, driven by the
 * libuv loop: a uv_poll on that fd, a uv_timer for MHD's own timeouts, and
 * a uv_idle for when MHD has work left over.
 *
 * MHD_get_timeout answers 0 while MHD has data already read and waiting
 * (a busy connection, pipelined requests). Re-arming a 0 ms timer from its
 * own callback made libuv 1.44 (Debian 12) run it again within the same
 * pass over timers, without end while the load lasted (libuv issue 4245,
 * fixed in 1.48): the poll phase, which delivers the workers' completions
 * and the signal pipe, never ran, so finished requests were not sent back
 * and SIGTERM was not seen until the clients stopped. An idle handle runs
 * once per loop iteration and makes that iteration's poll not block, so
 * MHD's leftover work alternates with everything else the loop serves. */
#include "http_internal.h"

static void on_mhd_timer(uv_timer_t *timer)
{
    http_loop_run(timer->data);
}

static void on_mhd_idle(uv_idle_t *idle)
{
    http_loop_run(idle->data);
}

static void on_mhd_poll(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    http_loop_run(poll->data);
}

void http_loop_start(struct http *h, int epoll_fd)
{
    uv_poll_init(h->loop, &h->mhd_poll, epoll_fd);
    h->mhd_poll.data = h;
    uv_poll_start(&h->mhd_poll, UV_READABLE, on_mhd_poll);
    uv_timer_init(h->loop, &h->mhd_timer);
    h->mhd_timer.data = h;
    uv_idle_init(h->loop, &h->mhd_idle);
    h->mhd_idle.data = h;
}

/* Keep MHD's timeout armed: a forgotten timer means idle connections never
 * time out. */
void http_loop_run(struct http *h)
{
    if (h->daemon == NULL)
        return;
    /* At its connection limit MHD takes the listening socket out of its
     * epoll set and puts it back only at the start of a later MHD_run: run
     * again after a close, or the backlog waits for an event that never
     * comes. */
    for (int pass = 0; pass < 2; pass++) {
        h->conn_closed = false;
        MHD_run(h->daemon);
        if (!h->conn_closed)
            break;
    }
    http_prepare_flush(h); /* the requests this run read, in one hand-off */
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(h->daemon, &ms) != MHD_YES) {
        uv_idle_stop(&h->mhd_idle);
        uv_timer_stop(&h->mhd_timer);
    } else if (ms == 0) {
        uv_timer_stop(&h->mhd_timer);
        uv_idle_start(&h->mhd_idle, on_mhd_idle);
    } else {
        uv_idle_stop(&h->mhd_idle);
        uv_timer_start(&h->mhd_timer, on_mhd_timer, ms, 0);
    }
}

void http_loop_stop(struct http *h)
{
    uv_idle_stop(&h->mhd_idle);
    uv_timer_stop(&h->mhd_timer);
    uv_poll_stop(&h->mhd_poll);
    uv_close((uv_handle_t *)&h->mhd_poll, NULL);
    uv_close((uv_handle_t *)&h->mhd_timer, NULL);
    uv_close((uv_handle_t *)&h->mhd_idle, NULL);
}

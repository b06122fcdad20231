/* Connections: each open one is tracked for the total request deadline
 * and the connection limit.
 *
 * An idle timeout alone is never tripped by a client sending a byte a
 * second; the sweep here enforces request_timeout_ms on the whole request
 * (and on idle keep-alive connections).
 *
 * At the connection limit, a connection that is idle (no request begun:
 * never used, or between keep-alive requests) with nothing unread in its
 * socket is closed to make room, the longest idle first, as nginx does with
 * its idle keep-alive connections: for a new connection once it has been
 * idle a short grace, for a request that has arrived at once. Without that,
 * connections that never send a request held every slot: the ones over the
 * limit were never told 503 (that needs a request), and normal clients
 * waited in the listen backlog until request_timeout_ms. A request begun
 * and never finished (slowloris) is the deadline's to cut. */
#include "http_internal.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "log.h"

/* A connection answered with close is closed this long after its answer
 * went out if the client has not closed its side by then. */
#define LINGER_MS 2000

/* To make room for a new connection, an idle one must have been idle this
 * long: a client that has just connected is about to send its request. To
 * make room for a request that has arrived, any idle connection goes. */
#define IDLE_GRACE_MS 1000

/* Descriptors besides client connections, per loop: the listening socket,
 * the epoll set, libuv's signal pipe and async handles, the log, the
 * checkpoint. */
#define FD_MARGIN 32

static void idle_link(struct http *h, struct http_conn *hc)
{
    hc->idle = true;
    hc->idle_next = NULL;
    hc->idle_prev = h->idle_tail;
    if (h->idle_tail)
        h->idle_tail->idle_next = hc;
    else
        h->idle_head = hc;
    h->idle_tail = hc;
}

static void idle_unlink(struct http *h, struct http_conn *hc)
{
    if (!hc->idle)
        return;
    hc->idle = false;
    if (hc->idle_prev)
        hc->idle_prev->idle_next = hc->idle_next;
    else
        h->idle_head = hc->idle_next;
    if (hc->idle_next)
        hc->idle_next->idle_prev = hc->idle_prev;
    else
        h->idle_tail = hc->idle_prev;
    hc->idle_prev = hc->idle_next = NULL;
}

/* Over every loop: max_connections is the server's. A loop makes room only
 * among its own idle connections; another loop's sweep closes its own idle
 * ones while the total is over. */
static size_t open_count(const struct http *h)
{
    return atomic_load_explicit(h->open_conns, memory_order_relaxed);
}

static int fd_of(struct http_conn *hc)
{
    uv_os_fd_t fd;
    return uv_fileno((uv_handle_t *)&hc->tcp, &fd) == 0 ? fd : -1;
}

/* Close the connections whose client has gone while their request is on
 * the loop: a close the loop has not read yet (its events come in the
 * same poll as the request that needs the room). */
static size_t cut_departed(struct http *h)
{
    size_t n = 0;
    struct http_conn *next;
    for (struct http_conn *hc = h->conns; hc != NULL; hc = next) {
        next = hc->next;
        if (hc->waiting)
            continue;
        int fd = fd_of(hc);
        if (fd >= 0 && srv_client_left(fd)) {
            http_conn_close(hc);
            n++;
        }
    }
    return n;
}

/* Whether bytes wait unread: a request on its way, which its connection
 * must not be closed under. */
static bool has_unread_bytes(struct http_conn *hc)
{
    int fd = fd_of(hc);
    char byte;
    return hc->in_len > 0 ||
           (fd >= 0 && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0);
}

bool http_conns_make_room(struct http *h, bool for_request)
{
    uint64_t now = srv_now_ns();
    uint64_t grace = for_request ? 0 : (uint64_t)IDLE_GRACE_MS * 1000000u;
    struct http_conn *next;
    for (struct http_conn *hc = h->idle_head;
         hc != NULL && open_count(h) > h->settings.max_connections; hc = next) {
        next = hc->idle_next;
        if (now - hc->t_start < grace)
            break; /* the rest are younger still */
        if (has_unread_bytes(hc))
            continue;
        http_conn_close(hc);
        h->evictions++;
    }
    /* Before a request is refused, connections whose clients left go
     * (the sweep would close them within its period anyway). */
    if (for_request && open_count(h) > h->settings.max_connections)
        cut_departed(h);
    /* Under a flood of idle connections this happens thousands of times a
     * second: one line a second says so. */
    if (h->evictions > 0 && now - h->t_eviction_log >= 1000000000u) {
        log_msg(LOG_INFO,
                "closed %llu idle connections to make room for new ones (max_connections %zu)",
                (unsigned long long)h->evictions, h->settings.max_connections);
        h->evictions = 0;
        h->t_eviction_log = now;
    }
    return open_count(h) <= h->settings.max_connections;
}

void http_conns_busy(struct http *h, struct http_conn *hc)
{
    idle_unlink(h, hc);
}

void http_conns_idle(struct http *h, struct http_conn *hc)
{
    hc->t_start = srv_now_ns();
    if (!hc->closed && !hc->idle && hc->phase != HTTP_CONN_CLOSING)
        idle_link(h, hc);
}

void http_conns_opened(struct http *h, struct http_conn *hc)
{
    hc->t_start = srv_now_ns();
    hc->next = h->conns;
    if (h->conns)
        h->conns->prev = hc;
    h->conns = hc;
    atomic_fetch_add_explicit(h->open_conns, 1, memory_order_relaxed);
    idle_link(h, hc);
    hc->over_limit = !http_conns_make_room(h, false);
}

void http_conns_closing(struct http *h, struct http_conn *hc)
{
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        h->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    hc->prev = hc->next = NULL;
    idle_unlink(h, hc);
    atomic_fetch_sub_explicit(h->open_conns, 1, memory_order_relaxed);
}

/* A request (headers, body, and writing the answer; not the time with the
 * prepare stage or the workers) must finish within request_timeout_ms, as
 * must an idle connection's wait for its next request; a connection
 * answered with close lingers LINGER_MS at most. Connections held past the
 * limit while nothing was idle long enough are closed here once something
 * is, and a connection that waited in libuv for lack of memory is taken. */
static void on_deadline_timer(uv_timer_t *timer)
{
    struct http *h = timer->data;
    uint64_t now = srv_now_ns();
    uint64_t limit = (uint64_t)h->settings.request_timeout_ms * 1000000u;
    uint64_t linger = (uint64_t)LINGER_MS * 1000000u;
    struct http_conn *next;
    for (struct http_conn *hc = h->conns; hc != NULL; hc = next) {
        next = hc->next;
        uint64_t age = now - hc->t_start;
        if (hc->waiting || age <= (hc->phase == HTTP_CONN_CLOSING ? linger : limit))
            continue;
        if (!hc->idle && hc->phase != HTTP_CONN_CLOSING)
            log_msg(LOG_INFO, "closing a connection whose request took more than "
                    "request_timeout_ms (%u ms)", h->settings.request_timeout_ms);
        http_conn_close(hc);
    }
    http_conns_make_room(h, false);
    if (h->accept_waiting && h->listening) {
        h->accept_waiting = false;
        http_conn_accept(h);
    }
}

void http_conns_start(struct http *h)
{
    uv_timer_init(h->loop, &h->deadline_timer);
    h->deadline_timer.data = h;
    uint64_t sweep_ms = h->settings.request_timeout_ms / 8;
    sweep_ms = sweep_ms < 20 ? 20 : sweep_ms > 250 ? 250 : sweep_ms;
    uv_timer_start(&h->deadline_timer, on_deadline_timer, sweep_ms, sweep_ms);
}

void http_conns_stop(struct http *h)
{
    uv_timer_stop(&h->deadline_timer);
    uv_close((uv_handle_t *)&h->deadline_timer, NULL);
}

/* Descriptors `loops` loops may hold for max_connections m: each accepts
 * up to m + the reserve (the kernel may send it every connection). */
static size_t fds_needed(size_t m, unsigned loops)
{
    return (m + HTTP_CONNECTION_RESERVE(m) + FD_MARGIN) * loops;
}

size_t http_conns_fit_fd_limit(size_t max_connections, unsigned loops)
{
    size_t need = fds_needed(max_connections, loops);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= need)
        return max_connections;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (rl.rlim_cur > was && setrlimit(RLIMIT_NOFILE, &rl) != 0)
        rl.rlim_cur = was;
    if (rl.rlim_cur >= need) {
        log_msg(LOG_INFO, "raised the open-file limit from %llu to %llu for max_connections %zu",
                (unsigned long long)was, (unsigned long long)rl.rlim_cur, max_connections);
        return max_connections;
    }
    size_t fit = 1;
    for (size_t m = max_connections; m > 1; m--) {
        if (fds_needed(m, loops) <= rl.rlim_cur) {
            fit = m;
            break;
        }
    }
    log_msg(LOG_WARN,
            "the open-file limit (RLIMIT_NOFILE %llu, hard limit %llu) is below the %zu "
            "descriptors max_connections %zu needs: serving at most %zu connections; raise it "
            "(ulimit -n, or LimitNOFILE= in systemd)",
            (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, need,
            max_connections, fit);
    return fit;
}

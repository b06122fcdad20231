/* Internals of the HTTP front end, shared by its files and nothing else
 * (the server's interface is http.h):
 *
 *   http_server.c   the loop threads: start, the engine, drain and stop on every loop
 *   http.c          one loop's daemon: start and stop, routing, the access handler, drain
 *   http_request.c  a request's lifecycle: states, suspension, completion, release
 *   http_prepare.c  handing inference requests to the prepare stage (prepare.h)
 *   http_respond.c  answers, their log line, and giving their memory back
 *   http_conns.c    connections: the request deadline, idle eviction, file limits
 *   http_framing.c  the message framing rules libmicrohttpd leaves to us
 *   http_loop.c     libmicrohttpd driven by the libuv loop
 *
 * Threading: a `struct http` is one loop: everything on it runs on its loop
 * thread; what request.h shares goes to the prepare threads and the
 * workers. What the loops share (struct http_server) is read-only once they
 * run, or atomic: the count of open connections, the engine's flag. */
#ifndef SRV_HTTP_INTERNAL_H
#define SRV_HTTP_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <microhttpd.h>
#include <uv.h>

#include "http.h"
#include "metrics.h"
#include "pool.h"
#include "request.h"

/* Connections past max_connections are still accepted, up to this many
 * more, so they can be told 503 (or an idle one closed for them) instead of
 * waiting unanswered in the listen backlog; past that libmicrohttpd stops
 * accepting. */
#define HTTP_CONNECTION_RESERVE(max) ((max) / 8 + 8)

enum endpoint { EP_INFERENCE, EP_HEALTH, EP_READY, EP_INFO, EP_METRICS, EP_MODELS, EP_NOT_FOUND };

/* Per-connection state (MHD's socket context). */
struct http_conn {
    struct MHD_Connection *conn;
    uint64_t t_start;            /* the current request's clock, or the idle period, started */
    bool idle;                   /* no request begun (never used, or between keep-alive
                                    requests): on the idle list */
    bool waiting;                /* its request is with the prepare stage or the workers:
                                    no deadline */
    bool cut;                    /* its socket was shut down (deadline, hang-up, eviction) */
    bool over_limit;             /* opened past max_connections with no idle one to close */
    struct http_conn *prev, *next;           /* every open connection */
    struct http_conn *idle_prev, *idle_next; /* idle ones, longest idle first */
};

/* Where a request is. Only a request in OFF_LOOP is suspended
 * (libmicrohttpd neither reads nor times out its connection) and held by
 * another thread; it is on the suspended list. Released (freed) once MHD
 * has finished with it (conn == NULL) and no other thread holds it. */
enum http_request_state {
    HTTP_REQUEST_HEAD,      /* the request line is in; headers are arriving */
    HTTP_REQUEST_BODY,      /* the head is in; the body is arriving or being handled */
    HTTP_REQUEST_OFF_LOOP,  /* with the prepare threads, then (admitted) the workers,
                               until it comes back through the completion queue */
    HTTP_REQUEST_CUT_OFF,   /* answered 503 by the drain's time-out while another thread
                               still held it; released when it comes back */
    HTTP_REQUEST_ANSWERED,  /* a response is queued with MHD */
    HTTP_REQUEST_ABANDONED, /* its client left: resumed only so that MHD closes it */
};

/* Per-request state (MHD's con_cls), owned by the loop thread. */
struct http_request {
    struct srv_request srv;      /* the part workers see */
    struct http *http;
    struct MHD_Connection *conn; /* NULL once MHD has finished with the request */
    struct http_conn *hc;        /* NULL if its tracking failed, or once MHD finished */
    enum http_request_state state;
    enum endpoint ep;
    enum metrics_route mroute;
    char method[16];
    char path[96];
    const char *raw_uri, *raw_uri_end; /* the request target as received, in MHD's
                                          buffer: only for the head checks */
    bool escaped_nul;            /* the request target holds %00 */
    char *body;
    size_t body_len, body_cap, discarded;
    bool body_too_large;
    bool close_after;            /* answer with Connection: close */
    uint64_t t_received;
    struct http_request *prev, *next; /* the suspended list */
};

/* One event loop: its daemon, connections, timers and completion queue. */
struct http {
    uv_loop_t *loop;
    struct http_server *server;  /* the loops together */
    atomic_size_t *open_conns;   /* open client connections, on every loop, less the cut */
    struct MHD_Daemon *daemon;
    uv_poll_t mhd_poll;
    uv_timer_t mhd_timer;
    uv_idle_t mhd_idle;
    uv_timer_t drain_timer;
    uv_timer_t deadline_timer;
    uv_timer_t trim_timer;
    size_t freed_since_trim;     /* bytes of answers freed since the last malloc_trim */
    struct completions done;     /* this loop's: its requests come back here */
    struct http_settings settings;
    struct http_engine engine;   /* written before engine_set, by the first loop */
    atomic_bool engine_set;
    bool draining;
    bool drained;
    uint64_t drain_deadline;
    void (*on_drained)(void *arg);
    void *on_drained_arg;
    struct http_request *suspended;
    size_t live;                 /* http_request objects alive */
    struct http_conn *conns;     /* every open connection */
    struct http_conn *idle_head, *idle_tail;
    size_t n_cut;                /* connections shut down and about to close */
    bool conn_closed;            /* a connection closed during MHD_run */
    uint64_t evictions;          /* idle connections closed to make room, not yet logged */
    uint64_t t_eviction_log;
    struct srv_request *to_prepare, *to_prepare_tail; /* handed over after MHD_run */
};

static inline double http_ms_between(uint64_t a, uint64_t b)
{
    return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* http_cors.c: [server] cors_allow_origin. A preflight is OPTIONS on a path
 * of the API while CORS is on; it is answered 204 before the key check. */
bool http_cors_preflight(const struct http_request *hr);
/* Access-Control-* headers for the request's Origin, when it is allowed
 * (and the preflight's own when it is one). */
void http_cors_headers(const struct http_request *hr, struct MHD_Response *resp);

/* http_server.c: the loop threads' CPU time while serving, all together. */
double http_server_loop_cpu_seconds(const struct http_server *srv);

/* http.c: one loop. Open its daemon (fallible; with SO_REUSEPORT when
 * `reuse_port`), then attach it to the libuv loop that will run it (not
 * fallible; from any thread before that loop runs). `s->max_connections` is
 * the total over every loop, counted in `open_conns`. */
struct http *http_open(const struct http_settings *s, bool reuse_port, char *err,
                       size_t err_len);
/* Whether the address is free to bind without SO_REUSEPORT: before the
 * loops bind it with it, so that a second server on the same port (its
 * sockets have SO_REUSEPORT too) is an error instead of a silent sharer. */
bool http_port_free(const struct http_settings *s, char *err, size_t err_len);
void http_attach(struct http *h, uv_loop_t *loop, struct http_server *server,
                 atomic_size_t *open_conns, void (*on_drained)(void *arg), void *arg);
/* The rest on the loop's thread, except http_set_engine (the first loop's:
 * the flag is atomic) and http_free (after its loop has stopped). */
void http_set_engine(struct http *h, const struct http_engine *engine);
void http_drain(struct http *h);
/* After the drain: stop the daemon (closing the connections) and the
 * timers; the completion handle stays open for the workers. */
void http_close_daemon(struct http *h);
/* After the workers are joined: finish the last completions, close the
 * completion handle. */
void http_close(struct http *h);
/* Free after its loop has closed every handle (or a daemon never attached).
 * NULL is a no-op. */
void http_free(struct http *h);
void http_check_drained(struct http *h);
/* A 405's Allow header for the request's route: "POST". */
const char *http_allow_header(const struct http_request *hr);

/* http_loop.c: MHD on the libuv loop. */
void http_loop_start(struct http *h, int epoll_fd);
/* Run MHD now, then arrange for it to run again when it needs to. */
void http_loop_run(struct http *h);
void http_loop_stop(struct http *h);

/* http_request.c */
struct http_request *http_request_new(struct http *h, struct MHD_Connection *conn,
                                      const char *raw_uri);
/* Move to `next`, suspending or resuming the connection as the states require. */
void http_request_set_state(struct http_request *hr, enum http_request_state next);
/* MHD has finished with the request: release it unless another thread holds it. */
void http_request_mhd_done(struct http_request *hr);
/* Free the request if MHD has finished with it and no other thread holds it. */
void http_request_maybe_release(struct http_request *hr);
/* Workers' completions: answer them and resume their connections. */
void http_request_on_completions(uv_async_t *async);
/* The drain ran out of time: answer every suspended request 503 now. */
void http_request_cut_off_all(struct http *h);

/* http_prepare.c: refuse what needs no parse, or suspend the request and
 * queue it for the prepare stage; http_prepare_flush hands the queue over,
 * after each MHD_run. */
void http_prepare(struct http_request *hr);
void http_prepare_flush(struct http *h);

/* http_respond.c */
void http_respond_init(struct http *h);
void http_respond_stop(struct http *h);
/* Queue `body` (malloc'd; ownership passes to MHD) with `status`, then log
 * and count. `error` is the message logged for error responses. When
 * `budgeted`, the body's bytes were reserved in the response budget and are
 * given back when MHD frees it. Moves the request to ANSWERED (resuming its
 * connection if it was suspended); on failure (out of memory) frees the
 * body and leaves the state alone. */
void http_respond(struct http_request *hr, int status, const char *content_type, char *body,
                  size_t len, bool budgeted, const char *error);
void http_respond_error(struct http_request *hr, const struct proto_error *err);
void http_respond_errorf(struct http_request *hr, enum proto_error_kind kind, const char *fmt,
                         ...) __attribute__((format(printf, 3, 4)));
void http_respond_text(struct http_request *hr, int status, const char *content_type,
                       const char *text);
/* The log line of a request whose client left before it was answered. */
void http_log_departed(const struct http_request *hr);

/* http_conns.c */
void http_conns_start(struct http *h);
void http_conns_stop(struct http *h);
void http_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
/* A request's line has arrived: the connection is no longer idle. */
void http_conns_busy(struct http *h, struct http_conn *hc);
/* Its request is finished: idle again, with a fresh deadline. */
void http_conns_idle(struct http *h, struct http_conn *hc);
/* Close idle connections with nothing unread, the longest idle first,
 * until at most max_connections stay open: for a request that has arrived
 * any of them, otherwise only those idle for a short grace; before a
 * request is refused, also those whose client has gone. Returns whether
 * max_connections or fewer are open. */
bool http_conns_make_room(struct http *h, bool for_request);
/* The most connections the process's file limit allows for
 * `max_connections` over `loops` daemons (each may hold the reserve past
 * it): the limit is raised if it can be, else a warning says what was
 * lowered. */
size_t http_conns_fit_fd_limit(size_t max_connections, unsigned loops);

#endif

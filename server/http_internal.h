/* Internals of the HTTP front end, shared by its files and nothing else
 * (the server's interface is http.h):
 *
 *   http_server.c   the loop threads: start, the engine, drain and stop on every loop
 *   http.c          one loop: listen, start and stop, routing, the request's checks, drain
 *   http_conn.c     a connection's bytes: accept, read, frame requests, write answers, close
 *   http_parse.c    the HTTP/1.1 request syntax (http_parse.h)
 *   http_framing.c  the framing rules across header lines (http_framing.h)
 *   http_request.c  a request's lifecycle: states, completion, release
 *   http_prepare.c  handing inference requests to the prepare stage (prepare.h)
 *   http_respond.c  answers: their head, their log line, giving their memory back
 *   http_conns.c    connections: the request deadline, idle eviction, file limits
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

#include <uv.h>

#include "http.h"
#include "http_parse.h"
#include "metrics.h"
#include "pool.h"
#include "request.h"

/* Connections past max_connections are still accepted, up to this many
 * more, so they can be told 503 (or an idle one closed for them) instead of
 * waiting unanswered in the listen backlog; past that a loop stops
 * accepting until one closes. */
#define HTTP_CONNECTION_RESERVE(max) ((max) / 8 + 8)

/* Connections the kernel queues for a loop before it accepts them. */
#define HTTP_LISTEN_BACKLOG 1024

enum endpoint { EP_INFERENCE, EP_HEALTH, EP_READY, EP_INFO, EP_METRICS, EP_MODELS, EP_NOT_FOUND };

/* An answer: its head (status line and headers) and body, owned by the
 * connection that writes it and freed once written or abandoned. */
struct http_answer {
    char *head;                  /* `room`, or malloc'd once the head outgrows it */
    size_t head_len, head_cap;
    char room[320];              /* a typical head: an /embed answer's is ~220 bytes */
    char *body;
    size_t body_len;
    bool send_body;              /* false for HEAD and 204 */
    bool budgeted;               /* the body's bytes are reserved in the response budget */
    bool close;                  /* the connection closes once it is written */
    struct http *http;
    uv_write_t write;
};

/* What a connection is doing. */
enum http_conn_phase {
    HTTP_CONN_HEAD,      /* waiting for a request head (idle, or part of one is in) */
    HTTP_CONN_BODY,      /* its request's body is arriving */
    HTTP_CONN_HANDLED,   /* the request is whole: answered on the loop or held off it */
    HTTP_CONN_WRITING,   /* its answer is being written */
    HTTP_CONN_CLOSING,   /* answered with close: our side is shut, the client's read out */
};

/* One client connection: its socket, the bytes read and not yet used, the
 * request being read or answered (one at a time: pipelined requests wait
 * in `in`), and its tracking for the deadline and the connection limit. */
struct http_conn {
    uv_tcp_t tcp;                /* tcp.data is the connection */
    struct http *http;
    enum http_conn_phase phase;
    char *in;                    /* read, not yet used */
    size_t in_len, in_cap;
    size_t head_scanned;         /* of `in`, searched for the head's end */
    struct http_head head;       /* the current request's, while its bytes are in `in` */
    struct http_request *hr;     /* the current request */
    bool chunked;                /* its body's framing: chunked, else body_left bytes */
    uint64_t body_left;
    struct http_chunked chunk;
    struct http_answer *out;     /* being written */
    uv_shutdown_t shutdown;
    bool reading;                /* uv_read_start'ed */
    bool eof;                    /* the client closed its side, or the socket failed */
    bool processing;             /* inside http_conn_process: no re-entry */
    bool closed;                 /* uv_close called; freed by its callback */
    bool written_queued;         /* on the loop's written list */
    struct http_conn *written_next;
    uint64_t t_start;            /* the current request's clock, or the idle period, started */
    bool idle;                   /* no request begun (never used, or between keep-alive
                                    requests): on the idle list */
    bool waiting;                /* its request is with the prepare stage or the workers:
                                    no deadline */
    bool over_limit;             /* opened past max_connections with no idle one to close */
    struct http_conn *prev, *next;           /* every open connection */
    struct http_conn *idle_prev, *idle_next; /* idle ones, longest idle first */
};

/* Where a request is. Only a request in OFF_LOOP is held by another thread;
 * it is on the suspended list. Released (freed) once its connection has
 * finished with it (hc == NULL) and no other thread holds it. */
enum http_request_state {
    HTTP_REQUEST_HEAD,      /* created; its head is being checked */
    HTTP_REQUEST_BODY,      /* the head is in; the body is arriving or being handled */
    HTTP_REQUEST_OFF_LOOP,  /* with the prepare threads, then (admitted) the workers,
                               until it comes back through the completion queue */
    HTTP_REQUEST_CUT_OFF,   /* answered 503 by the drain's time-out while another thread
                               still held it; released when it comes back */
    HTTP_REQUEST_ANSWERED,  /* its answer is with the connection */
    HTTP_REQUEST_ABANDONED, /* its client left, or no answer could be made: the connection
                               closes */
};

/* Per-request state, owned by the loop thread. */
struct http_request {
    struct srv_request srv;      /* the part workers see */
    struct http *http;
    struct http_conn *hc;        /* NULL once its connection has finished with it */
    enum http_request_state state;
    enum endpoint ep;
    enum metrics_route mroute;
    char method[16];
    char path[96];
    char *origin;                /* its Origin header, kept for CORS when that is on */
    bool head_only;              /* HEAD: the answer without its body */
    bool keep_alive_10;          /* HTTP/1.0 with Connection: keep-alive */
    bool body_unread;            /* its body is not (yet) read: an answer now closes */
    char *body;
    size_t body_len, body_cap, discarded;
    bool body_too_large;
    bool close_after;            /* answer with Connection: close */
    uint64_t t_received;
    struct http_request *prev, *next; /* the suspended list */
};

/* One event loop: its listener, connections, timers and completion queue. */
struct http {
    uv_loop_t *loop;
    struct http_server *server;  /* the loops together */
    atomic_size_t *open_conns;   /* open client connections, on every loop, less the closing */
    int listen_fd;               /* bound and listening; -1 once handed to `listener` */
    uv_tcp_t listener;
    bool listening;              /* `listener` is open */
    bool accept_waiting;         /* a connection waits in libuv until one closes */
    size_t n_conns;              /* this loop's connections, closing ones included */
    uv_check_t after_reads;      /* after each poll: hand what was read to the prepare
                                    stage, finish the answers written */
    struct http_conn *written;   /* connections whose answer went out whole, to finish */
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
    uint64_t evictions;          /* idle connections closed to make room, not yet logged */
    uint64_t t_eviction_log;
    time_t date_second;          /* the second `date` was written for */
    char date[40];               /* "Date: Sun, 06 Dec 2026 17:30:00 GMT" */
    struct srv_request *to_prepare, *to_prepare_tail; /* handed over after the reads */
};

static inline double http_ms_between(uint64_t a, uint64_t b)
{
    return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* http_cors.c: [server] cors_allow_origin. A preflight is OPTIONS on a path
 * of the API while CORS is on; it is answered 204 before the key check. */
bool http_cors_preflight(const struct http_request *hr);
/* Access-Control-* headers for the request's Origin, when it is allowed
 * (and the preflight's own when it is one, from `head`; NULL after the
 * head time). */
void http_cors_headers(const struct http_request *hr, const struct http_head *head,
                       struct http_answer *a);

/* http_server.c: the loop threads' CPU time while serving, all together. */
double http_server_loop_cpu_seconds(const struct http_server *srv);

/* http.c: one loop. Bind and listen (fallible; with SO_REUSEPORT when
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
/* After the drain: stop listening, close the connections and the timers;
 * the completion handle stays open for the workers. */
void http_close_daemon(struct http *h);
/* After the workers are joined: finish the last completions, close the
 * completion handle. */
void http_close(struct http *h);
/* Free after its loop has closed every handle (or a loop never attached).
 * NULL is a no-op. */
void http_free(struct http *h);
void http_check_drained(struct http *h);
/* A 405's Allow header for the request's route: "POST". */
const char *http_allow_header(const struct http_request *hr);
/* The request's head is in: route and check it, answering at once what
 * needs no body (limits, framing, key, size). */
void http_on_head(struct http_request *hr, const struct http_head *head);
/* A run of its body. Returns false once so much past max_body_bytes was
 * sent that the connection should close instead of reading on. */
bool http_on_body(struct http_request *hr, const char *data, size_t len);
/* The body is whole: answer the request, or hand it off the loop. */
void http_on_request(struct http_request *hr);

/* The request's head could not be parsed, or its chunked body was
 * malformed: answer `err` and close. */
void http_on_bad_head(struct http_request *hr, const struct http_parse_error *err);

/* http_conn.c: the connections of a loop. */
void http_conn_listen(struct http *h);
/* Accept a connection libuv has for the listener, unless the loop is at
 * its limit (then it waits until one closes). */
void http_conn_accept(struct http *h);
/* Run the loop's after-reads work in this iteration's check phase. */
void http_conn_defer(struct http *h);
/* Stop accepting and close every connection. */
void http_conn_stop(struct http *h);
/* Write the request's answer (ownership passes); then the connection reads
 * its next request, or closes. */
void http_conn_send(struct http_conn *c, struct http_answer *a);
/* Close now: a deadline, an eviction, a client gone, the drain. */
void http_conn_close(struct http_conn *c);
/* Free an answer, giving its bytes back to the response budget. */
void http_answer_free(struct http_answer *a);
/* http_respond.c: free a budgeted answer's body and give its bytes back. */
void http_answer_give_back(struct http_answer *a);

/* http_request.c */
struct http_request *http_request_new(struct http *h, struct http_conn *hc);
/* Move to `next`, keeping the suspended list and the connection's deadline. */
void http_request_set_state(struct http_request *hr, enum http_request_state next);
/* Its connection has finished with it (answered, or closed): release it
 * unless another thread holds it. */
void http_request_conn_done(struct http_request *hr);
/* Free the request if its connection has finished with it and no other
 * thread holds it. */
void http_request_maybe_release(struct http_request *hr);
/* Workers' completions: answer them. */
void http_request_on_completions(uv_async_t *async);
/* The drain ran out of time: answer every suspended request 503 now. */
void http_request_cut_off_all(struct http *h);

/* http_prepare.c: refuse what needs no parse, or queue the request for the
 * prepare stage; the queue is handed over once per loop iteration, after
 * its reads. */
void http_prepare(struct http_request *hr);
void http_prepare_flush(struct http *h);

/* http_respond.c */
void http_respond_init(struct http *h);
void http_respond_stop(struct http *h);
/* Answer with `body` (malloc'd; ownership passes) and `status`, then log
 * and count. `error` is the message logged for error responses. When
 * `budgeted`, the body's bytes were reserved in the response budget and are
 * given back once it is written. Moves the request to ANSWERED; on failure
 * (out of memory) frees the body and leaves the state alone. `head` is the
 * request's parsed head while it is at hand (for a preflight's headers),
 * else NULL. */
void http_respond_head(struct http_request *hr, const struct http_head *head, int status,
                       const char *content_type, char *body, size_t len, bool budgeted,
                       const char *error);
void http_respond(struct http_request *hr, int status, const char *content_type, char *body,
                  size_t len, bool budgeted, const char *error);
void http_respond_error(struct http_request *hr, const struct proto_error *err);
void http_respond_errorf(struct http_request *hr, enum proto_error_kind kind, const char *fmt,
                         ...) __attribute__((format(printf, 3, 4)));
void http_respond_text(struct http_request *hr, int status, const char *content_type,
                       const char *text);
/* One header line onto the answer's head; false when out of memory. */
bool http_answer_header(struct http_answer *a, const char *name, const char *value);
/* The log line of a request whose client left before it was answered. */
void http_log_departed(const struct http_request *hr);

/* http_conns.c */
void http_conns_start(struct http *h);
void http_conns_stop(struct http *h);
/* Track a new connection (counted, idle) and decide whether it is over the limit. */
void http_conns_opened(struct http *h, struct http_conn *hc);
/* Stop tracking it: its socket is closing. */
void http_conns_closing(struct http *h, struct http_conn *hc);
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
 * `max_connections` over `loops` loops (each may hold the reserve past
 * it): the limit is raised if it can be, else a warning says what was
 * lowered. */
size_t http_conns_fit_fd_limit(size_t max_connections, unsigned loops);

#endif

#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "log.h"
#include "metrics.h"

/* A body larger than the limit is read to its end (so the client gets a
 * 413 it can read) unless it goes on past this many times the limit; then
 * the connection is closed. */
#define DISCARD_FACTOR 16

/* Connections past max_connections are still accepted, up to this many
 * more, so they can be told 503 instead of waiting unanswered in the listen
 * backlog; past that libmicrohttpd stops accepting. */
#define CONNECTION_RESERVE(max) ((max) / 8 + 8)

enum endpoint { EP_INFERENCE, EP_HEALTH, EP_READY, EP_INFO, EP_METRICS, EP_NOT_FOUND };

/* Per-connection state (MHD's socket context), for the total request
 * deadline: libmicrohttpd's own timeout is an idle timeout, which a client
 * sending a byte a second never trips. */
struct http_conn {
    struct MHD_Connection *conn;
    uint64_t t_start;            /* the current request's clock started */
    bool waiting;                /* its request is with the workers: no deadline */
    bool cut;                    /* its socket was shut down past the deadline */
    bool over_limit;             /* opened past max_connections: answered 503 */
    struct http_conn *prev, *next;
};

/* Per-request state (MHD's con_cls), owned by the loop thread. */
struct http_request {
    struct srv_request srv;      /* the part workers see */
    struct http *http;
    struct MHD_Connection *conn;
    struct http_conn *hc;        /* NULL if its tracking failed (out of memory) */
    enum endpoint ep;
    enum metrics_route mroute;
    char method[16];
    char path[96];
    char *body;
    size_t body_len, body_cap, discarded;
    bool body_too_large;
    bool close_after;            /* answer with Connection: close */
    bool responded;              /* a response is queued */
    bool submitted;              /* sequences went to the batcher */
    bool completed;              /* the completion came back */
    bool mhd_done;               /* MHD finished with the request */
    bool suspended;
    uint64_t t_received;
    struct http_request *prev, *next; /* list of suspended requests */
};

struct http {
    uv_loop_t *loop;
    struct MHD_Daemon *daemon;
    uv_poll_t mhd_poll;
    uv_timer_t mhd_timer;
    uv_timer_t drain_timer;
    uv_timer_t deadline_timer;
    struct completions *done;
    struct http_settings settings;
    struct http_engine engine;
    bool engine_set;
    bool draining;
    bool drained;
    uint64_t drain_deadline;
    void (*on_drained)(void *arg);
    void *on_drained_arg;
    struct http_request *suspended;
    size_t live;                 /* http_request objects alive */
    struct http_conn *conns;     /* every open connection */
    size_t n_conns;
    bool conn_closed;            /* a connection closed during MHD_run */
};

static void mhd_run(struct http *h);
static void check_drained(struct http *h);
static const char *allow_header(const struct http_request *hr);

static double ms_between(uint64_t a, uint64_t b)
{
    return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* ---- request objects ---------------------------------------------------- */

static void request_maybe_free(struct http_request *hr)
{
    if (!hr->mhd_done || (hr->submitted && !hr->completed))
        return;
    struct http *h = hr->http;
    proto_job_free(&hr->srv.job);
    free(hr->srv.body);
    free(hr->body);
    free(hr);
    h->live--;
    check_drained(h);
}

static void suspended_unlink(struct http_request *hr)
{
    if (hr->prev)
        hr->prev->next = hr->next;
    else
        hr->http->suspended = hr->next;
    if (hr->next)
        hr->next->prev = hr->prev;
    hr->prev = hr->next = NULL;
}

/* ---- responses ------------------------------------------------------------ */

/* Decimal digits of v at the end of `end` (no NUL); returns the first. */
static char *digits_before(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

/* Milliseconds between two ns timestamps as "12.345" into v[24]: written by
 * hand because printf's float path showed in the loop thread's profile. */
static const char *ms_text(char v[24], uint64_t from, uint64_t to)
{
    uint64_t us = to > from ? (to - from + 500) / 1000 : 0;
    char *end = v + 23;
    *end = '\0';
    for (int i = 0; i < 3; i++, us /= 10)
        *--end = (char)('0' + us % 10);
    *--end = '.';
    return digits_before(end, us);
}

static void add_timing_headers(struct MHD_Response *resp, const struct http_request *hr,
                               uint64_t now)
{
    const struct srv_request *r = &hr->srv;
    uint64_t start = atomic_load(&r->t_compute_start);
    char v[24];
    MHD_add_response_header(resp, "x-queue-time",
                            ms_text(v, hr->t_received, start ? start : hr->t_received));
    MHD_add_response_header(resp, "x-inference-time",
                            ms_text(v, start, start ? r->t_compute_end : start));
    MHD_add_response_header(resp, "x-total-time", ms_text(v, hr->t_received, now));
    v[23] = '\0';
    MHD_add_response_header(resp, "x-truncated-inputs", digits_before(v + 23, r->job.n_truncated));
}

/* Queue `body` (malloc'd; ownership passes to MHD) with `status`, then log
 * and count. `error` is the message logged for error responses. */
static void respond(struct http_request *hr, int status, const char *content_type, char *body,
                    size_t len, const char *error)
{
    struct http *h = hr->http;
    uint64_t now = srv_now_ns();
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(len, body, free);
    if (resp == NULL) {
        free(body);
        return;
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    if (hr->ep == EP_INFERENCE)
        add_timing_headers(resp, hr, now);
    if (status == 429 || status == 503)
        MHD_add_response_header(resp, "Retry-After", "1");
    if (status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (status == 405)
        MHD_add_response_header(resp, "Allow", allow_header(hr));
    if (h->draining || hr->close_after)
        MHD_add_response_header(resp, "Connection", "close");
    MHD_queue_response(hr->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    hr->responded = true;

    const struct proto_job *job = &hr->srv.job;
    uint64_t start = atomic_load(&hr->srv.t_compute_start);
    log_request(&(struct log_request){
        .method = hr->method,
        .path = hr->path,
        .status = status,
        .inputs = job->n_seqs,
        .tokens = job->n_tokens,
        .queue_ms = start ? ms_between(hr->t_received, start) : 0.0,
        .inference_ms = start ? ms_between(start, hr->srv.t_compute_end) : 0.0,
        .total_ms = ms_between(hr->t_received, now),
        .error = error,
    });
    metrics_request(hr->mroute, status, ms_between(hr->t_received, now) / 1e3);
}

static void respond_error(struct http_request *hr, const struct proto_error *err)
{
    enum proto_route route =
        hr->ep == EP_INFERENCE ? hr->srv.route : PROTO_ROUTE_COUNT; /* our envelope */
    size_t len;
    char *body = proto_error_body(route, err, &len);
    if (body == NULL)
        return;
    respond(hr, proto_error_status(err->kind), "application/json", body, len, err->message);
}

static void respond_errorf(struct http_request *hr, enum proto_error_kind kind, const char *fmt,
                           ...) __attribute__((format(printf, 3, 4)));
static void respond_errorf(struct http_request *hr, enum proto_error_kind kind, const char *fmt,
                           ...)
{
    struct proto_error err = {.kind = kind};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.message, sizeof err.message, fmt, ap);
    va_end(ap);
    respond_error(hr, &err);
}

static void respond_text(struct http_request *hr, int status, const char *content_type,
                         const char *text)
{
    char *body = strdup(text);
    if (body != NULL)
        respond(hr, status, content_type, body, strlen(body), NULL);
}

/* ---- routing -------------------------------------------------------------- */

static const struct {
    const char *path;
    enum endpoint ep;
    enum metrics_route mroute;
} get_routes[] = {
    {"/health", EP_HEALTH, METRICS_ROUTE_HEALTH},
    {"/ready", EP_READY, METRICS_ROUTE_READY},
    {"/info", EP_INFO, METRICS_ROUTE_INFO},
    {"/metrics", EP_METRICS, METRICS_ROUTE_METRICS},
};

/* PROTO_METHOD_* bits the request's route answers: the proto route's
 * own, GET for the server's. */
static unsigned route_methods(const struct http_request *hr)
{
    return hr->ep == EP_INFERENCE ? proto_route_methods(hr->srv.route) : PROTO_METHOD_GET;
}

#define ALL_METHODS (PROTO_METHOD_GET | PROTO_METHOD_POST)

/* What a 405 says to use: "POST". */
static const char *allowed_methods(const struct http_request *hr)
{
    static const char *const names[ALL_METHODS + 1] = {"", "GET", "POST", "GET or POST"};
    return names[route_methods(hr) & ALL_METHODS];
}

/* A 405's Allow header: "POST". */
static const char *allow_header(const struct http_request *hr)
{
    static const char *const names[ALL_METHODS + 1] = {"", "GET, HEAD", "POST",
                                                       "GET, HEAD, POST"};
    return names[route_methods(hr) & ALL_METHODS];
}

static bool method_allowed(const struct http_request *hr)
{
    unsigned method = strcmp(hr->method, "GET") == 0 || strcmp(hr->method, "HEAD") == 0
                          ? PROTO_METHOD_GET
                      : strcmp(hr->method, "POST") == 0 ? PROTO_METHOD_POST
                                                        : 0;
    return (route_methods(hr) & method) != 0;
}

static void resolve(struct http_request *hr, const char *url)
{
    enum proto_route route;
    hr->ep = EP_NOT_FOUND;
    hr->mroute = METRICS_ROUTE_OTHER;
    if (proto_route_from_path(url, &route)) {
        hr->ep = EP_INFERENCE;
        hr->srv.route = route;
        hr->mroute = metrics_route_of(route);
        return;
    }
    for (size_t i = 0; i < sizeof get_routes / sizeof get_routes[0]; i++) {
        if (strcmp(url, get_routes[i].path) == 0) {
            hr->ep = get_routes[i].ep;
            hr->mroute = get_routes[i].mroute;
        }
    }
}

/* Compare without leaking the key's length or content through timing. */
static bool key_matches(const char *given, const char *key)
{
    size_t gl = strlen(given), kl = strlen(key);
    unsigned char diff = gl != kl;
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(key[i] ^ (i < gl ? given[i] : 0));
    return diff == 0;
}

static bool authorized(struct http_request *hr)
{
    const char *key = hr->http->settings.api_key;
    if (key == NULL || key[0] == '\0' || hr->ep == EP_HEALTH || hr->ep == EP_READY ||
        hr->ep == EP_METRICS)
        return true;
    const char *auth = MHD_lookup_connection_value(hr->conn, MHD_HEADER_KIND, "Authorization");
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    return key_matches(auth + 7, key);
}

/* ---- handlers ------------------------------------------------------------- */

static void handle_get(struct http_request *hr)
{
    struct http *h = hr->http;
    switch (hr->ep) {
    case EP_HEALTH:
        if (h->engine_set)
            respond_text(hr, 200, "application/json", "{\"status\":\"ok\"}");
        else
            respond_text(hr, 503, "application/json", "{\"status\":\"loading\"}");
        break;
    case EP_READY:
        if (h->engine_set && !h->draining)
            respond_text(hr, 200, "application/json", "{\"status\":\"ready\"}");
        else
            respond_text(hr, 503, "application/json",
                         h->draining ? "{\"status\":\"draining\"}" : "{\"status\":\"loading\"}");
        break;
    case EP_INFO:
        if (h->engine_set)
            respond_text(hr, 200, "application/json", h->engine.info_json);
        else
            respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the model is still loading");
        break;
    case EP_METRICS: {
        struct metrics_gauges g = {.ready = h->engine_set && !h->draining};
        if (h->engine_set) {
            struct batcher_stats s = batcher_stats(h->engine.batcher);
            g.queue_sequences = s.queued_sequences;
            g.queue_tokens = s.queued_tokens;
            g.in_flight = s.in_flight;
        }
        size_t len;
        char *text = metrics_render(&g, &len);
        if (text)
            respond(hr, 200, "text/plain; version=0.0.4", text, len, NULL);
        else
            respond_errorf(hr, PROTO_ERR_INTERNAL, "out of memory rendering metrics");
        break;
    }
    default:
        break;
    }
}

static void handle_inference(struct http_request *hr)
{
    struct http *h = hr->http;
    if (!h->engine_set) {
        respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the model is still loading");
        return;
    }
    if (h->draining) {
        respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the server is shutting down");
        return;
    }
    const struct http_engine *e = &h->engine;
    uint64_t t0 = srv_now_ns();
    struct proto_request req;
    struct proto_error err = {0};
    if (!proto_request_parse(hr->srv.route, hr->body ? hr->body : "", hr->body_len, &e->limits,
                             &req, &err) ||
        !proto_job_prepare(&hr->srv.job, e->model, &e->limits, &e->defaults, &req, &err)) {
        respond_error(hr, &err);
        return;
    }
    metrics_stage(METRICS_STAGE_TOKENIZE, ms_between(t0, srv_now_ns()) / 1e3);
    metrics_input_tokens(hr->mroute, hr->srv.job.n_tokens);
    if (!proto_job_needs_compute(&hr->srv.job)) {
        size_t len;
        char *body = proto_job_respond(&hr->srv.job, e->model, &len);
        if (body)
            respond(hr, 200, "application/json", body, len, NULL);
        else
            respond_errorf(hr, PROTO_ERR_INTERNAL, "could not render the response (out of memory or a non-finite result)");
        return;
    }
    if (hr->srv.job.n_tokens > e->max_queue_tokens) {
        respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                       "the request has %zu tokens, more than max_queue_tokens (%zu)",
                       hr->srv.job.n_tokens, e->max_queue_tokens);
        return;
    }
    /* MHD does not watch a suspended connection: the worker that takes the
     * request peeks at its socket and drops the request if the client left. */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(hr->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    hr->srv.client_fd = ci ? ci->connect_fd : -1;
    switch (batcher_submit(e->batcher, &hr->srv)) {
    case BATCHER_ADMITTED:
        break;
    case BATCHER_TOO_MANY_REQUESTS:
        respond_errorf(hr, PROTO_ERR_OVERLOADED,
                       "too many concurrent requests (max_concurrent_requests); retry later");
        return;
    case BATCHER_QUEUE_FULL:
        respond_errorf(hr, PROTO_ERR_OVERLOADED,
                       "the queue is full (max_queue_tokens); retry later");
        return;
    case BATCHER_CLOSED:
        respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the server is shutting down");
        return;
    }
    hr->submitted = true;
    hr->suspended = true;
    hr->next = h->suspended;
    if (h->suspended)
        h->suspended->prev = hr;
    h->suspended = hr;
    if (hr->hc)
        hr->hc->waiting = true;
    MHD_suspend_connection(hr->conn);
}

/* Headers are in: decide what needs no body (size limit by Content-Length,
 * route), so an oversized upload is refused before it is read. */
static void on_headers(struct http_request *hr)
{
    struct http *h = hr->http;
    const char *cl = MHD_lookup_connection_value(hr->conn, MHD_HEADER_KIND, "Content-Length");
    if (cl != NULL) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno != 0 || n > h->settings.max_body_bytes) {
            respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                           "the request body is %s bytes, more than max_body_bytes (%zu)", cl,
                           h->settings.max_body_bytes);
        }
    }
}

static void append_body(struct http_request *hr, const char *data, size_t len)
{
    size_t limit = hr->http->settings.max_body_bytes;
    if (hr->body_too_large || hr->body_len + len > limit) {
        hr->body_too_large = true;
        hr->discarded += len;
        return;
    }
    if (hr->body_len + len + 1 > hr->body_cap) {
        size_t cap = hr->body_cap ? hr->body_cap : 4096;
        while (cap < hr->body_len + len + 1)
            cap *= 2;
        if (cap > limit + 1)
            cap = limit + 1;
        char *body = realloc(hr->body, cap);
        if (body == NULL) {
            hr->body_too_large = true;
            return;
        }
        hr->body = body;
        hr->body_cap = cap;
    }
    memcpy(hr->body + hr->body_len, data, len);
    hr->body_len += len;
    hr->body[hr->body_len] = '\0';
}

static void on_complete_body(struct http_request *hr)
{
    if (hr->ep == EP_NOT_FOUND)
        respond_errorf(hr, PROTO_ERR_NOT_FOUND, "no route %s %.64s", hr->method, hr->path);
    else if (!method_allowed(hr))
        respond_errorf(hr, PROTO_ERR_METHOD, "%s %.64s is not allowed; use %s", hr->method,
                       hr->path, allowed_methods(hr));
    else if (hr->body_too_large)
        respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                       "the request body is more than max_body_bytes (%zu)",
                       hr->http->settings.max_body_bytes);
    else if (!authorized(hr))
        respond_errorf(hr, PROTO_ERR_UNAUTHORIZED,
                       "missing or wrong API key (send Authorization: Bearer <key>)");
    else if (hr->ep == EP_INFERENCE)
        handle_inference(hr);
    else
        handle_get(hr);
}

/* strlcpy: src cut to fit dst (size > 0), always terminated. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    struct http *h = cls;
    struct http_request *hr = *con_cls;
    (void)version;
    if (hr == NULL) {
        hr = calloc(1, sizeof *hr);
        if (hr == NULL)
            return MHD_NO;
        hr->http = h;
        hr->conn = conn;
        hr->t_received = srv_now_ns();
        copy_text(hr->method, sizeof hr->method, method);
        copy_text(hr->path, sizeof hr->path, url);
        resolve(hr, url);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        hr->hc = ci ? ci->socket_context : NULL;
        h->live++;
        *con_cls = hr;
        if (hr->hc && hr->hc->over_limit) {
            hr->close_after = true;
            respond_errorf(hr, PROTO_ERR_UNAVAILABLE,
                           "too many open connections (max_connections %zu); retry later",
                           h->settings.max_connections);
            return MHD_YES;
        }
        on_headers(hr);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        append_body(hr, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return hr->discarded / DISCARD_FACTOR > h->settings.max_body_bytes ? MHD_NO : MHD_YES;
    }
    if (hr->responded)
        return MHD_YES;
    if (atomic_load(&hr->srv.orphaned))
        return MHD_NO; /* resumed only so MHD notices the hang-up */
    on_complete_body(hr);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    struct http_request *hr = *con_cls;
    (void)cls;
    (void)conn;
    if (hr == NULL)
        return;
    *con_cls = NULL;
    if (hr->hc) /* a kept-alive connection's next request gets a fresh deadline */
        hr->hc->t_start = srv_now_ns();
    hr->hc = NULL; /* the connection may close before the workers finish */
    hr->mhd_done = true;
    hr->conn = NULL;
    if (code != MHD_REQUEST_TERMINATED_COMPLETED_OK && hr->submitted && !hr->completed)
        atomic_store(&hr->srv.orphaned, true);
    request_maybe_free(hr);
}

/* ---- completions from the workers ---------------------------------------- */

static void finish_request(struct http_request *hr)
{
    struct http *h = hr->http;
    hr->completed = true;
    batcher_release(h->engine.batcher, &hr->srv);
    uint64_t start = atomic_load(&hr->srv.t_compute_start);
    if (start) {
        metrics_stage(METRICS_STAGE_QUEUE, ms_between(hr->t_received, start) / 1e3);
        metrics_stage(METRICS_STAGE_INFERENCE, ms_between(start, hr->srv.t_compute_end) / 1e3);
    }
    bool orphaned = atomic_load(&hr->srv.orphaned);
    if (hr->suspended) {
        hr->suspended = false;
        suspended_unlink(hr);
        if (hr->hc) { /* writing the answer gets a deadline of its own */
            hr->hc->waiting = false;
            hr->hc->t_start = srv_now_ns();
        }
        if (orphaned) {
            /* Nothing to send: resumed, on_access refuses it and MHD closes. */
        } else if (atomic_load(&hr->srv.failed)) {
            log_msg(LOG_ERROR, "%s %s: %s", hr->method, hr->path, hr->srv.error);
            respond_errorf(hr, PROTO_ERR_INTERNAL, "%s", hr->srv.error);
        } else {
            respond(hr, 200, "application/json", hr->srv.body, hr->srv.body_len, NULL);
            hr->srv.body = NULL;
        }
        MHD_resume_connection(hr->conn);
    }
    if (orphaned && !hr->responded)
        log_request(&(struct log_request){.method = hr->method, .path = hr->path, .status = 499,
                                          .inputs = hr->srv.job.n_seqs,
                                          .tokens = hr->srv.job.n_tokens,
                                          .total_ms = ms_between(hr->t_received, srv_now_ns()),
                                          .error = "client closed the connection"});
    request_maybe_free(hr);
}

static void on_completions(uv_async_t *async)
{
    struct http *h = async->data;
    struct srv_request *r = completions_take(h->done);
    while (r != NULL) {
        struct srv_request *next = r->next_done;
        finish_request((struct http_request *)((char *)r - offsetof(struct http_request, srv)));
        r = next;
    }
    mhd_run(h);
    check_drained(h);
}

/* ---- MHD from the libuv loop ---------------------------------------------- */

static void on_mhd_timer(uv_timer_t *timer)
{
    mhd_run(timer->data);
}

static void on_mhd_poll(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    mhd_run(poll->data);
}

/* Run MHD and keep its timeout armed: a forgotten timer means idle
 * connections never time out. */
static void mhd_run(struct http *h)
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
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(h->daemon, &ms) == MHD_YES)
        uv_timer_start(&h->mhd_timer, on_mhd_timer, ms, 0);
    else
        uv_timer_stop(&h->mhd_timer);
}

/* ---- connections and the request deadline ------------------------------- */

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct http_conn *hc = calloc(1, sizeof *hc);
        *socket_context = hc;
        if (hc == NULL)
            return;
        hc->conn = conn;
        hc->t_start = srv_now_ns();
        hc->next = h->conns;
        if (h->conns)
            h->conns->prev = hc;
        h->conns = hc;
        h->n_conns++;
        hc->over_limit = h->n_conns > h->settings.max_connections;
        return;
    }
    struct http_conn *hc = *socket_context;
    if (hc == NULL)
        return;
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        h->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    h->n_conns--;
    h->conn_closed = true;
    free(hc);
    *socket_context = NULL;
}

/* A request (headers, body, and writing the answer; not the time with the
 * workers) must finish within request_timeout_ms, and a connection whose
 * client left is closed at once. With epoll's edge triggers, a request's
 * bytes and the client's FIN that arrive together are one event: MHD reads
 * the bytes and would notice the hang-up only at the idle timeout, so the
 * sweep peeks. There is no call to close an MHD connection from outside, so
 * shut its socket down: MHD sees the hang-up and closes it. */
static void on_deadline_timer(uv_timer_t *timer)
{
    struct http *h = timer->data;
    uint64_t now = srv_now_ns();
    uint64_t limit = (uint64_t)h->settings.request_timeout_ms * 1000000u;
    bool cut_any = false;
    for (struct http_conn *hc = h->conns; hc != NULL; hc = hc->next) {
        if (hc->waiting || hc->cut)
            continue;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(hc->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci == NULL)
            continue;
        bool late = now - hc->t_start > limit;
        if (!late && !srv_client_left(ci->connect_fd))
            continue;
        if (late)
            log_msg(LOG_INFO, "closing a connection whose request took more than "
                    "request_timeout_ms (%u ms)", h->settings.request_timeout_ms);
        shutdown(ci->connect_fd, SHUT_RDWR);
        hc->cut = true;
        cut_any = true;
    }
    if (cut_any)
        mhd_run(h);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_msg(LOG_DEBUG, "libmicrohttpd: %s", msg);
}

static bool resolve_address(const char *host, uint16_t port, struct sockaddr_storage *out,
                            char *err, size_t err_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, err_len, "cannot resolve host '%s': %s", host, gai_strerror(rc));
        return false;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return true;
}

struct http *http_start(uv_loop_t *loop, const struct http_settings *s, struct completions *done,
                        void (*on_drained)(void *arg), void *arg, char *err, size_t err_len)
{
    struct sockaddr_storage addr;
    if (!resolve_address(s->host, s->port, &addr, err, err_len))
        return NULL;
    struct http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    h->loop = loop;
    h->settings = *s;
    h->done = done;
    h->on_drained = on_drained;
    h->on_drained_arg = arg;
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned timeout_s = (s->request_timeout_ms + 999) / 1000;
    h->daemon = MHD_start_daemon(
        flags, s->port, NULL, NULL, on_access, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(s->max_connections + CONNECTION_RESERVE(s->max_connections)),
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        MHD_OPTION_END);
    if (h->daemon == NULL) {
        snprintf(err, err_len, "cannot listen on %s:%u (in use, or no permission?)", s->host,
                 s->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    uv_poll_init(loop, &h->mhd_poll, info->epoll_fd);
    h->mhd_poll.data = h;
    uv_poll_start(&h->mhd_poll, UV_READABLE, on_mhd_poll);
    uv_timer_init(loop, &h->mhd_timer);
    h->mhd_timer.data = h;
    uv_timer_init(loop, &h->drain_timer);
    h->drain_timer.data = h;
    uv_timer_init(loop, &h->deadline_timer);
    h->deadline_timer.data = h;
    uint64_t sweep_ms = s->request_timeout_ms / 8;
    sweep_ms = sweep_ms < 20 ? 20 : sweep_ms > 1000 ? 1000 : sweep_ms;
    uv_timer_start(&h->deadline_timer, on_deadline_timer, sweep_ms, sweep_ms);
    uv_async_init(loop, &done->async, on_completions);
    done->async.data = h;
    mhd_run(h);
    return h;
}

void http_set_engine(struct http *h, const struct http_engine *engine)
{
    h->engine = *engine;
    h->engine_set = true;
}

/* ---- drain ------------------------------------------------------------------ */

static void drain_done(uv_timer_t *timer)
{
    struct http *h = timer->data;
    h->on_drained(h->on_drained_arg);
}

static void check_drained(struct http *h)
{
    if (!h->draining || h->drained)
        return;
    size_t in_flight = h->engine_set ? batcher_stats(h->engine.batcher).in_flight : 0;
    if (in_flight > 0 || h->live > 0)
        return;
    h->drained = true;
    /* Never from here directly: this can run inside MHD_run (a request's
     * completion callback), and on_drained stops the daemon. */
    uv_timer_start(&h->drain_timer, drain_done, 0, 0);
}

/* Past shutdown_timeout_ms: give up on what is left. */
static void drain_tick(uv_timer_t *timer)
{
    struct http *h = timer->data;
    if (srv_now_ns() < h->drain_deadline) {
        check_drained(h);
        return;
    }
    log_msg(LOG_WARN, "drain timed out after %u ms; closing %zu unfinished requests",
            h->settings.shutdown_timeout_ms, h->live);
    while (h->suspended != NULL) {
        struct http_request *hr = h->suspended;
        hr->suspended = false;
        suspended_unlink(hr);
        atomic_store(&hr->srv.orphaned, true);
        respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the server shut down before answering");
        MHD_resume_connection(hr->conn);
    }
    mhd_run(h);
    h->drained = true;
    uv_timer_start(&h->drain_timer, drain_done, 0, 0);
}

void http_drain(struct http *h)
{
    if (h->draining)
        return;
    h->draining = true;
    MHD_socket listen_fd = MHD_quiesce_daemon(h->daemon);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
    if (h->engine_set)
        batcher_close(h->engine.batcher);
    h->drain_deadline = srv_now_ns() + (uint64_t)h->settings.shutdown_timeout_ms * 1000000u;
    uv_timer_start(&h->drain_timer, drain_tick, 50, 50);
    check_drained(h);
}

void http_stop(struct http *h)
{
    /* The workers are joined: finish whatever they completed last. */
    on_completions(&h->done->async);
    uv_timer_stop(&h->drain_timer);
    uv_timer_stop(&h->deadline_timer);
    uv_timer_stop(&h->mhd_timer);
    uv_poll_stop(&h->mhd_poll);
    MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
    uv_close((uv_handle_t *)&h->mhd_poll, NULL);
    uv_close((uv_handle_t *)&h->mhd_timer, NULL);
    uv_close((uv_handle_t *)&h->drain_timer, NULL);
    uv_close((uv_handle_t *)&h->deadline_timer, NULL);
    uv_close((uv_handle_t *)&h->done->async, NULL);
}

void http_free(struct http *h)
{
    if (h == NULL)
        return;
    free(h->engine.info_json);
    free(h);
}

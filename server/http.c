#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "http_framing.h"
#include "http_internal.h"
#include "log.h"
#include "metrics.h"

/* A body larger than the limit is read to its end (so the client gets a
 * 413 it can read) unless it goes on past this many times the limit; then
 * the connection is closed. */
#define DISCARD_FACTOR 16

/* ---- routing -------------------------------------------------------------- */

static const struct {
    const char *path;
    enum endpoint ep;
    enum metrics_route mroute;
} get_routes[] = {
    {"/health", EP_HEALTH, METRICS_ROUTE_HEALTH},
    {"/", EP_HEALTH, METRICS_ROUTE_HEALTH},     /* GET: TEI's probe (POST: below) */
    {"/ping", EP_HEALTH, METRICS_ROUTE_HEALTH}, /* SageMaker's probe */
    {"/ready", EP_READY, METRICS_ROUTE_READY},
    {"/info", EP_INFO, METRICS_ROUTE_INFO},
    {"/metrics", EP_METRICS, METRICS_ROUTE_METRICS},
    {"/v1/models", EP_MODELS, METRICS_ROUTE_MODELS},
};

/* GET /v1/models/{id}: the id is the rest of the path, slashes included
 * (served names such as "BAAI/bge-small-en-v1.5"). */
#define MODELS_PREFIX "/v1/models/"

#define ALL_METHODS (PROTO_METHOD_GET | PROTO_METHOD_POST)

/* PROTO_METHOD_* bits the request's route answers: the proto route's
 * own, GET for the server's, both on "/" (a probe and the checkpoint's
 * route). */
static unsigned route_methods(const struct http_request *hr)
{
    if (strcmp(hr->path, "/") == 0)
        return ALL_METHODS;
    return hr->ep == EP_INFERENCE ? proto_route_methods(hr->srv.route) : PROTO_METHOD_GET;
}

/* What a 405 says to use: "POST". */
static const char *allowed_methods(const struct http_request *hr)
{
    static const char *const names[ALL_METHODS + 1] = {"", "GET", "POST", "GET or POST"};
    return names[route_methods(hr) & ALL_METHODS];
}

const char *http_allow_header(const struct http_request *hr)
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

/* SageMaker's POST /invocations, and POST / of Inference Endpoints: the
 * checkpoint's own route, counted and answered as that route. */
static bool default_route_path(const struct http_request *hr, const char *url)
{
    return strcmp(url, "/invocations") == 0 ||
           (strcmp(url, "/") == 0 && strcmp(hr->method, "POST") == 0);
}

static void resolve(struct http_request *hr, const char *url)
{
    enum proto_route route;
    hr->ep = EP_NOT_FOUND;
    hr->mroute = METRICS_ROUTE_OTHER;
    bool found = true;
    if (default_route_path(hr, url))
        route = hr->http->settings.default_route;
    else
        found = proto_route_from_path(url, &route);
    if (found) {
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
    if (strncmp(url, MODELS_PREFIX, strlen(MODELS_PREFIX)) == 0 &&
        url[strlen(MODELS_PREFIX)] != '\0') {
        hr->ep = EP_MODELS;
        hr->mroute = METRICS_ROUTE_MODELS;
    }
}

static void answer_models(struct http_request *hr)
{
    struct http *h = hr->http;
    if (!atomic_load(&h->engine_set)) {
        http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the model is still loading");
        return;
    }
    const char *id = strncmp(hr->path, MODELS_PREFIX, strlen(MODELS_PREFIX)) == 0
                         ? hr->path + strlen(MODELS_PREFIX)
                         : NULL;
    struct proto_error err;
    size_t len;
    char *body = proto_models_body(h->engine.model_name, h->engine.created, id, &len, &err);
    if (body)
        http_respond(hr, 200, "application/json", body, len, false, NULL);
    else
        http_respond_error(hr, &err);
}

/* Compare without leaking the key's length or content through timing. */
static bool key_matches(const char *given, size_t gl, const char *key)
{
    size_t kl = strlen(key);
    unsigned char diff = gl != kl;
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(key[i] ^ (i < gl ? given[i] : 0));
    return diff == 0;
}

/* Probes stay open; with a key set every other path needs it, unknown ones
 * included, so 404 and 405 cannot map the routes for a client without it. */
static bool authorized(struct http_request *hr, const struct http_head *head)
{
    const char *key = hr->http->settings.api_key;
    if (key == NULL || key[0] == '\0' || hr->ep == EP_HEALTH || hr->ep == EP_READY ||
        hr->ep == EP_METRICS)
        return true;
    const struct http_span *auth = http_head_find(head, "Authorization");
    if (auth == NULL || auth->len < 7 || strncasecmp(auth->p, "Bearer ", 7) != 0)
        return false;
    return key_matches(auth->p + 7, auth->len - 7, key);
}

/* RFC 9110 10.1.1: Expect lists expectations, of which only 100-continue is
 * defined (http_conn.c answers it); a server may refuse any other with 417,
 * which tells the client at once what would otherwise leave it waiting or
 * sending a body for nothing. HTTP/1.0 has no Expect. Returns false with
 * the first member that is not 100-continue in *other. */
static bool expectations_met(const struct http_head *head, struct http_span *other)
{
    if (head->minor == 0)
        return true;
    for (size_t i = 0; i < head->n_headers; i++) {
        if (head->names[i].len != 6 || strncasecmp(head->names[i].p, "Expect", 6) != 0)
            continue;
        size_t pos = 0;
        while (http_list_next(head->values[i], &pos, other))
            if (other->len != 12 || strncasecmp(other->p, "100-continue", 12) != 0)
                return false;
    }
    return true;
}

/* ---- handlers ------------------------------------------------------------- */

static void handle_get(struct http_request *hr)
{
    struct http *h = hr->http;
    switch (hr->ep) {
    case EP_HEALTH:
        if (atomic_load(&h->engine_set))
            http_respond_text(hr, 200, "application/json", "{\"status\":\"ok\"}");
        else
            http_respond_text(hr, 503, "application/json", "{\"status\":\"loading\"}");
        break;
    case EP_READY:
        if (atomic_load(&h->engine_set) && !h->draining)
            http_respond_text(hr, 200, "application/json", "{\"status\":\"ready\"}");
        else
            http_respond_text(hr, 503, "application/json",
                              h->draining ? "{\"status\":\"draining\"}"
                                          : "{\"status\":\"loading\"}");
        break;
    case EP_INFO:
        if (atomic_load(&h->engine_set))
            http_respond_text(hr, 200, "application/json", h->engine.info_json);
        else
            http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the model is still loading");
        break;
    case EP_METRICS: {
        /* Read at scrape time: the loop threads' CPU clocks. */
        struct metrics_gauges g = {
            .ready = atomic_load(&h->engine_set) && !h->draining,
            .loop_cpu_seconds = http_server_loop_cpu_seconds(h->server)};
        if (atomic_load(&h->engine_set)) {
            struct batcher_stats s = batcher_stats(h->engine.batcher);
            g.queue_sequences = s.queued_sequences;
            g.queue_tokens = s.queued_tokens;
            g.in_flight = s.in_flight;
            g.prepare_cpu_seconds = prepare_pool_cpu_seconds(h->engine.prepare);
        }
        size_t len;
        char *text = metrics_render(&g, &len);
        if (text)
            http_respond(hr, 200, "text/plain; version=0.0.4", text, len, false, NULL);
        else
            http_respond_errorf(hr, PROTO_ERR_INTERNAL, "out of memory rendering metrics");
        break;
    }
    case EP_MODELS:
        answer_models(hr);
        break;
    default:
        break;
    }
}

static void handle_inference(struct http_request *hr)
{
    struct http *h = hr->http;
    if (!atomic_load(&h->engine_set))
        http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the model is still loading");
    else if (h->draining)
        http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the server is shutting down");
    else
        http_prepare(hr);
}

/* ---- the request head ------------------------------------------------------- */

/* The framing rules of http_framing.h across the head's header lines. */
static bool framing_ok(struct http_request *hr, const struct http_head *head, bool escaped_nul)
{
    struct http_framing f;
    http_framing_begin(&f, head->minor == 0 ? "HTTP/1.0" : "HTTP/1.1");
    for (size_t i = 0; i < head->n_headers; i++)
        http_framing_header(&f, head->names[i].p, head->names[i].len, head->values[i].p,
                            head->values[i].len);
    enum http_framing_verdict verdict = http_framing_end(&f);
    if (escaped_nul) {
        verdict = HTTP_FRAMING_BAD_REQUEST;
        snprintf(f.reason, sizeof f.reason, "the request target has an escaped NUL byte (%%00)");
    }
    if (verdict == HTTP_FRAMING_OK)
        return true;
    hr->close_after = true;
    http_respond_errorf(hr,
                        verdict == HTTP_FRAMING_NOT_IMPLEMENTED ? PROTO_ERR_NOT_IMPLEMENTED
                                                                : PROTO_ERR_MALFORMED,
                        "%s", f.reason);
    return false;
}

/* strlcpy for a span: cut to fit dst (size > 0), always terminated. */
static void copy_span(char *dst, size_t size, struct http_span src)
{
    size_t n = src.len < size - 1 ? src.len : size - 1;
    memcpy(dst, src.p, n);
    dst[n] = '\0';
}

void http_on_bad_head(struct http_request *hr, const struct http_parse_error *err)
{
    hr->state = HTTP_REQUEST_BODY;
    hr->close_after = true;
    hr->mroute = METRICS_ROUTE_OTHER; /* no route is known of a head not parsed */
    copy_span(hr->method, sizeof hr->method, (struct http_span){"-", 1});
    copy_span(hr->path, sizeof hr->path, (struct http_span){"-", 1});
    /* 414 and 431 say "too large", 505 "not implemented", in our envelope. */
    enum proto_error_kind kind = err->status == 400   ? PROTO_ERR_MALFORMED
                                 : err->status == 505 ? PROTO_ERR_NOT_IMPLEMENTED
                                                      : PROTO_ERR_TOO_LARGE;
    struct proto_error e;
    proto_error_set(&e, kind, "%s", err->reason);
    size_t len;
    char *body = proto_error_body(PROTO_ROUTE_COUNT, &e, &len);
    if (body != NULL)
        http_respond(hr, err->status, "application/json", body, len, false, e.message);
}

void http_on_head(struct http_request *hr, const struct http_head *head)
{
    struct http *h = hr->http;
    hr->state = HTTP_REQUEST_BODY;
    char url[HTTP_TARGET_MAX + 1];
    bool escaped_nul = !http_target_path(head->target, url, sizeof url);
    copy_span(hr->method, sizeof hr->method, head->method);
    copy_span(hr->path, sizeof hr->path, (struct http_span){url, strlen(url)});
    resolve(hr, url);
    const char *cors = h->settings.cors_allow_origin;
    const struct http_span *origin = http_head_find(head, "Origin");
    if (cors != NULL && cors[0] != '\0' && origin != NULL)
        hr->origin = strndup(origin->p, origin->len);
    if (hr->hc) {
        if (hr->hc->over_limit && http_conns_make_room(h, true))
            hr->hc->over_limit = false;
        if (hr->hc->over_limit) {
            hr->close_after = true;
            http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE,
                                "too many open connections (max_connections %zu); retry later",
                                h->settings.max_connections);
            return;
        }
    }
    if (!framing_ok(hr, head, escaped_nul))
        return;
    if (http_cors_preflight(hr)) {
        http_respond_head(hr, head, 204, NULL, NULL, 0, false, NULL);
        return;
    }
    if (!authorized(hr, head)) {
        http_respond_errorf(hr, PROTO_ERR_UNAUTHORIZED,
                            "missing or wrong API key (send Authorization: Bearer <key>)");
        return;
    }
    struct http_span other;
    if (!expectations_met(head, &other)) {
        hr->close_after = true;
        http_respond_errorf(hr, PROTO_ERR_EXPECTATION,
                            "Expect: \"%.*s\" cannot be met; the only expectation served is "
                            "100-continue",
                            (int)(other.len < HTTP_QUOTE_MAX ? other.len : HTTP_QUOTE_MAX),
                            other.p);
        return;
    }
    const struct http_span *cl = http_head_find(head, "Content-Length");
    if (cl != NULL && strtoull(cl->p, NULL, 10) > h->settings.max_body_bytes)
        http_respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                            "the request body is %.*s bytes, more than max_body_bytes (%zu)",
                            (int)cl->len, cl->p, h->settings.max_body_bytes);
}

bool http_on_body(struct http_request *hr, const char *data, size_t len)
{
    size_t limit = hr->http->settings.max_body_bytes;
    if (hr->body_too_large || hr->body_len + len > limit) {
        hr->body_too_large = true;
        hr->discarded += len;
        return hr->discarded / DISCARD_FACTOR <= limit;
    }
    if (hr->body_len + len + 1 > hr->body_cap) {
        /* Most bodies arrive in one read: sized to it, grown by doubling. */
        size_t cap = hr->body_cap ? hr->body_cap : len + 1;
        while (cap < hr->body_len + len + 1)
            cap *= 2;
        if (cap > limit + 1)
            cap = limit + 1;
        char *body = realloc(hr->body, cap);
        if (body == NULL) {
            hr->body_too_large = true;
            return true;
        }
        hr->body = body;
        hr->body_cap = cap;
    }
    memcpy(hr->body + hr->body_len, data, len);
    hr->body_len += len;
    hr->body[hr->body_len] = '\0';
    return true;
}

void http_on_request(struct http_request *hr)
{
    if (hr->ep == EP_NOT_FOUND)
        http_respond_errorf(hr, PROTO_ERR_NOT_FOUND, "no route %s %.64s", hr->method, hr->path);
    else if (!method_allowed(hr))
        http_respond_errorf(hr, PROTO_ERR_METHOD, "%s %.64s is not allowed; use %s", hr->method,
                            hr->path, allowed_methods(hr));
    else if (hr->body_too_large)
        http_respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                            "the request body is more than max_body_bytes (%zu)",
                            hr->http->settings.max_body_bytes);
    else if (hr->ep == EP_INFERENCE)
        handle_inference(hr);
    else
        handle_get(hr);
}

/* ---- start and stop ----------------------------------------------------------- */

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

bool http_port_free(const struct http_settings *s, char *err, size_t err_len)
{
    struct sockaddr_storage addr;
    if (!resolve_address(s->host, s->port, &addr, err, err_len))
        return false;
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "cannot open a socket: %s", strerror(errno));
        return false;
    }
    int on = 1; /* as the listener's own: a port with connections in TIME_WAIT is free */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    socklen_t len = addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                               : sizeof(struct sockaddr_in);
    bool ok = bind(fd, (struct sockaddr *)&addr, len) == 0;
    if (!ok)
        snprintf(err, err_len, "cannot listen on %s:%u (%s)", s->host, s->port, strerror(errno));
    close(fd);
    return ok;
}

/* A listening socket on the address: SO_REUSEADDR (a port with connections
 * in TIME_WAIT is free), SO_REUSEPORT when the loops share the port, IPv6
 * sockets for IPv6 only. Returns -1 with a message in err. */
static int listen_on(const struct http_settings *s, const struct sockaddr_storage *addr,
                     bool reuse_port, char *err, size_t err_len)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "cannot open a socket: %s", strerror(errno));
        return -1;
    }
    int on = 1;
    bool ok = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0 &&
              (!reuse_port || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) == 0) &&
              (addr->ss_family != AF_INET6 ||
               setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) == 0);
    socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                : sizeof(struct sockaddr_in);
    if (ok)
        ok = bind(fd, (const struct sockaddr *)addr, len) == 0 &&
             listen(fd, HTTP_LISTEN_BACKLOG) == 0;
    if (!ok) {
        snprintf(err, err_len, "cannot listen on %s:%u (%s)", s->host, s->port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

struct http *http_open(const struct http_settings *s, bool reuse_port, char *err,
                       size_t err_len)
{
    struct sockaddr_storage addr;
    if (!resolve_address(s->host, s->port, &addr, err, err_len))
        return NULL;
    struct http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    h->settings = *s;
    h->listen_fd = listen_on(s, &addr, reuse_port, err, err_len);
    if (h->listen_fd < 0) {
        free(h);
        return NULL;
    }
    completions_init(&h->done);
    return h;
}

void http_attach(struct http *h, uv_loop_t *loop, struct http_server *server,
                 atomic_size_t *open_conns, void (*on_drained)(void *arg), void *arg)
{
    h->loop = loop;
    h->server = server;
    h->open_conns = open_conns;
    h->on_drained = on_drained;
    h->on_drained_arg = arg;
    uv_check_init(loop, &h->after_reads);
    h->after_reads.data = h;
    http_conn_listen(h);
    http_conns_start(h);
    http_respond_init(h);
    uv_timer_init(loop, &h->drain_timer);
    h->drain_timer.data = h;
    uv_async_init(loop, &h->done.async, http_request_on_completions);
    h->done.async.data = h;
}

void http_set_engine(struct http *h, const struct http_engine *engine)
{
    h->engine = *engine;
    atomic_store(&h->engine_set, true);
}

/* ---- drain ------------------------------------------------------------------ */

static void drain_done(uv_timer_t *timer)
{
    struct http *h = timer->data;
    h->on_drained(h->on_drained_arg);
}

void http_check_drained(struct http *h)
{
    if (!h->draining || h->drained)
        return;
    size_t in_flight = atomic_load(&h->engine_set) ? batcher_stats(h->engine.batcher).in_flight : 0;
    if (in_flight > 0 || h->live > 0)
        return;
    h->drained = true;
    /* Never from here directly: this can run inside a connection's
     * callbacks, and on_drained closes the connections. */
    uv_timer_start(&h->drain_timer, drain_done, 0, 0);
}

/* Past shutdown_timeout_ms: give up on what is left. */
static void drain_tick(uv_timer_t *timer)
{
    struct http *h = timer->data;
    if (srv_now_ns() < h->drain_deadline) {
        http_check_drained(h);
        return;
    }
    log_msg(LOG_WARN, "drain timed out after %u ms; closing %zu unfinished requests",
            h->settings.shutdown_timeout_ms, h->live);
    http_request_cut_off_all(h);
    h->drained = true;
    uv_timer_start(&h->drain_timer, drain_done, 0, 0);
}

void http_drain(struct http *h)
{
    if (h->draining)
        return;
    /* The listener stays open until the drain ends, so that probes get
     * their answers (/health 200, /ready 503) instead of "connection
     * refused", and inference requests a 503 with Retry-After and
     * Connection: close (handle_inference, http_respond). */
    h->draining = true;
    if (atomic_load(&h->engine_set))
        batcher_close(h->engine.batcher);
    h->drain_deadline = srv_now_ns() + (uint64_t)h->settings.shutdown_timeout_ms * 1000000u;
    uv_timer_start(&h->drain_timer, drain_tick, 50, 50);
    http_check_drained(h);
}

void http_close_daemon(struct http *h)
{
    uv_timer_stop(&h->drain_timer);
    http_conns_stop(h);
    http_conn_stop(h); /* the answers still being written are freed as they close */
    uv_check_stop(&h->after_reads);
    uv_close((uv_handle_t *)&h->after_reads, NULL);
    http_respond_stop(h);
    uv_close((uv_handle_t *)&h->drain_timer, NULL);
}

void http_close(struct http *h)
{
    /* The workers are joined: finish whatever they completed last (requests
     * the drain's time-out answered: released now). */
    http_request_on_completions(&h->done.async);
    uv_close((uv_handle_t *)&h->done.async, NULL);
}

void http_free(struct http *h)
{
    if (h == NULL)
        return;
    if (h->listen_fd >= 0) /* opened, never attached */
        close(h->listen_fd);
    completions_destroy(&h->done);
    free(h);
}

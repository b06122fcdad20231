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
#include <microhttpd.h>

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
    {"/ready", EP_READY, METRICS_ROUTE_READY},
    {"/info", EP_INFO, METRICS_ROUTE_INFO},
    {"/metrics", EP_METRICS, METRICS_ROUTE_METRICS},
    {"/v1/models", EP_MODELS, METRICS_ROUTE_MODELS},
};

/* GET /v1/models/{id}: the id is the rest of the path, slashes included
 * (served names such as "BAAI/bge-small-en-v1.5"). */
#define MODELS_PREFIX "/v1/models/"

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
static bool key_matches(const char *given, const char *key)
{
    size_t gl = strlen(given), kl = strlen(key);
    unsigned char diff = gl != kl;
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(key[i] ^ (i < gl ? given[i] : 0));
    return diff == 0;
}

/* Probes stay open; with a key set every other path needs it, unknown ones
 * included, so 404 and 405 cannot map the routes for a client without it. */
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

struct head_check {
    struct http_framing framing;
    struct http_head_walk walk;
};

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size)
{
    struct head_check *c = cls;
    (void)kind;
    http_head_walk_span(&c->walk, key, key_size);
    http_head_walk_span(&c->walk, value, value_size);
    http_framing_header(&c->framing, key, key_size, value, value_size);
    return MHD_YES;
}

/* The framing rules of http_framing.h. libmicrohttpd 1.0 refuses NUL bytes
 * in the head itself and keeps it differently; 0.9.x needs the walk. */
static bool framing_ok(struct http_request *hr, const char *method, const char *version)
{
    struct head_check c;
    http_framing_begin(&c.framing, version);
#if MHD_VERSION < 0x01000000
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(hr->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    http_head_walk_begin(&c.walk, method, ci ? ci->header_size : 0);
    http_head_walk_span(&c.walk, method, strlen(method));
    http_head_walk_span(&c.walk, hr->raw_uri, (size_t)(hr->raw_uri_end - hr->raw_uri));
    http_head_walk_span(&c.walk, version, strlen(version));
#else
    http_head_walk_begin(&c.walk, NULL, 0);
#endif
    MHD_get_connection_values_n(hr->conn, MHD_HEADER_KIND, check_header, &c);
    enum http_framing_verdict verdict = http_framing_end(&c.framing);
#if MHD_VERSION < 0x01000000
    if (!http_head_walk_end(&c.walk)) {
        verdict = HTTP_FRAMING_BAD_REQUEST;
        snprintf(c.framing.reason, sizeof c.framing.reason,
                 "the request head has a NUL byte (or a header line folded onto the next)");
    }
#endif
    if (hr->escaped_nul) {
        verdict = HTTP_FRAMING_BAD_REQUEST;
        snprintf(c.framing.reason, sizeof c.framing.reason,
                 "the request target has an escaped NUL byte (%%00)");
    }
    if (verdict == HTTP_FRAMING_OK)
        return true;
    hr->close_after = true;
    http_respond_errorf(hr,
                        verdict == HTTP_FRAMING_NOT_IMPLEMENTED ? PROTO_ERR_NOT_IMPLEMENTED
                                                                : PROTO_ERR_MALFORMED,
                        "%s", c.framing.reason);
    return false;
}

/* strlcpy: src cut to fit dst (size > 0), always terminated. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The head is in: refuse what needs no body (connection limit, framing,
 * key, size by Content-Length) before the body is read. */
static void on_head(struct http_request *hr, const char *url, const char *method,
                    const char *version)
{
    struct http *h = hr->http;
    hr->state = HTTP_REQUEST_BODY;
    copy_text(hr->method, sizeof hr->method, method);
    copy_text(hr->path, sizeof hr->path, url);
    resolve(hr, url);
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
    if (!framing_ok(hr, method, version))
        return;
    if (http_cors_preflight(hr)) {
        http_respond(hr, 204, NULL, NULL, 0, false, NULL);
        return;
    }
    if (!authorized(hr)) {
        http_respond_errorf(hr, PROTO_ERR_UNAUTHORIZED,
                            "missing or wrong API key (send Authorization: Bearer <key>)");
        return;
    }
    const char *cl = MHD_lookup_connection_value(hr->conn, MHD_HEADER_KIND, "Content-Length");
    if (cl != NULL && strtoull(cl, NULL, 10) > h->settings.max_body_bytes)
        http_respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                            "the request body is %s bytes, more than max_body_bytes (%zu)", cl,
                            h->settings.max_body_bytes);
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

/* ---- libmicrohttpd callbacks ------------------------------------------------ */

/* The request line is in (headers not yet): the request object starts here,
 * while the target is still as the client sent it. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_request *hr = http_request_new(cls, conn, uri);
    return hr;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    struct http *h = cls;
    struct http_request *hr = *con_cls;
    (void)conn;
    if (hr == NULL)
        return MHD_NO; /* out of memory at the request line */
    switch (hr->state) {
    case HTTP_REQUEST_HEAD:
        on_head(hr, url, method, version);
        return MHD_YES;
    case HTTP_REQUEST_BODY:
        break;
    case HTTP_REQUEST_ANSWERED:
        return MHD_YES;
    default: /* abandoned, or cut off without an answer: close */
        return MHD_NO;
    }
    if (*upload_data_size > 0) {
        append_body(hr, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return hr->discarded / DISCARD_FACTOR > h->settings.max_body_bytes ? MHD_NO : MHD_YES;
    }
    on_complete_body(hr);
    /* Answered, or suspended until it is; otherwise no answer could be made
     * (out of memory): close. */
    return hr->state == HTTP_REQUEST_BODY || hr->state == HTTP_REQUEST_ABANDONED ? MHD_NO
                                                                                 : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    struct http_request *hr = *con_cls;
    (void)cls;
    (void)conn;
    (void)code;
    if (hr == NULL)
        return;
    *con_cls = NULL;
    http_request_mhd_done(hr);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
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
    int on = 1; /* as libmicrohttpd's own: a port with connections in TIME_WAIT is free */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    socklen_t len = addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                               : sizeof(struct sockaddr_in);
    bool ok = bind(fd, (struct sockaddr *)&addr, len) == 0;
    if (!ok)
        snprintf(err, err_len, "cannot listen on %s:%u (%s)", s->host, s->port, strerror(errno));
    close(fd);
    return ok;
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
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned timeout_s = (s->request_timeout_ms + 999) / 1000;
    size_t max = s->max_connections;
    /* The option only when asked for: given as "no", it also drops the
     * SO_REUSEADDR libmicrohttpd sets by default. */
    struct MHD_OptionItem reuse[] = {
        {reuse_port ? MHD_OPTION_LISTENING_ADDRESS_REUSE : MHD_OPTION_END, 1, NULL},
        {MHD_OPTION_END, 0, NULL}};
    h->daemon = MHD_start_daemon(
        flags, s->port, NULL, NULL, on_access, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(max + HTTP_CONNECTION_RESERVE(max)),
        MHD_OPTION_NOTIFY_CONNECTION, http_conns_notify, h, MHD_OPTION_URI_LOG_CALLBACK,
        on_request_line, h, MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_ARRAY, reuse, MHD_OPTION_END);
    if (h->daemon == NULL) {
        snprintf(err, err_len, "cannot listen on %s:%u (%s)", s->host, s->port,
                 reuse_port ? "in use, no permission, or SO_REUSEPORT refused?"
                            : "in use, or no permission?");
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
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    http_loop_start(h, info->epoll_fd);
    http_conns_start(h);
    http_respond_init(h);
    uv_timer_init(loop, &h->drain_timer);
    h->drain_timer.data = h;
    uv_async_init(loop, &h->done.async, http_request_on_completions);
    h->done.async.data = h;
    http_loop_run(h);
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
    /* Never from here directly: this can run inside MHD_run (a request's
     * completion callback), and on_drained stops the daemon. */
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
    http_loop_run(h);
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
    MHD_stop_daemon(h->daemon); /* frees the answers still queued */
    h->daemon = NULL;
    http_loop_stop(h);
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
    if (h->daemon != NULL) /* opened, never attached */
        MHD_stop_daemon(h->daemon);
    completions_destroy(&h->done);
    free(h);
}

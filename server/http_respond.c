/* Answers: every response goes through http_respond, which adds the
 * headers, queues it, writes the request's log line and counts it. The
 * bytes of rendered answers are given back to the response budget when
 * libmicrohttpd frees them, and after large answers the allocator is asked
 * to return its free memory to the system. */
#include "http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "log.h"

/* Once answers of this many bytes in all have been freed, return free
 * memory to the system: a little later, once for a burst of them. */
#define TRIM_AFTER_BYTES ((size_t)8 << 20)
#define TRIM_DELAY_MS 200

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

/* Whether the loop may read the request's job and compute times: not while
 * a prepare thread or the workers still hold it (a drain's time-out). */
static bool results_are_ours(const struct http_request *hr)
{
    return hr->state != HTTP_REQUEST_OFF_LOOP;
}

static void add_timing_headers(struct MHD_Response *resp, const struct http_request *hr,
                               uint64_t now)
{
    const struct srv_request *r = &hr->srv;
    uint64_t start = results_are_ours(hr) ? atomic_load(&r->t_compute_start) : 0;
    char v[24];
    MHD_add_response_header(resp, "x-queue-time",
                            ms_text(v, hr->t_received, start ? start : hr->t_received));
    MHD_add_response_header(resp, "x-inference-time",
                            ms_text(v, start, start ? r->t_compute_end : start));
    MHD_add_response_header(resp, "x-total-time", ms_text(v, hr->t_received, now));
    v[23] = '\0';
    size_t truncated = results_are_ours(hr) ? r->n_truncated : 0;
    MHD_add_response_header(resp, "x-truncated-inputs", digits_before(v + 23, truncated));
}

/* A budgeted answer: what to give back when MHD frees it. */
struct budgeted_body {
    struct http *http;
    char *body;
    size_t len;
};

static void on_trim_timer(uv_timer_t *timer)
{
    (void)timer;
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* glibc keeps the pages of freed blocks for reuse, and a freed block that
 * it had mapped on its own raises the size it maps blocks at: after 24
 * clients that never read their 13 MB answers had left, the process stayed
 * at 168 MiB against a warm baseline of 62; with the trim, 75. */
static void free_budgeted(void *cls)
{
    struct budgeted_body *b = cls;
    struct http *h = b->http;
    response_budget_give(h->engine.answers, b->len);
    h->freed_since_trim += b->len;
    free(b->body);
    free(b);
    if (h->freed_since_trim >= TRIM_AFTER_BYTES && !uv_is_active((uv_handle_t *)&h->trim_timer)) {
        h->freed_since_trim = 0;
        uv_timer_start(&h->trim_timer, on_trim_timer, TRIM_DELAY_MS, 0);
    }
}

static struct MHD_Response *make_response(struct http *h, char *body, size_t len,
                                          bool budgeted)
{
    if (!budgeted)
        return MHD_create_response_from_buffer_with_free_callback(len, body, free);
    struct budgeted_body *b = malloc(sizeof *b);
    if (b == NULL)
        return NULL;
    *b = (struct budgeted_body){.http = h, .body = body, .len = len};
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback_cls(len, body, free_budgeted, b);
    if (resp == NULL)
        free(b);
    return resp;
}

void http_respond(struct http_request *hr, int status, const char *content_type, char *body,
                  size_t len, bool budgeted, const char *error)
{
    struct http *h = hr->http;
    uint64_t now = srv_now_ns();
    struct MHD_Response *resp = make_response(h, body, len, budgeted);
    if (resp == NULL) {
        if (budgeted)
            response_budget_give(h->engine.answers, len);
        free(body);
        return;
    }
    if (content_type != NULL)
        MHD_add_response_header(resp, "Content-Type", content_type);
    http_cors_headers(hr, resp);
    if (hr->ep == EP_INFERENCE)
        add_timing_headers(resp, hr, now);
    if (status == 429 || status == 503)
        MHD_add_response_header(resp, "Retry-After", "1");
    if (status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (status == 405)
        MHD_add_response_header(resp, "Allow", http_allow_header(hr));
    if (h->draining || hr->close_after)
        MHD_add_response_header(resp, "Connection", "close");
    MHD_queue_response(hr->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);

    const struct srv_request *r = &hr->srv;
    bool ours = results_are_ours(hr);
    uint64_t start = ours ? atomic_load(&hr->srv.t_compute_start) : 0;
    log_request(&(struct log_request){
        .method = hr->method,
        .path = hr->path,
        .status = status,
        .inputs = ours ? r->n_seqs : 0,
        .tokens = ours ? r->n_tokens : 0,
        .queue_ms = start ? http_ms_between(hr->t_received, start) : 0.0,
        .inference_ms = start ? http_ms_between(start, hr->srv.t_compute_end) : 0.0,
        .total_ms = http_ms_between(hr->t_received, now),
        .error = error,
    });
    metrics_request(hr->mroute, status, http_ms_between(hr->t_received, now) / 1e3);
    http_request_set_state(hr, HTTP_REQUEST_ANSWERED);
}

void http_respond_error(struct http_request *hr, const struct proto_error *err)
{
    /* /v1/models is OpenAI's: its errors come in OpenAI's envelope. */
    enum proto_route route = hr->ep == EP_INFERENCE ? hr->srv.route
                             : hr->ep == EP_MODELS  ? PROTO_ROUTE_OPENAI_EMBED
                                                    : PROTO_ROUTE_COUNT; /* our envelope */
    size_t len;
    char *body = proto_error_body(route, err, &len);
    if (body == NULL)
        return;
    http_respond(hr, proto_error_status(err->kind), "application/json", body, len, false,
                 err->message);
}

void http_respond_errorf(struct http_request *hr, enum proto_error_kind kind, const char *fmt,
                         ...)
{
    char text[sizeof ((struct proto_error *)0)->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct proto_error err;
    proto_error_set(&err, kind, "%s", text); /* escapes what came from the client */
    http_respond_error(hr, &err);
}

void http_respond_text(struct http_request *hr, int status, const char *content_type,
                       const char *text)
{
    char *body = strdup(text);
    if (body != NULL)
        http_respond(hr, status, content_type, body, strlen(body), false, NULL);
}

void http_log_departed(const struct http_request *hr)
{
    double total_ms = http_ms_between(hr->t_received, srv_now_ns());
    metrics_request(hr->mroute, 499, total_ms / 1e3);
    log_request(&(struct log_request){.method = hr->method, .path = hr->path, .status = 499,
                                      .inputs = hr->srv.n_seqs,
                                      .tokens = hr->srv.n_tokens,
                                      .total_ms = total_ms,
                                      .error = "client closed the connection"});
}

void http_respond_init(struct http *h)
{
    uv_timer_init(h->loop, &h->trim_timer);
    h->trim_timer.data = h;
}

void http_respond_stop(struct http *h)
{
    uv_timer_stop(&h->trim_timer);
    uv_close((uv_handle_t *)&h->trim_timer, NULL);
}

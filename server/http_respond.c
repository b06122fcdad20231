/* Answers: every response goes through http_respond, which writes its
 * status line and headers, hands it to the connection, writes the
 * request's log line and counts it. The bytes of rendered answers are given
 * back to the response budget once they are written (or their connection
 * closes), and after large answers the allocator is asked to return its
 * free memory to the system. */
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

static void add_timing_headers(struct http_answer *a, const struct http_request *hr,
                               uint64_t now)
{
    const struct srv_request *r = &hr->srv;
    uint64_t start = results_are_ours(hr) ? atomic_load(&r->t_compute_start) : 0;
    char v[24];
    http_answer_header(a, "x-queue-time",
                       ms_text(v, hr->t_received, start ? start : hr->t_received));
    http_answer_header(a, "x-inference-time", ms_text(v, start, start ? r->t_compute_end : start));
    http_answer_header(a, "x-total-time", ms_text(v, hr->t_received, now));
    v[23] = '\0';
    size_t truncated = results_are_ours(hr) ? r->n_truncated : 0;
    http_answer_header(a, "x-truncated-inputs", digits_before(v + 23, truncated));
}

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
void http_answer_give_back(struct http_answer *a)
{
    struct http *h = a->http;
    response_budget_give(h->engine.answers, a->body_len);
    h->freed_since_trim += a->body_len;
    free(a->body);
    if (h->freed_since_trim >= TRIM_AFTER_BYTES && !uv_is_active((uv_handle_t *)&h->trim_timer) &&
        !uv_is_closing((uv_handle_t *)&h->trim_timer)) {
        h->freed_since_trim = 0;
        uv_timer_start(&h->trim_timer, on_trim_timer, TRIM_DELAY_MS, 0);
    }
}

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

static bool answer_append(struct http_answer *a, const char *text, size_t n)
{
    if (a->head_len + n > a->head_cap) {
        size_t cap = a->head_cap * 2;
        while (cap < a->head_len + n)
            cap *= 2;
        char *head = malloc(cap);
        if (head == NULL)
            return false;
        memcpy(head, a->head, a->head_len);
        if (a->head != a->room)
            free(a->head);
        a->head = head;
        a->head_cap = cap;
    }
    memcpy(a->head + a->head_len, text, n);
    a->head_len += n;
    return true;
}

bool http_answer_header(struct http_answer *a, const char *name, const char *value)
{
    return answer_append(a, name, strlen(name)) && answer_append(a, ": ", 2) &&
           answer_append(a, value, strlen(value)) && answer_append(a, "\r\n", 2);
}

/* RFC 9110 6.6.1: the Date header, written once a second. */
static const char *date_line(struct http *h)
{
    time_t now = time(NULL);
    if (now != h->date_second) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(h->date, sizeof h->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        h->date_second = now;
    }
    return h->date;
}

/* The status line and the headers every answer has; false when out of
 * memory. */
static bool answer_begin(struct http_answer *a, struct http *h, int status,
                         const char *content_type)
{
    a->head = a->room;
    a->head_cap = sizeof a->room;
    char code[4] = {(char)('0' + status / 100 % 10), (char)('0' + status / 10 % 10),
                    (char)('0' + status % 10), ' '};
    const char *reason = reason_phrase(status);
    return answer_append(a, "HTTP/1.1 ", 9) && answer_append(a, code, 4) &&
           answer_append(a, reason, strlen(reason)) && answer_append(a, "\r\n", 2) &&
           http_answer_header(a, "Date", date_line(h)) &&
           (content_type == NULL || http_answer_header(a, "Content-Type", content_type));
}

void http_respond_head(struct http_request *hr, const struct http_head *head, int status,
                       const char *content_type, char *body, size_t len, bool budgeted,
                       const char *error)
{
    struct http *h = hr->http;
    uint64_t now = srv_now_ns();
    struct http_answer *a = malloc(sizeof *a);
    if (a != NULL) {
        a->head = a->room;
        a->head_len = 0;
        a->head_cap = sizeof a->room;
        a->body = body;
        a->body_len = len;
        a->send_body = !hr->head_only && status != 204;
        a->budgeted = budgeted;
        a->close = false;
        a->http = h;
        body = NULL;
    }
    bool ok = a != NULL && answer_begin(a, h, status, content_type);
    if (ok) {
        http_cors_headers(hr, head, a);
        if (hr->ep == EP_INFERENCE)
            add_timing_headers(a, hr, now);
        if (status == 429 || status == 503)
            http_answer_header(a, "Retry-After", "1");
        if (status == 401)
            http_answer_header(a, "WWW-Authenticate", "Bearer");
        if (status == 405)
            http_answer_header(a, "Allow", http_allow_header(hr));
        a->close = h->draining || hr->close_after || hr->body_unread;
        if (a->close)
            http_answer_header(a, "Connection", "close");
        else if (hr->keep_alive_10)
            http_answer_header(a, "Connection", "keep-alive");
        char v[24];
        v[23] = '\0';
        if (status != 204)
            http_answer_header(a, "Content-Length", digits_before(v + 23, len));
        ok = answer_append(a, "\r\n", 2);
    }
    if (!ok) {
        if (a != NULL)
            http_answer_free(a);
        else if (budgeted) {
            response_budget_give(h->engine.answers, len);
            free(body);
        } else
            free(body);
        return;
    }

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
    if (hr->hc != NULL)
        http_conn_send(hr->hc, a);
    else
        http_answer_free(a);
}

void http_respond(struct http_request *hr, int status, const char *content_type, char *body,
                  size_t len, bool budgeted, const char *error)
{
    http_respond_head(hr, NULL, status, content_type, body, len, budgeted, error);
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

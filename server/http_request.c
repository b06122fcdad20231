/* A request's lifecycle on the loop: created when its head is in, moved
 * through the states of http_internal.h, on the suspended list while
 * another thread holds it, and released at one point, once its connection
 * and every other thread are done with it. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pool.h"

struct http_request *http_request_new(struct http *h, struct http_conn *hc)
{
    struct http_request *hr = calloc(1, sizeof *hr);
    if (hr == NULL)
        return NULL;
    hr->http = h;
    hr->hc = hc;
    hr->state = HTTP_REQUEST_HEAD;
    hr->t_received = srv_now_ns();
    if (!srv_request_init(&hr->srv)) {
        free(hr);
        return NULL;
    }
    hr->srv.done = &h->done; /* whichever thread finishes it, it comes back to this loop */
    h->live++;
    return hr;
}

static bool is_suspended(enum http_request_state s)
{
    return s == HTTP_REQUEST_OFF_LOOP;
}

static void suspended_link(struct http_request *hr)
{
    struct http *h = hr->http;
    hr->prev = NULL;
    hr->next = h->suspended;
    if (h->suspended)
        h->suspended->prev = hr;
    h->suspended = hr;
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

void http_request_set_state(struct http_request *hr, enum http_request_state next)
{
    bool was = is_suspended(hr->state), will = is_suspended(next);
    hr->state = next;
    if (was == will)
        return;
    if (will) {
        suspended_link(hr);
        if (hr->hc)
            hr->hc->waiting = true;
    } else {
        suspended_unlink(hr);
        if (hr->hc) { /* writing the answer gets a deadline of its own */
            hr->hc->waiting = false;
            hr->hc->t_start = srv_now_ns();
        }
    }
    if (next == HTTP_REQUEST_ABANDONED && hr->hc)
        http_conn_close(hr->hc);
}

/* The one release point: its connection is done and no other thread holds
 * it. */
void http_request_maybe_release(struct http_request *hr)
{
    if (hr->hc != NULL || is_suspended(hr->state) || hr->state == HTTP_REQUEST_CUT_OFF)
        return;
    struct http *h = hr->http;
    srv_request_destroy(&hr->srv);
    free(hr->srv.body); /* its job was freed by the thread that handed it back */
    free(hr->body);
    free(hr->origin);
    free(hr);
    h->live--;
    http_check_drained(h);
}

void http_request_conn_done(struct http_request *hr)
{
    if (hr->hc) /* a kept-alive connection's next request gets a fresh deadline */
        http_conns_idle(hr->http, hr->hc);
    hr->hc = NULL; /* the connection may close before the workers finish */
    srv_request_let_go(&hr->srv);
    http_request_maybe_release(hr);
}

/* The prepare stage or the workers are done with a request: answer it. */
static void finish_request(struct http_request *hr)
{
    struct http *h = hr->http;
    struct srv_request *r = &hr->srv;
    uint64_t start = atomic_load(&r->t_compute_start);
    if (start) {
        metrics_stage(METRICS_STAGE_QUEUE, http_ms_between(hr->t_received, start) / 1e3);
        metrics_stage(METRICS_STAGE_INFERENCE, http_ms_between(start, r->t_compute_end) / 1e3);
    }
    /* The API the body was read as answers and counts it (prepare.c). */
    r->route = r->read_as;
    hr->mroute = metrics_route_of(r->route);
    if (hr->state == HTTP_REQUEST_CUT_OFF) { /* answered by the drain's time-out */
        hr->state = HTTP_REQUEST_ANSWERED;
        if (r->body)
            response_budget_give(h->engine.answers, r->body_len);
    } else if (atomic_load(&r->orphaned)) {
        http_log_departed(hr);
        if (r->body)
            response_budget_give(h->engine.answers, r->body_len);
        http_request_set_state(hr, HTTP_REQUEST_ABANDONED);
    } else if (r->refused) {
        http_request_set_state(hr, HTTP_REQUEST_BODY); /* back with the loop */
        http_respond_error(hr, &r->refusal);
    } else if (atomic_load(&r->failed)) {
        http_request_set_state(hr, HTTP_REQUEST_BODY);
        if (r->error_kind == PROTO_ERR_INTERNAL)
            log_msg(LOG_ERROR, "%s %s: %s", hr->method, hr->path, r->error);
        http_respond_errorf(hr, r->error_kind, "%s", r->error);
    } else {
        http_request_set_state(hr, HTTP_REQUEST_BODY);
        http_respond(hr, 200, "application/json", r->body, r->body_len, true, NULL);
        r->body = NULL;
    }
    if (hr->state == HTTP_REQUEST_BODY) /* no answer could be made (out of memory): close */
        http_request_set_state(hr, HTTP_REQUEST_ABANDONED);
    http_request_maybe_release(hr);
}

void http_request_on_completions(uv_async_t *async)
{
    struct http *h = async->data;
    struct srv_request *r = completions_take(&h->done);
    /* The batch's log lines in one write, before its answers are sent. */
    log_hold();
    while (r != NULL) {
        struct srv_request *next = r->next;
        finish_request((struct http_request *)((char *)r - offsetof(struct http_request, srv)));
        r = next;
    }
    log_release();
    http_check_drained(h);
}

void http_request_cut_off_all(struct http *h)
{
    while (h->suspended != NULL) {
        struct http_request *hr = h->suspended;
        atomic_store(&hr->srv.orphaned, true); /* the workers drop what is left of it */
        srv_request_let_go(&hr->srv);          /* its connection may close once answered */
        http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the server shut down before answering");
        if (is_suspended(hr->state)) /* no answer could be made (out of memory): close */
            http_request_set_state(hr, HTTP_REQUEST_CUT_OFF);
        hr->state = HTTP_REQUEST_CUT_OFF; /* still held by a prepare thread or the workers */
    }
}

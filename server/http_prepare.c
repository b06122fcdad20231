/* The prepare stage: an inference request's body is parsed and tokenized
 * (and, for routes without a forward pass, its answer rendered), then the
 * request is admitted to the batcher or answered.
 *
 * A body of offload_parse_bytes or more is prepared on libuv's thread pool
 * while its connection is suspended: parsing and tokenizing a 2 MB input
 * took the loop 0.2 s, and every other client waited that long. Smaller
 * bodies are prepared in place, where the hand-off would cost more than the
 * work. With offload_parse_bytes = 0 every body leaves the loop; moving all
 * of it off (and rendering too) needs nothing more than that threshold.
 *
 * Threading: prepare_run runs on the loop or on a pool thread; while it
 * runs on a pool thread it alone touches the request's body and job, and
 * the loop touches neither until prepare_after. */
#include "http_internal.h"

#include <stdlib.h>

static bool needs_compute(const struct http_request *hr)
{
    return !hr->prep_failed && proto_job_needs_compute(&hr->srv.job);
}

/* Parse, tokenize, and render when no forward pass is needed. */
static void prepare_run(struct http_request *hr)
{
    const struct http_engine *e = &hr->http->engine;
    uint64_t t0 = srv_now_ns();
    struct proto_request req;
    hr->prep_failed =
        !proto_request_parse(hr->srv.route, hr->body ? hr->body : "", hr->body_len, &e->limits,
                             &req, &hr->prep_err) ||
        !proto_job_prepare(&hr->srv.job, e->model, &e->limits, &e->defaults, &req,
                           &hr->prep_err);
    metrics_stage(METRICS_STAGE_TOKENIZE, http_ms_between(t0, srv_now_ns()) / 1e3);
    if (hr->prep_failed)
        return;
    metrics_input_tokens(hr->mroute, hr->srv.job.n_tokens);
    if (!needs_compute(hr))
        srv_request_render(&hr->srv, e->model, e->answers);
}

static void respond_refused(struct http_request *hr, enum batcher_admit verdict)
{
    if (verdict == BATCHER_TOO_MANY_REQUESTS)
        http_respond_errorf(hr, PROTO_ERR_OVERLOADED,
                            "too many concurrent requests (max_concurrent_requests); retry later");
    else if (verdict == BATCHER_QUEUE_FULL)
        http_respond_errorf(hr, PROTO_ERR_OVERLOADED,
                            "the queue is full (max_queue_tokens); retry later");
    else
        http_respond_errorf(hr, PROTO_ERR_UNAVAILABLE, "the server is shutting down");
}

/* Back on the loop with a prepared request: answer it or admit it. */
static void prepare_finish(struct http_request *hr)
{
    struct http *h = hr->http;
    const struct http_engine *e = &h->engine;
    struct srv_request *r = &hr->srv;
    if (hr->prep_failed) {
        http_respond_error(hr, &hr->prep_err);
    } else if (!needs_compute(hr)) {
        if (atomic_load(&r->failed)) {
            http_respond_errorf(hr, r->error_kind, "%s", r->error);
        } else {
            http_respond(hr, 200, "application/json", r->body, r->body_len, true, NULL);
            r->body = NULL;
        }
    } else if (r->job.n_tokens > e->max_queue_tokens) {
        http_respond_errorf(hr, PROTO_ERR_TOO_LARGE,
                            "the request has %zu tokens, more than max_queue_tokens (%zu)",
                            r->job.n_tokens, e->max_queue_tokens);
    } else {
        /* MHD does not watch a suspended connection: the worker that takes
         * the request peeks at its socket and drops the request if the
         * client left. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(hr->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        r->client_fd = ci ? ci->connect_fd : -1;
        enum batcher_admit verdict = batcher_submit(e->batcher, r);
        if (verdict == BATCHER_ADMITTED) {
            http_request_set_state(hr, HTTP_REQUEST_COMPUTING);
            return;
        }
        respond_refused(hr, verdict);
    }
    if (hr->state == HTTP_REQUEST_BODY) /* no answer could be made (out of memory): close */
        http_request_set_state(hr, HTTP_REQUEST_ABANDONED);
}

static void prepare_work(uv_work_t *work)
{
    prepare_run(work->data);
}

static void prepare_after(uv_work_t *work, int status)
{
    struct http_request *hr = work->data;
    (void)status; /* never cancelled */
    if (hr->state == HTTP_REQUEST_CUT_OFF) { /* answered by the drain's time-out */
        hr->state = HTTP_REQUEST_ANSWERED;
        if (hr->srv.body)
            response_budget_give(hr->http->engine.answers, hr->srv.body_len);
        http_request_maybe_release(hr);
        return;
    }
    /* Resumed, and suspended again at once if it is admitted: libmicrohttpd
     * cancels a resume that has not run yet. */
    http_request_set_state(hr, HTTP_REQUEST_BODY);
    prepare_finish(hr);
    http_loop_run(hr->http);
}

void http_prepare(struct http_request *hr)
{
    struct http *h = hr->http;
    /* Refusals that need no parse come first: under overload they are all
     * most clients get, and they must stay cheap. */
    enum batcher_admit verdict = batcher_check(h->engine.batcher);
    if (verdict != BATCHER_ADMITTED) {
        respond_refused(hr, verdict);
        return;
    }
    if (!response_budget_open(h->engine.answers)) {
        http_respond_errorf(hr, PROTO_ERR_OVERLOADED, RESPONSE_BUDGET_FULL_MESSAGE,
                            h->engine.answers->max_pending);
        return;
    }
    if (hr->body_len < h->settings.offload_parse_bytes) {
        prepare_run(hr);
        prepare_finish(hr);
        return;
    }
    hr->work.data = hr;
    http_request_set_state(hr, HTTP_REQUEST_PREPARING);
    if (uv_queue_work(h->loop, &hr->work, prepare_work, prepare_after) != 0) {
        http_request_set_state(hr, HTTP_REQUEST_BODY);
        prepare_run(hr);
        prepare_finish(hr);
    }
}

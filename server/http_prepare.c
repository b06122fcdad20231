/* The hand-off of an inference request to the prepare stage (prepare.h),
 * which parses and tokenizes its body and admits it, off the loop.
 *
 * What needs no parse is refused here first: under overload a refusal is
 * all most clients get, and it must stay cheap. Every other request is
 * queued; the queue goes to the prepare threads in the loop's check phase,
 * after its reads, so a loop iteration that reads many requests hands them
 * over with one lock and at most one wake-up. */
#include "http_internal.h"

void http_prepare(struct http_request *hr)
{
    struct http *h = hr->http;
    enum batcher_admit verdict = batcher_check(h->engine.batcher);
    if (verdict != BATCHER_ADMITTED) {
        struct proto_error err;
        prepare_refusal(verdict, &err);
        http_respond_error(hr, &err);
        return;
    }
    if (!response_budget_open(h->engine.answers)) {
        http_respond_errorf(hr, PROTO_ERR_OVERLOADED, RESPONSE_BUDGET_FULL_MESSAGE,
                            h->engine.answers->max_pending);
        return;
    }
    struct srv_request *r = &hr->srv;
    /* The loop sees a client leave only while it reads the socket, which
     * it stops while pipelined bytes pile up: the worker that takes the
     * request also peeks at it and drops the request if the client left. */
    uv_os_fd_t fd = -1;
    if (hr->hc == NULL || uv_fileno((uv_handle_t *)&hr->hc->tcp, &fd) != 0)
        fd = -1;
    r->client_fd = fd;
    r->input = hr->body ? hr->body : "";
    r->input_len = hr->body_len;
    r->read_as = r->route; /* until the prepare stage reads another API's body */
    r->next = NULL;
    http_request_set_state(hr, HTTP_REQUEST_OFF_LOOP);
    if (h->to_prepare_tail)
        h->to_prepare_tail->next = r;
    else
        h->to_prepare = r;
    h->to_prepare_tail = r;
    http_conn_defer(h);
}

void http_prepare_flush(struct http *h)
{
    if (h->to_prepare == NULL)
        return;
    prepare_pool_push(h->engine.prepare, h->to_prepare);
    h->to_prepare = h->to_prepare_tail = NULL;
}

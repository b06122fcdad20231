/* The hand-off of an inference request to the prepare stage (prepare.h),
 * which parses and tokenizes its body and admits it, off the loop.
 *
 * What needs no parse is refused here first: under overload a refusal is
 * all most clients get, and it must stay cheap. Every other request is
 * suspended and queued; the queue goes to the prepare threads after each
 * MHD_run, so a loop iteration that reads many requests hands them over
 * with one lock and at most one wake-up. */
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
    /* MHD does not watch a suspended connection: the worker that takes the
     * request peeks at its socket and drops the request if the client left. */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(hr->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->client_fd = ci ? ci->connect_fd : -1;
    r->input = hr->body ? hr->body : "";
    r->input_len = hr->body_len;
    r->next = NULL;
    http_request_set_state(hr, HTTP_REQUEST_OFF_LOOP);
    if (h->to_prepare_tail)
        h->to_prepare_tail->next = r;
    else
        h->to_prepare = r;
    h->to_prepare_tail = r;
}

void http_prepare_flush(struct http *h)
{
    if (h->to_prepare == NULL)
        return;
    prepare_pool_push(h->engine.prepare, h->to_prepare);
    h->to_prepare = h->to_prepare_tail = NULL;
}

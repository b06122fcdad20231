/* The request's functions shared by the loop and the workers: failing it,
 * rendering its answer within the response budget, its clock, and the check
 * whether its client is still there. */
#include "request.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

void srv_request_fail(struct srv_request *req, enum proto_error_kind kind, const char *fmt, ...)
{
    if (atomic_exchange(&req->failed, true))
        return;
    req->error_kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->error, sizeof req->error, fmt, ap);
    va_end(ap);
}

static void fail_budget_full(struct srv_request *req, const struct response_budget *answers)
{
    srv_request_fail(req, PROTO_ERR_OVERLOADED, RESPONSE_BUDGET_FULL_MESSAGE,
                     answers->max_pending);
}

void srv_request_render(struct srv_request *req, const struct bert_model *model,
                        struct response_budget *answers)
{
    if (!response_budget_open(answers)) { /* full already: spare the rendering */
        fail_budget_full(req, answers);
        return;
    }
    req->body = proto_job_respond(&req->job, model, &req->body_len);
    if (req->body == NULL) {
        srv_request_fail(req, PROTO_ERR_INTERNAL,
                         "could not render the response (out of memory or a non-finite result)");
        return;
    }
    enum response_budget_verdict verdict = response_budget_take(answers, req->body_len);
    if (verdict == RESPONSE_BUDGET_OK)
        return;
    size_t bytes = req->body_len;
    free(req->body);
    req->body = NULL;
    req->body_len = 0;
    if (verdict == RESPONSE_BUDGET_TOO_LARGE)
        srv_request_fail(req, PROTO_ERR_TOO_LARGE,
                         "the response would be %zu bytes, more than max_response_bytes (%zu): "
                         "ask for fewer inputs, fewer masks or a smaller top_k",
                         bytes, answers->max_response);
    else
        fail_budget_full(req, answers);
}

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool srv_request_init(struct srv_request *req)
{
    req->client_fd = -1;
    return pthread_mutex_init(&req->client_lock, NULL) == 0;
}

void srv_request_destroy(struct srv_request *req)
{
    pthread_mutex_destroy(&req->client_lock);
}

bool srv_request_client_left(struct srv_request *req)
{
    pthread_mutex_lock(&req->client_lock);
    bool left = req->client_fd >= 0 && srv_client_left(req->client_fd);
    pthread_mutex_unlock(&req->client_lock);
    return left;
}

void srv_request_let_go(struct srv_request *req)
{
    pthread_mutex_lock(&req->client_lock);
    req->client_fd = -1;
    pthread_mutex_unlock(&req->client_lock);
}

uint64_t srv_now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

uint64_t srv_thread_cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

bool srv_client_left(int fd)
{
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* One inference request, shared by the loop thread (which owns it and its
 * connection), the prepare stage (which parses, tokenizes and admits it)
 * and the workers (which compute its sequences).
 *
 * Ownership: the loop allocates and frees it (it is embedded in the HTTP
 * layer's per-request state) and hands it to the prepare stage
 * (prepare.h). From then on one other thread at a time holds it: a prepare
 * thread, until it pushes the request onto the completion queue or the
 * batcher admits it; then the workers, while some of its sequences are
 * queued or computing. The worker that finishes (or drops) the last one
 * renders the response and pushes the request onto its loop's completion
 * queue (`done`), after which no other thread touches it again. */
#ifndef SRV_REQUEST_H
#define SRV_REQUEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "response_budget.h"

struct completions;

struct srv_request {
    struct proto_job job;
    enum proto_route route;            /* the path's; the loop's to read */
    enum proto_route read_as;          /* the route the prepare stage read the body as
                                          (another API's shape on the path): the loop
                                          takes it into `route` once the request is back */
    /* The client's socket (-1: unknown or let go), peeked by the worker
     * that takes the request. The loop lets go of it (srv_request_let_go)
     * before its connection may close; the lock orders a worker's peek
     * before that close, so no peek ever reads a closed or reused fd. */
    pthread_mutex_t client_lock;
    int client_fd;
    size_t n_seqs, n_tokens, n_truncated; /* the job's, kept when it is freed: what the
                                          loop logs and reports */
    const char *input;                 /* the body, NUL-terminated: read by the */
    size_t input_len;                  /* prepare stage, owned by the loop */
    bool refused;                      /* the prepare stage answers `refusal` instead (a */
    struct proto_error refusal;        /* bad body, a limit, not admitted) */

    /* Shared with workers. */
    atomic_bool orphaned;              /* the client went away: drop, do not compute */
    atomic_size_t remaining;           /* sequences not yet computed or dropped */
    atomic_bool failed;                /* a forward pass of this request failed */
    atomic_uint_fast64_t t_compute_start; /* ns, first forward pass that included it */
    uint64_t t_compute_end;            /* ns, written by the finishing worker */
    enum proto_error_kind error_kind;  /* how to answer `error`; both written by the first */
    char error[600];                   /* thread that sets failed (srv_request_fail) */
    char *body;                        /* response rendered by the finishing worker; its */
    size_t body_len;                   /* bytes are reserved in the response budget */
    struct completions *done;          /* the completion queue of the loop that owns its
                                          connection: where it goes back */
    struct srv_request *next;          /* the prepare queue's link, then the completion
                                          queue's */
};

/* Set up and tear down a request's own state (its client lock; the
 * socket unknown). The loop thread. */
bool srv_request_init(struct srv_request *req);
void srv_request_destroy(struct srv_request *req);

/* Whether the request's client hung up (srv_client_left on its socket);
 * false once the loop has let the socket go. Any thread; never blocks. */
bool srv_request_client_left(struct srv_request *req);

/* The loop gives up the request's socket before its connection may close
 * it: returns after any peek in progress, and later peeks see none. */
void srv_request_let_go(struct srv_request *req);

/* Record why `req` failed, unless an earlier failure was recorded; the
 * loop answers it with `kind`'s status. Any thread. */
void srv_request_fail(struct srv_request *req, enum proto_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Render the answer of a request whose results are all in: req->body on
 * success, its bytes reserved in `answers` (the loop gives them back once
 * the answer is written). An answer that cannot be rendered (out of memory,
 * a non-finite result), is over max_response_bytes, or does not fit the
 * budget of pending answers is freed and the request failed instead. Run by
 * the one thread that finishes the request. */
void srv_request_render(struct srv_request *req, const struct bert_model *model,
                        struct response_budget *answers);

/* Monotonic clock in nanoseconds. */
uint64_t srv_now_ns(void);

/* CPU time the calling thread has used, in nanoseconds. */
uint64_t srv_thread_cpu_ns(void);

/* Whether the client of socket `fd` has gone: it closed its end (a peek
 * reads 0 bytes) or reset it. Pipelined bytes waiting to be read are not a
 * hang-up. Never blocks. */
bool srv_client_left(int fd);

#endif

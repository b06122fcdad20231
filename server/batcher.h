/* The dynamic micro-batcher: the sequences of admitted requests, in
 * arrival order. Workers take as many sequences as fit the token and count
 * budgets, optionally waiting up to max_wait_us for more: the oldest
 * request's next sequence, then each request's first 512 tokens (so a
 * small request behind large ones rides the next pass), then the rest
 * oldest first. Under load the
 * token budget of a pass shrinks to a share of the tokens in flight
 * (1/(2 x workers), never under 256), so that no pass
 * takes the whole queue and leaves the other workers idle. Admission is
 * all-or-nothing per request and never blocks.
 *
 * Threading: any thread. batcher_submit runs on the prepare threads,
 * batcher_next and batcher_release on workers, batcher_check and
 * batcher_stats on the loop; all but batcher_check take the internal mutex. */
#ifndef SRV_BATCHER_H
#define SRV_BATCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "request.h"

struct batcher_limits {
    size_t max_batch_tokens;        /* tokens in one forward pass */
    size_t max_batch_sequences;     /* sequences in one forward pass */
    unsigned max_wait_us;           /* wait this long for a fuller batch */
    size_t max_queue_tokens;        /* tokens waiting, all requests together */
    size_t max_concurrent_requests; /* admitted and not yet completed */
    size_t n_workers;               /* threads calling batcher_next */
};

enum batcher_admit {
    BATCHER_ADMITTED,
    BATCHER_TOO_MANY_REQUESTS,  /* 429: max_concurrent_requests */
    BATCHER_QUEUE_FULL,         /* 429: max_queue_tokens */
    BATCHER_CLOSED,             /* 503: draining */
};

/* One sequence of a batch. */
struct batch_item {
    struct srv_request *req;
    size_t seq;
};

struct batcher;

struct batcher *batcher_new(const struct batcher_limits *limits);
/* NULL is a no-op. Call after every worker has returned from batcher_next. */
void batcher_free(struct batcher *b);

/* Queue every sequence of `req` (sets req->remaining) or none. */
enum batcher_admit batcher_submit(struct batcher *b, struct srv_request *req);

/* What batcher_submit would answer the smallest request now: the loop
 * refuses before parsing a body whose request could not be queued anyway,
 * so a flood of requests over the limits costs little. Takes no lock: the
 * verdict as of the batcher's last change. */
enum batcher_admit batcher_check(struct batcher *b);

/* Block until there is work, then move up to max_batch_sequences sequences
 * that fit max_batch_tokens into `items`, in the order above. Sequences of
 * orphaned requests met on the way go to `dropped` (same capacity) instead:
 * the caller finishes them without computing. *n_left: sequences still
 * queued after the take. Returns false once the batcher is closed and empty. */
bool batcher_next(struct batcher *b, struct batch_item *items, size_t *n_items,
                  struct batch_item *dropped, size_t *n_dropped, size_t *n_left);

/* An admitted request has completed (response rendered or dropped): frees
 * its slot in max_concurrent_requests. */
void batcher_release(struct batcher *b, const struct srv_request *req);

/* Stop admitting; workers finish what is queued, then batcher_next returns 0. */
void batcher_close(struct batcher *b);

struct batcher_stats {
    size_t queued_sequences;
    size_t queued_tokens;
    size_t in_flight;
};
struct batcher_stats batcher_stats(struct batcher *b);

#endif

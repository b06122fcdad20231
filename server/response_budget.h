/* Bytes of rendered answers not yet written to their clients. A client that
 * reads slowly, or never, keeps its answer in memory until request_timeout_ms;
 * a /fill-mask answer can be thousands of times its request. So one answer
 * may not exceed max_response_bytes, and all answers waiting together not
 * max_pending_response_bytes: past the second, new inference requests are
 * refused before any work, and an answer that would go over it is dropped.
 *
 * The renderer (a worker, or the loop for routes without a forward pass)
 * reserves an answer's bytes once it knows them; the loop gives them back
 * when the loop frees the answer (written, or its connection closed).
 *
 * Threading: any thread; lock-free. */
#ifndef SRV_RESPONSE_BUDGET_H
#define SRV_RESPONSE_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct response_budget {
    size_t max_response; /* bytes of one answer */
    size_t max_pending;  /* bytes of every answer not yet written, together */
    atomic_size_t pending;
};

enum response_budget_verdict {
    RESPONSE_BUDGET_OK,        /* reserved */
    RESPONSE_BUDGET_TOO_LARGE, /* one answer over max_response: 413 */
    RESPONSE_BUDGET_FULL,      /* would go over max_pending: 429, retry later */
};

/* The refusal when the budget is full, with max_pending as its %zu. */
#define RESPONSE_BUDGET_FULL_MESSAGE                                                   \
    "too many response bytes are waiting for clients to read them "                    \
    "(max_pending_response_bytes %zu); retry later"

void response_budget_init(struct response_budget *b, size_t max_response, size_t max_pending);

/* Whether new work may start: the answers waiting are within max_pending. */
bool response_budget_open(const struct response_budget *b);

/* Reserve `bytes` for one answer; nothing is reserved unless the verdict is
 * RESPONSE_BUDGET_OK. */
enum response_budget_verdict response_budget_take(struct response_budget *b, size_t bytes);

/* An answer reserved with response_budget_take has been freed. */
void response_budget_give(struct response_budget *b, size_t bytes);

size_t response_budget_pending(const struct response_budget *b);

#endif

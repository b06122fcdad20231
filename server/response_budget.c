#include "response_budget.h"

void response_budget_init(struct response_budget *b, size_t max_response, size_t max_pending)
{
    b->max_response = max_response;
    b->max_pending = max_pending;
    atomic_init(&b->pending, 0);
}

bool response_budget_open(const struct response_budget *b)
{
    return atomic_load(&b->pending) < b->max_pending;
}

enum response_budget_verdict response_budget_take(struct response_budget *b, size_t bytes)
{
    if (bytes > b->max_response)
        return RESPONSE_BUDGET_TOO_LARGE;
    size_t pending = atomic_load(&b->pending);
    do {
        if (bytes > b->max_pending - (pending < b->max_pending ? pending : b->max_pending))
            return RESPONSE_BUDGET_FULL;
    } while (!atomic_compare_exchange_weak(&b->pending, &pending, pending + bytes));
    return RESPONSE_BUDGET_OK;
}

void response_budget_give(struct response_budget *b, size_t bytes)
{
    atomic_fetch_sub(&b->pending, bytes);
}

size_t response_budget_pending(const struct response_budget *b)
{
    return atomic_load(&b->pending);
}

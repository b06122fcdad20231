#include "batcher.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct batcher {
    struct batcher_limits limits;
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct batch_item *ring; /* FIFO of queued sequences */
    size_t cap, head, count;
    size_t queued_tokens;
    size_t in_flight, in_flight_tokens; /* admitted and not yet released */
    bool closed;
};

/* The smallest pass the share rule below makes: one worker on a pass of
 * 200-400 tokens is as fast per token as on 4096 (BENCHMARKS.md); far
 * below that, per-pass overheads show. */
#define MIN_PASS_TOKENS 256

static size_t item_tokens(const struct batch_item *it)
{
    return it->req->job.seqs[it->seq].enc.n;
}

struct batcher *batcher_new(const struct batcher_limits *limits)
{
    struct batcher *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->limits = *limits;
    /* Every queued sequence holds at least one token, so the token budget
     * bounds the ring. */
    b->cap = limits->max_queue_tokens + 1;
    b->ring = calloc(b->cap, sizeof *b->ring);
    if (b->ring == NULL) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&b->work, &attr);
    pthread_condattr_destroy(&attr);
    return b;
}

void batcher_free(struct batcher *b)
{
    if (b == NULL)
        return;
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->work);
    free(b->ring);
    free(b);
}

/* Whether a request of `tokens` in `seqs` sequences fits now; under the lock. */
static enum batcher_admit admits(const struct batcher *b, size_t tokens, size_t seqs)
{
    if (b->closed)
        return BATCHER_CLOSED;
    if (b->in_flight + 1 > b->limits.max_concurrent_requests)
        return BATCHER_TOO_MANY_REQUESTS;
    if (b->queued_tokens + tokens > b->limits.max_queue_tokens || b->count + seqs >= b->cap)
        return BATCHER_QUEUE_FULL;
    return BATCHER_ADMITTED;
}

enum batcher_admit batcher_check(struct batcher *b)
{
    pthread_mutex_lock(&b->lock);
    enum batcher_admit verdict = admits(b, 1, 1);
    pthread_mutex_unlock(&b->lock);
    return verdict;
}

enum batcher_admit batcher_submit(struct batcher *b, struct srv_request *req)
{
    const struct proto_job *job = &req->job;
    pthread_mutex_lock(&b->lock);
    enum batcher_admit verdict = admits(b, job->n_tokens, job->n_seqs);
    if (verdict == BATCHER_ADMITTED) {
        atomic_store(&req->remaining, job->n_seqs);
        for (size_t i = 0; i < job->n_seqs; i++)
            b->ring[(b->head + b->count++) % b->cap] = (struct batch_item){req, i};
        b->queued_tokens += job->n_tokens;
        b->in_flight++;
        b->in_flight_tokens += job->n_tokens;
        pthread_cond_signal(&b->work);
    }
    pthread_mutex_unlock(&b->lock);
    return verdict;
}

/* Tokens one pass may take: under load, a share of the work in flight
 * rather than all that is queued. With twice as many passes in
 * circulation as workers, the queue still holds work when a worker
 * frees up while the HTTP thread answers the last pass's clients and
 * reads their next requests; one pass taking everything queued leaves
 * the other workers idle until its clients come back, all at once. */
static size_t pass_budget(const struct batcher *b)
{
    size_t share = b->in_flight_tokens / (2 * b->limits.n_workers);
    if (share < MIN_PASS_TOKENS)
        share = MIN_PASS_TOKENS;
    return share < b->limits.max_batch_tokens ? share : b->limits.max_batch_tokens;
}

/* Whether a worker waiting up to max_wait_us has a full pass to take. */
static bool batch_full(const struct batcher *b)
{
    return b->queued_tokens >= pass_budget(b) ||
           b->count >= b->limits.max_batch_sequences;
}

bool batcher_next(struct batcher *b, struct batch_item *items, size_t *n_items,
                  struct batch_item *dropped, size_t *n_dropped, size_t *n_left)
{
    *n_items = *n_dropped = *n_left = 0;
    pthread_mutex_lock(&b->lock);
    while (b->count == 0 && !b->closed)
        pthread_cond_wait(&b->work, &b->lock);
    if (b->count == 0) {
        pthread_mutex_unlock(&b->lock);
        return false;
    }
    if (b->limits.max_wait_us > 0 && !batch_full(b) && !b->closed) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += (long)b->limits.max_wait_us * 1000;
        deadline.tv_sec += deadline.tv_nsec / 1000000000;
        deadline.tv_nsec %= 1000000000;
        while (!batch_full(b) && !b->closed &&
               pthread_cond_timedwait(&b->work, &b->lock, &deadline) != ETIMEDOUT) {
        }
    }
    const size_t budget = pass_budget(b);
    size_t tokens = 0;
    while (b->count > 0 && *n_items < b->limits.max_batch_sequences &&
           *n_dropped < b->limits.max_batch_sequences) {
        struct batch_item *it = &b->ring[b->head];
        size_t n = item_tokens(it);
        bool orphaned = atomic_load(&it->req->orphaned);
        if (!orphaned && (tokens + n > b->limits.max_batch_tokens ||
                          (tokens > 0 && tokens + n > budget)))
            break;
        if (orphaned) {
            dropped[(*n_dropped)++] = *it;
        } else {
            items[(*n_items)++] = *it;
            tokens += n;
        }
        b->queued_tokens -= n;
        b->head = (b->head + 1) % b->cap;
        b->count--;
    }
    /* More work than this worker took: let another one start on it. */
    if (b->count > 0)
        pthread_cond_signal(&b->work);
    *n_left = b->count;
    pthread_mutex_unlock(&b->lock);
    return true;
}

void batcher_release(struct batcher *b, const struct srv_request *req)
{
    pthread_mutex_lock(&b->lock);
    b->in_flight--;
    b->in_flight_tokens -= req->job.n_tokens;
    pthread_mutex_unlock(&b->lock);
}

void batcher_close(struct batcher *b)
{
    pthread_mutex_lock(&b->lock);
    b->closed = true;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
}

struct batcher_stats batcher_stats(struct batcher *b)
{
    pthread_mutex_lock(&b->lock);
    struct batcher_stats s = {b->count, b->queued_tokens, b->in_flight};
    pthread_mutex_unlock(&b->lock);
    return s;
}

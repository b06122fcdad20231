#include "batcher.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* An admitted request with sequences still to take, in arrival order. */
struct queued {
    struct srv_request *req;
    size_t next;  /* its next sequence to take */
    size_t taken; /* tokens of its sequences taken so far */
};

struct batcher {
    struct batcher_limits limits;
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct queued *queue; /* (max_concurrent_requests) oldest first */
    size_t n_queued;
    size_t queued_seqs, queued_tokens;
    size_t in_flight, in_flight_tokens; /* admitted and not yet released */
    bool closed;
    /* admits(b, 1) after the last change, for batcher_check without the
     * lock: the loop thread met the workers on it for every request. */
    atomic_int smallest_verdict;
};

/* The smallest pass the share rule below makes: one worker on a pass of
 * 200-400 tokens is as fast per token as on 4096 (BENCHMARKS.md); far
 * below that, per-pass overheads show. */
#define MIN_PASS_TOKENS 256

/* A request's first tokens go ahead of older requests' later sequences:
 * a one-line /embed behind four admitted requests of 16k tokens each waited
 * for all of them (seconds); now it rides the next pass. Big requests still
 * finish in arrival order, and the oldest always advances. */
#define HEAD_START_TOKENS 512

static size_t seq_tokens(const struct queued *q)
{
    return q->req->job.seqs[q->next].enc.n;
}

/* Whether a request of `tokens` tokens fits now; under the lock. */
static enum batcher_admit admits(const struct batcher *b, size_t tokens)
{
    if (b->closed)
        return BATCHER_CLOSED;
    if (b->in_flight + 1 > b->limits.max_concurrent_requests)
        return BATCHER_TOO_MANY_REQUESTS;
    if (b->queued_tokens + tokens > b->limits.max_queue_tokens)
        return BATCHER_QUEUE_FULL;
    return BATCHER_ADMITTED;
}

/* Under the lock, after every change to what admits reads. */
static void publish(struct batcher *b)
{
    atomic_store_explicit(&b->smallest_verdict, (int)admits(b, 1), memory_order_relaxed);
}

struct batcher *batcher_new(const struct batcher_limits *limits)
{
    struct batcher *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->limits = *limits;
    /* Only admitted requests queue, so max_concurrent_requests bounds it. */
    b->queue = calloc(limits->max_concurrent_requests ? limits->max_concurrent_requests : 1,
                      sizeof *b->queue);
    if (b->queue == NULL) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&b->work, &attr);
    pthread_condattr_destroy(&attr);
    publish(b);
    return b;
}

void batcher_free(struct batcher *b)
{
    if (b == NULL)
        return;
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->work);
    free(b->queue);
    free(b);
}

enum batcher_admit batcher_check(struct batcher *b)
{
    return (enum batcher_admit)atomic_load_explicit(&b->smallest_verdict, memory_order_relaxed);
}

enum batcher_admit batcher_submit(struct batcher *b, struct srv_request *req)
{
    const struct proto_job *job = &req->job;
    pthread_mutex_lock(&b->lock);
    enum batcher_admit verdict = admits(b, job->n_tokens);
    if (verdict == BATCHER_ADMITTED) {
        atomic_store(&req->remaining, job->n_seqs);
        b->queue[b->n_queued++] = (struct queued){req, 0, 0};
        b->queued_seqs += job->n_seqs;
        b->queued_tokens += job->n_tokens;
        b->in_flight++;
        b->in_flight_tokens += job->n_tokens;
        publish(b);
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
           b->queued_seqs >= b->limits.max_batch_sequences;
}

/* A pass being filled: items and their tokens, against its budgets. */
struct pass {
    struct batch_item *items;
    size_t n, tokens, budget, max_items, max_tokens;
};

/* Whether the next sequence of `q` fits the pass; a pass's first sequence
 * always does (proto bounds every sequence by max_batch_tokens). */
static bool fits(const struct pass *p, const struct queued *q)
{
    const size_t n = seq_tokens(q);
    return p->n < p->max_items &&
           (p->n == 0 || (p->tokens + n <= p->max_tokens && p->tokens + n <= p->budget));
}

static void take_seq(struct batcher *b, struct pass *p, struct queued *q)
{
    const size_t n = seq_tokens(q);
    p->items[p->n++] = (struct batch_item){q->req, q->next};
    p->tokens += n;
    q->next++;
    q->taken += n;
    b->queued_seqs--;
    b->queued_tokens -= n;
}

static bool exhausted(const struct queued *q)
{
    return q->next == q->req->job.n_seqs;
}

/* Orphaned requests' sequences go to `dropped`, as many as it holds. */
static void drop_orphans(struct batcher *b, struct batch_item *dropped, size_t *n_dropped)
{
    for (size_t i = 0; i < b->n_queued; i++) {
        struct queued *q = &b->queue[i];
        if (!atomic_load(&q->req->orphaned))
            continue;
        while (!exhausted(q) && *n_dropped < b->limits.max_batch_sequences) {
            dropped[(*n_dropped)++] = (struct batch_item){q->req, q->next};
            b->queued_seqs--;
            b->queued_tokens -= seq_tokens(q);
            q->next++;
        }
    }
}

/* The pass: the oldest request's next sequence (it always advances), then
 * every request's first HEAD_START_TOKENS in arrival order, then the
 * rest oldest first, stopping at the first sequence that does not fit. */
static void fill_pass(struct batcher *b, struct pass *p)
{
    for (size_t i = 0; i < b->n_queued; i++) {
        if (!exhausted(&b->queue[i])) {
            if (fits(p, &b->queue[i]))
                take_seq(b, p, &b->queue[i]);
            break;
        }
    }
    for (size_t i = 0; i < b->n_queued; i++) {
        struct queued *q = &b->queue[i];
        while (!exhausted(q) && q->taken < HEAD_START_TOKENS && fits(p, q))
            take_seq(b, p, q);
    }
    for (size_t i = 0; i < b->n_queued; i++) {
        struct queued *q = &b->queue[i];
        while (!exhausted(q)) {
            if (!fits(p, q))
                return;
            take_seq(b, p, q);
        }
    }
}

/* Forget the requests whose sequences were all taken, keeping the order. */
static void compact(struct batcher *b)
{
    size_t kept = 0;
    for (size_t i = 0; i < b->n_queued; i++)
        if (!exhausted(&b->queue[i]))
            b->queue[kept++] = b->queue[i];
    b->n_queued = kept;
}

bool batcher_next(struct batcher *b, struct batch_item *items, size_t *n_items,
                  struct batch_item *dropped, size_t *n_dropped, size_t *n_left)
{
    *n_items = *n_dropped = *n_left = 0;
    pthread_mutex_lock(&b->lock);
    while (b->queued_seqs == 0 && !b->closed)
        pthread_cond_wait(&b->work, &b->lock);
    if (b->queued_seqs == 0) {
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
    drop_orphans(b, dropped, n_dropped);
    struct pass p = {.items = items, .budget = pass_budget(b),
                     .max_items = b->limits.max_batch_sequences,
                     .max_tokens = b->limits.max_batch_tokens};
    fill_pass(b, &p);
    compact(b);
    *n_items = p.n;
    /* More work than this worker took: let another one start on it. */
    if (b->queued_seqs > 0)
        pthread_cond_signal(&b->work);
    *n_left = b->queued_seqs;
    publish(b);
    pthread_mutex_unlock(&b->lock);
    return true;
}

void batcher_release(struct batcher *b, const struct srv_request *req)
{
    pthread_mutex_lock(&b->lock);
    b->in_flight--;
    b->in_flight_tokens -= req->job.n_tokens;
    publish(b);
    pthread_mutex_unlock(&b->lock);
}

void batcher_close(struct batcher *b)
{
    pthread_mutex_lock(&b->lock);
    b->closed = true;
    publish(b);
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
}

struct batcher_stats batcher_stats(struct batcher *b)
{
    pthread_mutex_lock(&b->lock);
    struct batcher_stats s = {b->queued_seqs, b->queued_tokens, b->in_flight};
    pthread_mutex_unlock(&b->lock);
    return s;
}

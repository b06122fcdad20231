#include "prepare.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "metrics.h"

/* A thread that runs out of work watches the queue this long before it
 * sleeps: under a steady stream the next batch comes within it, and the
 * loop then hands it over with no wake-up (a futex call that cost the loop
 * more than the parse it saved on a loaded VM). */
#define SPIN_NS 50000

/* A FIFO of requests linked through `next`. */
struct fifo {
    struct srv_request *head, *tail;
};

struct prepare_pool {
    struct prepare_engine engine;
    size_t large_bytes;
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct fifo small, large;
    atomic_size_t queued; /* in both lanes: read without the lock by threads watching */
    size_t sleeping;      /* threads waiting on `work` */
    size_t busy_large;    /* threads preparing a large body */
    bool stopping;
    size_t n_threads, n_started;
    pthread_t *threads;
};

static void fifo_push(struct fifo *f, struct srv_request *r)
{
    r->next = NULL;
    if (f->tail)
        f->tail->next = r;
    else
        f->head = r;
    f->tail = r;
}

static struct srv_request *fifo_pop(struct fifo *f)
{
    struct srv_request *r = f->head;
    if (r != NULL) {
        f->head = r->next;
        if (f->head == NULL)
            f->tail = NULL;
        r->next = NULL;
    }
    return r;
}

void prepare_refusal(enum batcher_admit verdict, struct proto_error *err)
{
    if (verdict == BATCHER_TOO_MANY_REQUESTS)
        proto_error_set(err, PROTO_ERR_OVERLOADED,
                        "too many concurrent requests (max_concurrent_requests); retry later");
    else if (verdict == BATCHER_QUEUE_FULL)
        proto_error_set(err, PROTO_ERR_OVERLOADED,
                        "the queue is full (max_queue_tokens); retry later");
    else
        proto_error_set(err, PROTO_ERR_UNAVAILABLE, "the server is shutting down");
}

/* Parse, tokenize, then render (no forward pass needed) or admit. Anything
 * not admitted goes to the completion queue. */
static void prepare_one(struct prepare_pool *p, struct srv_request *r)
{
    const struct prepare_engine *e = &p->engine;
    uint64_t t0 = srv_now_ns();
    struct proto_request req;
    bool parsed = proto_request_parse(r->route, r->input, r->input_len, &e->limits, &req,
                                      &r->refusal);
    /* Another API's body on this path is answered, refused and counted as
     * the route it was read as (vLLM's /classify on /classify). The loop
     * may still read `route` (a drain's cut-off answer), so it takes this
     * when the request comes back. */
    r->read_as = req.route;
    r->refused = !parsed || !proto_job_prepare(&r->job, e->model, &e->limits, &e->defaults,
                                               &req, &r->refusal);
    metrics_stage(METRICS_STAGE_TOKENIZE, (double)(srv_now_ns() - t0) / 1e9);
    if (!r->refused) {
        metrics_input_tokens(metrics_route_of(r->read_as), r->job.n_tokens);
        if (!proto_job_needs_compute(&r->job)) {
            srv_request_render(r, e->model, e->answers);
        } else if (r->job.n_tokens > e->max_queue_tokens) {
            r->refused = true;
            proto_error_set(&r->refusal, PROTO_ERR_TOO_LARGE,
                            "the request has %zu tokens, more than max_queue_tokens (%zu)",
                            r->job.n_tokens, e->max_queue_tokens);
        } else {
            enum batcher_admit verdict = batcher_submit(e->batcher, r);
            if (verdict == BATCHER_ADMITTED)
                return; /* the workers complete it */
            r->refused = true;
            prepare_refusal(verdict, &r->refusal);
        }
    }
    completions_push(r->done, r);
}

/* The next request this thread may take, under the lock: short bodies
 * first; a large one only while another thread stays free for short ones. */
static struct srv_request *take(struct prepare_pool *p, bool *large)
{
    struct srv_request *r = fifo_pop(&p->small);
    *large = false;
    if (r == NULL && p->large.head != NULL &&
        (p->busy_large + 1 < p->n_threads || p->n_threads == 1)) {
        r = fifo_pop(&p->large);
        *large = true;
        p->busy_large++;
    }
    if (r != NULL)
        atomic_fetch_sub_explicit(&p->queued, 1, memory_order_relaxed);
    return r;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Out of work: watch the queue for SPIN_NS before sleeping. */
static void watch_queue(struct prepare_pool *p)
{
    uint64_t deadline = srv_now_ns() + SPIN_NS;
    while (atomic_load_explicit(&p->queued, memory_order_relaxed) == 0 &&
           srv_now_ns() < deadline) {
        for (int i = 0; i < 64; i++)
            cpu_relax();
    }
}

/* Block until there is a request this thread may take; NULL when stopping. */
static struct srv_request *next_request(struct prepare_pool *p, bool *large)
{
    bool watched = false;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->stopping) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        struct srv_request *r = take(p, large);
        if (r != NULL) {
            /* More than this thread can take: pass the wake-up on. */
            bool more = p->small.head != NULL || p->large.head != NULL;
            bool wake = more && p->sleeping > 0;
            pthread_mutex_unlock(&p->lock);
            if (wake)
                pthread_cond_signal(&p->work);
            return r;
        }
        if (!watched) {
            watched = true;
            pthread_mutex_unlock(&p->lock);
            watch_queue(p);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        p->sleeping++;
        pthread_cond_wait(&p->work, &p->lock);
        p->sleeping--;
        watched = false;
    }
}

static void *prepare_main(void *arg)
{
    struct prepare_pool *p = arg;
    bool large;
    struct srv_request *r;
    while ((r = next_request(p, &large)) != NULL) {
        prepare_one(p, r);
        if (large) {
            pthread_mutex_lock(&p->lock);
            p->busy_large--;
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

void prepare_pool_push(struct prepare_pool *p, struct srv_request *list)
{
    size_t n = 0;
    pthread_mutex_lock(&p->lock);
    while (list != NULL) {
        struct srv_request *next = list->next;
        bool large = p->large_bytes > 0 && list->input_len >= p->large_bytes;
        fifo_push(large ? &p->large : &p->small, list);
        list = next;
        n++;
    }
    atomic_fetch_add_explicit(&p->queued, n, memory_order_relaxed);
    bool wake = p->sleeping > 0;
    pthread_mutex_unlock(&p->lock);
    if (wake)
        pthread_cond_signal(&p->work);
}

double prepare_pool_cpu_seconds(const struct prepare_pool *p)
{
    double total = 0.0;
    for (size_t i = 0; i < p->n_started; i++) {
        clockid_t clock;
        struct timespec ts;
        if (pthread_getcpuclockid(p->threads[i], &clock) == 0 && clock_gettime(clock, &ts) == 0)
            total += (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    return total;
}

struct prepare_pool *prepare_pool_start(const struct prepare_engine *engine,
                                        size_t threads,
                                        size_t large_bytes, char *err, size_t err_len)
{
    struct prepare_pool *p = calloc(1, sizeof *p);
    if (p == NULL || (p->threads = calloc(threads ? threads : 1, sizeof *p->threads)) == NULL) {
        free(p);
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    p->engine = *engine;
    p->large_bytes = large_bytes;
    p->n_threads = threads ? threads : 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    for (size_t i = 0; i < p->n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, prepare_main, p) != 0) {
            snprintf(err, err_len, "cannot start prepare thread %zu", i);
            prepare_pool_stop(p);
            return NULL;
        }
        pthread_setname_np(p->threads[i], "bertserve-prep");
        p->n_started++;
    }
    return p;
}

void prepare_pool_stop(struct prepare_pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    struct srv_request *r;
    while ((r = fifo_pop(&p->small)) != NULL || (r = fifo_pop(&p->large)) != NULL) {
        r->refused = true;
        prepare_refusal(BATCHER_CLOSED, &r->refusal);
        completions_push(r->done, r);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    free(p->threads);
    free(p);
}

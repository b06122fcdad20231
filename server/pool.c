#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "log.h"
#include "metrics.h"

void completions_init(struct completions *c)
{
    pthread_mutex_init(&c->lock, NULL);
    c->head = c->tail = NULL;
}

void completions_destroy(struct completions *c)
{
    pthread_mutex_destroy(&c->lock);
}

void completions_push(struct completions *c, struct srv_request *req)
{
    req->n_seqs = req->job.n_seqs;
    req->n_tokens = req->job.n_tokens;
    req->n_truncated = req->job.n_truncated;
    proto_job_free(&req->job);
    req->next = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->tail)
        c->tail->next = req;
    else
        c->head = req;
    c->tail = req;
    pthread_mutex_unlock(&c->lock);
    uv_async_send(&c->async);
}

struct srv_request *completions_take(struct completions *c)
{
    pthread_mutex_lock(&c->lock);
    struct srv_request *list = c->head;
    c->head = c->tail = NULL;
    pthread_mutex_unlock(&c->lock);
    return list;
}

struct worker {
    struct pool *pool;
    pthread_t thread;
    struct bert_scratch *scratch;
    struct batch_item *items, *dropped; /* (max_batch_sequences) each */
    int32_t *ids, *type_ids;            /* (max_batch_tokens) */
    size_t *seq_start;                  /* (max_batch_sequences + 1) */
    struct bert_seq_task *tasks;        /* (max_batch_sequences) */
};

struct pool {
    const struct bert_model *model;
    struct batcher *batcher;
    struct pool_settings settings;
    size_t n_started;
    struct worker *workers;
    atomic_size_t busy; /* workers computing a batch */
};

/* Counts the worker busy and returns how many team members compute its
 * batch (see pool_settings.shared_cpus): all of them only for a batch that
 * is alone, nothing queued behind it and no other worker computing; one
 * otherwise. A wide batch overlapped by one that starts later
 * oversubscribes the CPUs until it ends; under steady load every batch
 * starts narrow, so that is brief. */
static size_t batch_begin(struct pool *p, size_t queued)
{
    const size_t busy = atomic_fetch_add(&p->busy, 1) + 1;
    if (p->settings.shared_cpus == 0 || (busy == 1 && queued == 0))
        return p->settings.threads_per_worker;
    return 1;
}

static void batch_end(struct pool *p)
{
    atomic_fetch_sub(&p->busy, 1);
}

/* Whether the request's client hung up; one recv per call. */
static bool client_gone(struct srv_request *req)
{
    return !atomic_load(&req->orphaned) && srv_request_client_left(req);
}

/* The last sequence of a request renders its response (unless the request
 * failed or its client left), frees its place in the batcher (here, not on
 * the loop, which would meet the workers on the batcher's lock) and hands
 * it to the loop. */
static void finish_sequence(struct worker *w, struct srv_request *req)
{
    if (atomic_fetch_sub(&req->remaining, 1) != 1)
        return;
    req->t_compute_end = srv_now_ns();
    if (client_gone(req))
        atomic_store(&req->orphaned, true); /* left during the forward pass */
    if (!atomic_load(&req->orphaned) && !atomic_load(&req->failed))
        srv_request_render(req, w->pool->model, w->pool->settings.answers);
    batcher_release(w->pool->batcher, req);
    completions_push(req->done, req);
}

static void run_batch(struct worker *w, size_t n, size_t queued)
{
    size_t tokens = 0;
    w->seq_start[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const struct proto_seq *seq = &w->items[i].req->job.seqs[w->items[i].seq];
        memcpy(w->ids + tokens, seq->enc.ids, seq->enc.n * sizeof *w->ids);
        memcpy(w->type_ids + tokens, seq->enc.type_ids, seq->enc.n * sizeof *w->type_ids);
        w->tasks[i] = seq->task;
        tokens += seq->enc.n;
        w->seq_start[i + 1] = tokens;
    }
    uint64_t start = srv_now_ns();
    for (size_t i = 0; i < n; i++) {
        uint_fast64_t unset = 0;
        atomic_compare_exchange_strong(&w->items[i].req->t_compute_start, &unset, start);
    }
    struct bert_batch batch = {.n_seqs = n, .n_tokens = tokens, .ids = w->ids,
                               .type_ids = w->type_ids, .seq_start = w->seq_start};
    struct bert_error err = {0};
    bert_scratch_set_width(w->scratch, batch_begin(w->pool, queued));
    enum bert_status st = bert_run(w->pool->model, w->scratch, &batch, w->tasks, &err);
    batch_end(w->pool);
    if (st != BERT_OK) {
        log_msg(LOG_ERROR, "forward pass of %zu sequences failed: %s", n, err.message);
        for (size_t i = 0; i < n; i++)
            srv_request_fail(w->items[i].req, PROTO_ERR_INTERNAL, "inference failed: %s",
                             err.message);
    }
    metrics_batch(n, tokens);
    for (size_t i = 0; i < n; i++)
        finish_sequence(w, w->items[i].req);
}

/* Finishes, uncomputed, the taken sequences whose client has hung up and
 * returns how many remain in w->items. The loop does not watch the sockets
 * of waiting requests (two epoll_ctl calls per request); one peek per
 * request here, just before the forward pass, is what keeps a departed
 * client's work from being computed. */
static size_t drop_departed(struct worker *w, size_t n)
{
    size_t kept = 0;
    const struct srv_request *checked = NULL;
    for (size_t i = 0; i < n; i++) {
        struct srv_request *req = w->items[i].req;
        if (req != checked) {
            checked = req;
            if (client_gone(req))
                atomic_store(&req->orphaned, true);
        }
        if (atomic_load(&req->orphaned))
            finish_sequence(w, req); /* the last one hands req back: not touched again */
        else
            w->items[kept++] = w->items[i];
    }
    return kept;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    size_t n, n_dropped, queued;
    while (batcher_next(w->pool->batcher, w->items, &n, w->dropped, &n_dropped, &queued)) {
        for (size_t i = 0; i < n_dropped; i++)
            finish_sequence(w, w->dropped[i].req);
        n = drop_departed(w, n);
        if (n > 0)
            run_batch(w, n, queued);
    }
    return NULL;
}

static void worker_free(struct worker *w)
{
    bert_scratch_free(w->scratch);
    free(w->items);
    free(w->dropped);
    free(w->ids);
    free(w->type_ids);
    free(w->seq_start);
    free(w->tasks);
}

/* One forward pass pages the weights in and touches the scratch, so the
 * first real request does not pay for it. At most WARM_UP_TOKENS: every
 * weight is read whatever the length, and a full-length pass of a long-
 * context model (8,192 tokens) per worker would delay readiness by as much
 * as a long request takes. */
#define WARM_UP_TOKENS 512

static enum bert_status warm_up(const struct bert_model *model, struct worker *w,
                                struct bert_error *err)
{
    const struct bert_config *c = &model->config;
    size_t n = w->pool->settings.max_seq_len;
    if (n > WARM_UP_TOKENS)
        n = WARM_UP_TOKENS;
    for (size_t t = 0; t < n; t++) {
        w->ids[t] = (int32_t)(t % c->vocab_size);
        w->type_ids[t] = 0;
    }
    w->seq_start[0] = 0;
    w->seq_start[1] = n;
    float *out = malloc(model->embed_dims * sizeof *out);
    if (out == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    w->tasks[0] = (struct bert_seq_task){.task = BERT_TASK_EMBED, .pooling = BERT_POOLING_CLS,
                                         .embedding = out};
    struct bert_batch batch = {.n_seqs = 1, .n_tokens = n, .ids = w->ids,
                               .type_ids = w->type_ids, .seq_start = w->seq_start};
    enum bert_status st = bert_run(model, w->scratch, &batch, w->tasks, err);
    free(out);
    return st;
}

struct pool *pool_start(const struct bert_model *model, struct batcher *batcher,
                        const struct pool_settings *s,
                        struct bert_error *err)
{
    struct pool *p = calloc(1, sizeof *p);
    if (p == NULL || (p->workers = calloc(s->threads, sizeof *p->workers)) == NULL) {
        free(p);
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return NULL;
    }
    p->model = model;
    p->batcher = batcher;
    p->settings = *s;
    for (size_t i = 0; i < s->threads; i++) {
        struct worker *w = &p->workers[i];
        w->pool = p;
        w->scratch = bert_scratch_new(model, s->max_batch_tokens, s->max_seq_len,
                                      s->threads_per_worker, err);
        if (w->scratch == NULL)
            goto fail;
        w->items = calloc(s->max_batch_sequences, sizeof *w->items);
        w->dropped = calloc(s->max_batch_sequences, sizeof *w->dropped);
        w->ids = calloc(s->max_batch_tokens, sizeof *w->ids);
        w->type_ids = calloc(s->max_batch_tokens, sizeof *w->type_ids);
        w->seq_start = calloc(s->max_batch_sequences + 1, sizeof *w->seq_start);
        w->tasks = calloc(s->max_batch_sequences, sizeof *w->tasks);
        if (!w->items || !w->dropped || !w->ids || !w->type_ids || !w->seq_start || !w->tasks) {
            bert_error_set(err, BERT_E_NOMEM, "out of memory allocating worker buffers");
            goto fail;
        }
        if (warm_up(model, w, err) != BERT_OK)
            goto fail;
    }
    for (size_t i = 0; i < s->threads; i++) {
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            bert_error_set(err, BERT_E_NOMEM, "cannot start worker thread %zu", i);
            batcher_close(batcher);
            goto fail;
        }
        p->n_started++;
    }
    return p;
fail:
    pool_join(p);
    return NULL;
}

void pool_join(struct pool *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n_started; i++)
        pthread_join(p->workers[i].thread, NULL);
    for (size_t i = 0; i < p->settings.threads; i++)
        worker_free(&p->workers[i]);
    free(p->workers);
    free(p);
}

size_t pool_scratch_bytes(const struct pool *p)
{
    size_t total = 0;
    for (size_t i = 0; i < p->settings.threads; i++)
        total += bert_scratch_bytes(p->workers[i].scratch);
    return total;
}

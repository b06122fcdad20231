/* The worker pool: a fixed set of threads, each with its own scratch sized
 * once for max_batch_tokens, taking batches from the batcher and running
 * them on the shared read-only model. Finished requests go to the completion
 * queue of the loop that owns each (srv_request.done), which wakes that loop
 * through uv_async (sends coalesce, so the loop drains the whole queue each
 * time). */
#ifndef SRV_POOL_H
#define SRV_POOL_H

#include <pthread.h>
#include <stddef.h>

#include <uv.h>

#include "batcher.h"
#include "bert.h"

/* Completed requests, pushed by workers and prepare threads, taken by the
 * loop that owns them: one queue per loop thread. */
struct completions {
    pthread_mutex_t lock;
    struct srv_request *head, *tail;
    uv_async_t async; /* initialised by the loop's owner with its callback */
};

void completions_init(struct completions *c);
void completions_destroy(struct completions *c);
/* Any thread done with `req` (the last thing it does with it): frees its
 * job, keeping the counts the loop logs (the loop thread freed ~40 small
 * blocks per request), and queues it for the loop. */
void completions_push(struct completions *c, struct srv_request *req);
/* Loop thread: take the whole queue (a list through next). */
struct srv_request *completions_take(struct completions *c);

struct pool_settings {
    size_t threads;             /* workers */
    size_t threads_per_worker;  /* each worker's compute team */
    /* 0: every pass uses the whole team. Otherwise the CPUs the workers
     * share (one worker per CPU, each team as wide as all of them): a batch
     * with nothing queued behind it and no other worker busy uses the whole
     * team, any other batch one thread, so a lone request gets every CPU and
     * a busy server runs one batch per CPU with no barrier between threads. */
    size_t shared_cpus;
    size_t max_batch_tokens;
    size_t max_batch_sequences;
    size_t max_seq_len;
    struct response_budget *answers; /* rendered answers are reserved here */
};

struct pool;

/* Allocate every worker's scratch, warm each up with one forward pass and
 * start the threads. Errors (e.g. scratch allocation) are returned in err. */
struct pool *pool_start(const struct bert_model *model, struct batcher *batcher,
                        const struct pool_settings *s,
                        struct bert_error *err);

/* Join the workers (the batcher must be closed first) and free. NULL ok. */
void pool_join(struct pool *p);

/* Bytes of scratch memory all workers hold. */
size_t pool_scratch_bytes(const struct pool *p);

#endif

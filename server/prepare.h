/* The prepare stage, off the loop thread: a few threads parse and tokenize
 * the bodies of inference requests, render the answers that need no
 * forward pass (/tokenize), and admit the rest to the batcher themselves,
 * so that the event loop, the server's one serial stage (one thread capped
 * a 16-core server near 24k requests/s), only moves bytes: parsing and
 * tokenizing a short /embed took it ~10 us (BENCHMARKS.md).
 *
 * The loop hands requests over in batches, one per loop iteration: one
 * lock, and a wake-up only when every prepare thread sleeps. A request the
 * batcher admits goes on to the workers; any other (a bad body, a refusal,
 * an answer rendered here) goes straight to its loop's completion queue.
 * Either way the loop sees it again only to answer it.
 *
 * Bodies of at least `large_bytes` form a lane of their own: at most
 * threads - 1 of them are prepared at once, so short requests never wait
 * behind a 2 MB body (parsing and tokenizing one took 0.2 s).
 *
 * Threading: start and stop are called by the first loop thread, push and
 * cpu_seconds by any loop thread (push takes the pool's lock); a pushed
 * request belongs to the pool until it reaches the batcher or the
 * completion queue. */
#ifndef SRV_PREPARE_H
#define SRV_PREPARE_H

#include <stddef.h>

#include "batcher.h"
#include "pool.h"
#include "proto.h"
#include "request.h"

/* What preparing a request reads; fixed once the engine is loaded. */
struct prepare_engine {
    const struct bert_model *model;
    struct batcher *batcher;
    struct proto_limits limits;
    struct proto_defaults defaults;
    size_t max_queue_tokens;         /* a request with more tokens gets 413 */
    struct response_budget *answers; /* answers rendered here are reserved in it */
};

struct prepare_pool;

/* Start `threads` threads (at least 1). large_bytes 0: no large lane.
 * Returns NULL with a message in err. */
struct prepare_pool *prepare_pool_start(const struct prepare_engine *engine,
                                        size_t threads,
                                        size_t large_bytes, char *err, size_t err_len);

/* Hand over a list of requests linked through `next` (the last one's is
 * NULL), each with its route, input, input_len, client_fd and done set. Each
 * comes back through its `done`, or through the workers when admitted. */
void prepare_pool_push(struct prepare_pool *p, struct srv_request *list);

/* CPU time the pool's threads have used, all together. */
double prepare_pool_cpu_seconds(const struct prepare_pool *p);

/* Join the threads (each finishes the request it holds) and free. Requests
 * still queued are refused unparsed ("the server is shutting down") and
 * pushed to their completion queues. Close the batcher first. NULL is a no-op. */
void prepare_pool_stop(struct prepare_pool *p);

/* The error a request refused with `verdict` (not BATCHER_ADMITTED) gets. */
void prepare_refusal(enum batcher_admit verdict, struct proto_error *err);

#endif

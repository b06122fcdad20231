/* The HTTP front end: HTTP/1.1 on libuv loops. Connection
 * limits and deadlines, message framing, routing, auth, body limits, the
 * hand-off of inference requests to the prepare stage (prepare.h: parsing,
 * tokenisation and admission run there), suspension of connections waiting
 * for it and the workers, responses within the response budget, drain.
 * http_internal.h maps its files.
 *
 * Threading: `loop_threads` event loops, each on its own thread with its
 * own libuv loop and its own listening socket on the same port
 * (SO_REUSEPORT: the kernel spreads new connections over them). The first
 * loop is the caller's; the functions here run on its thread. A connection
 * and its requests stay with the loop that accepted it: the prepare threads
 * and workers hand a request back through that loop's completion queue
 * (srv_request.done) and its uv_async. */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "batcher.h"
#include "pool.h"
#include "prepare.h"
#include "proto.h"

struct http_settings {
    const char *host;
    uint16_t port;
    size_t max_body_bytes;
    size_t max_connections;     /* lowered at start when the open-file limit is lower */
    unsigned request_timeout_ms;
    unsigned shutdown_timeout_ms;
    const char *api_key;        /* "" or NULL: no authentication */
    const char *cors_allow_origin; /* comma-separated origins, "*", or "" / NULL: no CORS */
    unsigned loop_threads;      /* event loops, 1..HTTP_MAX_LOOP_THREADS */
    enum proto_route default_route; /* what POST / and POST /invocations answer as
                                       (proto_default_route) */
};

#define HTTP_MAX_LOOP_THREADS 64

/* What the engine serves once it is loaded and warm. */
struct http_engine {
    struct prepare_pool *prepare; /* parses, tokenizes and admits inference requests */
    struct batcher *batcher;
    const char *model_name;     /* GET /v1/models's one model */
    int64_t created;            /* Unix time the model was loaded: /v1/models "created" */
    struct response_budget *answers; /* rendered answers not yet written */
    char *info_json;            /* GET /info body, owned by the http layer once set */
};

struct http_server;

/* Bind every loop's daemon and start serving: the first loop on `loop`
 * (run by the caller), the others on threads of their own. /health and
 * /ready answer 503 until http_server_set_engine. `on_drained` runs on the
 * first loop once every loop's drain has finished (or timed out). Returns
 * NULL with a message in err (the address is in use, SO_REUSEPORT is
 * refused, a thread cannot start). */
struct http_server *http_server_start(uv_loop_t *loop, const struct http_settings *s,
                                      void (*on_drained)(void *arg), void *arg, char *err,
                                      size_t err_len);

/* The engine is loaded and warm: start answering inference routes on
 * every loop. */
void http_server_set_engine(struct http_server *srv, const struct http_engine *engine);

/* SIGTERM: every loop stops accepting work, turns /ready to 503, finishes
 * what is admitted within shutdown_timeout_ms; then on_drained. */
void http_server_drain(struct http_server *srv);

/* After on_drained, before the prepare stage and the workers stop: every
 * loop stops its daemon (closing its connections); returns once all have. */
void http_server_quiesce(struct http_server *srv);

/* After the workers are joined (they signal the completion handles this
 * closes): every loop finishes its last completions and closes its
 * handles; the other loops' threads end. Then run the first loop until it
 * has no more handles. */
void http_server_stop(struct http_server *srv);

/* Join the loop threads and free, after the first loop has closed every
 * handle. NULL is a no-op. */
void http_server_free(struct http_server *srv);

#endif

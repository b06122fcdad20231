/* The HTTP front end: libmicrohttpd driven from the libuv loop. Connection
 * limits and deadlines, message framing, routing, auth, body limits, the
 * hand-off of inference requests to the prepare stage (prepare.h: parsing,
 * tokenisation and admission run there), suspension of connections waiting
 * for it and the workers, responses within the response budget, drain.
 * http_internal.h maps its files.
 *
 * Threading: every function here runs on the loop thread; the prepare
 * threads and workers reach it only through the completion queue's
 * uv_async. */
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
};

/* What the engine serves once it is loaded and warm. */
struct http_engine {
    struct prepare_pool *prepare; /* parses, tokenizes and admits inference requests */
    struct batcher *batcher;
    const char *model_name;     /* GET /v1/models's one model */
    int64_t created;            /* Unix time the model was loaded: /v1/models "created" */
    struct response_budget *answers; /* rendered answers not yet written */
    char *info_json;            /* GET /info body, owned by the http layer once set */
};

struct http;

/* Bind and start serving on `loop`; /health and /ready answer 503 until
 * http_set_engine. `done` is the workers' completion queue: its async
 * handle is initialised here. `on_drained` runs on the loop once a drain
 * has finished (or timed out). Returns NULL with a message in err. */
struct http *http_start(uv_loop_t *loop, const struct http_settings *s, struct completions *done,
                        void (*on_drained)(void *arg), void *arg, char *err, size_t err_len);

/* The engine is loaded and warm: start answering inference routes. */
void http_set_engine(struct http *h, const struct http_engine *engine);

/* SIGTERM: stop accepting, turn /ready to 503, finish what is admitted
 * within shutdown_timeout_ms, then call on_drained. */
void http_drain(struct http *h);

/* Finish the last completions, stop the daemon and close the handles. Call
 * after on_drained and after the workers are joined (they signal the
 * completion handle this closes), then run the loop until it has no more
 * handles. */
void http_stop(struct http *h);

/* Free after the loop has closed every handle. NULL is a no-op. */
void http_free(struct http *h);

#endif

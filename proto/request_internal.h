/* What request.c and request_inputs.c share while parsing one body; private
 * to those two files. */
#ifndef PROTO_REQUEST_INTERNAL_H
#define PROTO_REQUEST_INTERNAL_H

#include <stdbool.h>

#include "proto.h"
#include "route_table.h"

/* The shapes of a route's inputs (the constants are in request_inputs.c). */
struct proto_inputs {
    const char *expected;   /* the `must be ...` of a value of any other shape */
    bool list_only;         /* a lone string is refused, not read as a list of one */
    bool pairs;             /* an item may be a pair [text, text_pair] */
    bool objects;           /* an item may be an object {"text": ...} (Jina, Cohere) */
    bool with_query;        /* every item becomes the pair (query, item) */
    bool token_ids;         /* an item may be a list of token ids, and the whole value
                               one such list (OpenAI) */
    bool ids_only;          /* token ids and nothing else (/decode) */
    bool pair_objects;      /* an item, or the whole value, may be {"text", "text_pair"}
                               (the Hugging Face Inference API's pair) */
    bool lone_pair;         /* a list of exactly two strings is one pair (TEI's /predict) */
    bool similarity;        /* the value is {"source_sentence", "sentences"}: the inputs
                               are the source, then each sentence */
    bool questions;         /* an item is {"question", "context"}: the pair (question,
                               context) */
};


struct parse {
    const struct proto_route_desc *route;
    const struct proto_limits *limits;
    struct proto_request *req;
    struct proto_error *err;
    json_t *inputs;                     /* borrowed from req->root */
    json_t *params[PROTO_PARAM_COUNT];  /* borrowed; NULL when absent */
};

/* Set err to `"field" must be <expected>, got <type>` (422); false. */
bool request_wrong_type(struct parse *p, const char *field, const char *expected,
                        const json_t *v);
/* Set err to the out-of-memory 500; false. */
bool request_out_of_memory(struct parse *p);

/* p->inputs -> p->req->inputs by the route's shape, within max_client_batch
 * (request_inputs.c): false with err set. */
bool request_parse_inputs(struct parse *p);

#endif

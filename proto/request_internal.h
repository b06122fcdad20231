/* What request.c and request_inputs.c share while parsing one body; private
 * to those two files and request_errors.c. */
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
    bool score;             /* vLLM's two fields, "text_1" with "text_2" (or "queries" with
                               "documents" or "items", "data_1" with "data_2"): each text
                               of the second paired with the first's one text or its own */
};


struct parse {
    const struct proto_route_desc *route;
    const struct proto_limits *limits;
    struct proto_request *req;
    struct proto_error *err;
    json_t *inputs;                     /* borrowed from req->root */
    const char *inputs_name;            /* the field that held them, for messages */
    json_t *score_first;                /* score: the first field's value, borrowed */
    const char *score_first_name;
    json_t *params[PROTO_PARAM_COUNT];  /* borrowed; NULL when absent */
};

/* The refusals both files give (request_errors.c). Set err to `"field"
 * must be <expected>, got <type>` (422); false. */
bool request_wrong_type(struct parse *p, const char *field, const char *expected,
                        const json_t *v);
/* Set err to the out-of-memory 500; false. */
bool request_out_of_memory(struct parse *p);

/* The fields of a score body, as unknown-field messages list them. */
#define REQUEST_SCORE_FIELDS                                                               \
    "\"text_1\" with \"text_2\" (or \"queries\" with \"documents\" or \"items\", \"data_1\" " \
    "with \"data_2\")"

/* Score routes: when `key` is one of their text fields, keep its value in
 * p and set *taken; false with err set when a field is given twice under
 * two names. */
bool request_score_field(struct parse *p, const char *key, json_t *value, bool *taken);

/* p->inputs -> p->req->inputs by the route's shape, within max_client_batch
 * (request_inputs.c): false with err set. */
bool request_parse_inputs(struct parse *p);

#endif

/* The wire contract: JSON request bodies -> validated requests -> tokenized
 * jobs -> JSON response bodies, for every inference route of DESIGN.md.
 * Shared unchanged by the `bert` CLI and the `bertserve` server.
 *
 * Lifecycle of one request:
 *   proto_request_parse   body -> struct proto_request   (400/413/422)
 *   proto_job_prepare     request -> tokenized sequences + bert_seq_tasks (413/422)
 *   bert_run              (the caller, in batches of its choice)
 *   proto_job_respond     results -> response body
 *   proto_job_free
 * Errors at any step are rendered by proto_error_body with the route's
 * envelope. All functions are thread-safe on distinct objects. */
#ifndef PROTO_H
#define PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bert.h"
#include "tokenizer.h"

/* The API's routes. Each has one row in route.c's table (path, method,
 * parser, job setup, renderer, error envelope, metrics label) which proto,
 * the server's router, its metrics and the CLI all read: a new route is a
 * value here, its row, and whichever functions it does not share. */
enum proto_route {
    PROTO_ROUTE_EMBED,           /* POST /embed */
    PROTO_ROUTE_FILL_MASK,       /* POST /fill-mask */
    PROTO_ROUTE_CLASSIFY,        /* POST /classify */
    PROTO_ROUTE_TOKENIZE,        /* POST /tokenize */
    PROTO_ROUTE_OPENAI_EMBED,    /* POST /v1/embeddings */
    PROTO_ROUTE_RERANK,          /* POST /rerank (text-embeddings-inference) */
    PROTO_ROUTE_V1_RERANK,       /* POST /v1/rerank (Jina / Cohere shape) */
    PROTO_ROUTE_REPLACED_TOKENS, /* POST /replaced-tokens (ELECTRA discriminators) */
    PROTO_ROUTE_TOKEN_CLASSIFICATION, /* POST /token-classification (NER) */
    PROTO_ROUTE_QUESTION_ANSWERING,   /* POST /question-answering (extractive) */
    PROTO_ROUTE_ZERO_SHOT,            /* POST /zero-shot-classification (NLI) */
    PROTO_ROUTE_PREDICT,         /* POST /predict (text-embeddings-inference's /classify) */
    PROTO_ROUTE_SIMILARITY,      /* POST /similarity (TEI, HF sentence-similarity) */
    PROTO_ROUTE_V2_RERANK,       /* POST /v2/rerank (Cohere's v2) */
    PROTO_ROUTE_DECODE,          /* POST /decode (TEI: token ids -> text) */
    PROTO_ROUTE_EMBED_ALL,       /* POST /embed_all (TEI: every token's hidden state) */
    PROTO_ROUTE_EMBED_SPARSE,    /* POST /embed_sparse (TEI: SPLADE vectors) */
    PROTO_ROUTE_SCORE,           /* POST /score (vLLM's Score API: pairs of texts scored) */
    PROTO_ROUTE_V1_SCORE,        /* POST /v1/score (the same) */
    PROTO_ROUTE_COHERE_EMBED,    /* POST /v1/embed (Cohere's embed API, v1) */
    PROTO_ROUTE_COHERE_V2_EMBED, /* POST /v2/embed (Cohere's v2) */
    PROTO_ROUTE_VLLM_CLASSIFY,   /* POST /classify with vLLM's body ("input") */
    PROTO_ROUTE_POOLING,         /* POST /pooling (vLLM's Pooling API: "task" picks the output) */
    PROTO_ROUTE_COUNT
};

/* The HTTP methods a route answers, as bits (HEAD goes with GET). */
enum proto_method {
    PROTO_METHOD_GET = 1u << 0,
    PROTO_METHOD_POST = 1u << 1,
};

/* The route a checkpoint answers on POST / and POST /invocations (AWS
 * SageMaker's and Hugging Face Inference Endpoints' calls), as
 * text-embeddings-inference picks it: a cross-encoder's (one-label
 * classifier) /rerank, another classifier's /predict, else /embed; and for
 * the heads TEI does not serve, their pipeline: a token classifier's
 * /token-classification, a question-answering head's /question-answering. */
enum proto_route proto_default_route(const struct bert_model *model);

/* "/embed" -> PROTO_ROUTE_EMBED (a route's alias too: "/embeddings" ->
 * PROTO_ROUTE_OPENAI_EMBED); false for unknown paths. */
bool proto_route_from_path(const char *path, enum proto_route *out);
/* "embed" -> PROTO_ROUTE_EMBED for the routes `bert` runs offline; false
 * for other names. */
bool proto_route_from_command(const char *name, enum proto_route *out);
const char *proto_route_path(enum proto_route route);
/* "embed", "fill-mask", ...: the CLI's subcommand names and metric labels. */
const char *proto_route_name(enum proto_route route);
/* PROTO_METHOD_* bits; 0 for a route out of range. */
unsigned proto_route_methods(enum proto_route route);

/* Error kinds; one table maps each to its HTTP status and error_type. */
enum proto_error_kind {
    PROTO_ERR_MALFORMED,    /* 400 validation: not JSON, duplicate keys, bad UTF-8 */
    PROTO_ERR_UNAUTHORIZED, /* 401 unauthorized */
    PROTO_ERR_NOT_FOUND,    /* 404 not_found */
    PROTO_ERR_METHOD,       /* 405 method_not_allowed */
    PROTO_ERR_TOO_LARGE,    /* 413 payload_too_large: body, inputs, or tokens over a limit */
    PROTO_ERR_INVALID,      /* 422 validation: wrong type, bad value, unknown field, no mask */
    PROTO_ERR_OVERLOADED,   /* 429 overloaded */
    PROTO_ERR_INTERNAL,     /* 500 internal */
    PROTO_ERR_UNAVAILABLE,  /* 503 unavailable: starting or draining */
    PROTO_ERR_NOT_IMPLEMENTED, /* 501 not_implemented: an HTTP feature we do not support */
    PROTO_ERR_EXPECTATION,  /* 417 expectation_failed: an Expect other than 100-continue */
    PROTO_ERR_COUNT
};

struct proto_error {
    enum proto_error_kind kind;
    char message[512];      /* one line; user text in it is escaped and cut */
};

int proto_error_status(enum proto_error_kind kind);
const char *proto_error_type(enum proto_error_kind kind);

/* printf into err->message (one line, control characters escaped). */
void proto_error_set(struct proto_error *err, enum proto_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The error body for `route`: {"error", "error_type"} on our routes and
 * for PROTO_ROUTE_COUNT (no route: a server path), {"error": {"message",
 * "type", "code"}} on /v1/embeddings. Returns a malloc'd NUL-terminated
 * string and its length. */
char *proto_error_body(enum proto_route route, const struct proto_error *err, size_t *len);

/* Limits enforced while parsing and preparing. */
struct proto_limits {
    size_t max_client_batch;  /* most inputs in one request (413 beyond); 0: no limit */
    size_t max_input_tokens;  /* longest sequence, specials included (413 beyond unless
                                 truncating); the model's own limit applies too; 0: none */
    uint32_t max_top_k;       /* largest accepted fill-mask top_k; 0: no limit */
    /* Most tokens a fill-mask response decodes: each prediction carries its
     * whole sequence, so masks x top_k x length (413 beyond); 0: no limit. */
    size_t max_fill_mask_decode;
    size_t max_fill_mask_targets; /* most fill-mask "targets" (413 beyond); 0: no limit */
    /* Largest answer (the server's max_response_bytes). /embed_all, whose
     * answer is tokens x width floats, is refused (413) before any work
     * when those floats alone, 4 bytes each, are more; 0: no limit. */
    size_t max_response_bytes;
};

/* Defaults that come from the checkpoint and the config. */
struct proto_defaults {
    enum bert_pooling pooling;
    bool normalize;
    bool truncate;
    /* /v1/embeddings answers unit-length vectors, as OpenAI's API does, unless
     * the request says "normalized": false; false: as `normalize` above. */
    bool openai_unit_length;
    const char *model_name;   /* the served model's name: the "model" of every answer that
                                 has one (/v1/embeddings, /v1/rerank), whatever the request
                                 named; copied, so it need only live through
                                 proto_job_prepare */
};

enum proto_activation {
    PROTO_ACTIVATION_DEFAULT,  /* choose as Hugging Face does (problem_type, num_labels) */
    PROTO_ACTIVATION_SOFTMAX,
    PROTO_ACTIVATION_SIGMOID,
    PROTO_ACTIVATION_NONE,
};

/* vLLM's /pooling "task": what each input's encoder output becomes. */
enum proto_pooling_task {
    PROTO_POOLING_DEFAULT,        /* not given: the checkpoint's (proto_pooling_task) */
    PROTO_POOLING_EMBED,          /* the pooled embedding, as /v1/embeddings' */
    PROTO_POOLING_CLASSIFY,       /* the classifier's probabilities, as vLLM /classify's */
    PROTO_POOLING_TOKEN_EMBED,    /* every token's final hidden state, each unit length */
    PROTO_POOLING_TOKEN_CLASSIFY, /* every token's label probabilities */
};

/* On the rerank routes every input is the pair (query, document). */
struct proto_input {
    const char *text;         /* points into the request's JSON; not NUL-safe, use len */
    size_t text_len;
    const char *pair;         /* NULL unless the input was [a, b] */
    size_t pair_len;
    const json_t *document;   /* /v1/rerank, /v2/rerank: the document object as given (its
                                 "text" in pair, or pair NULL when it has none), or NULL
                                 for a string */
    const json_t *token_ids;  /* /v1/embeddings: a list of token ids instead of a text
                                 (text NULL); every item an integer 0 .. INT32_MAX,
                                 the vocabulary checked when tokenizing */
};

/* A parsed, validated request. Parameters may appear at the top level or in
 * the Hugging Face "parameters" object. */
struct proto_request {
    enum proto_route route;
    json_t *root;             /* owns every string below */
    struct proto_input *inputs; /* (n_inputs) */
    size_t n_inputs;
    bool batched;             /* "inputs" was a list: answer with one entry per input */

    /* embed, openai embed, and every route that tokenizes */
    bool has_pooling;
    enum bert_pooling pooling;
    bool has_normalize;       /* "normalize" (/embed) or Jina's "normalized" */
    bool normalize;
    bool has_truncate;
    bool truncate;
    enum bert_truncation_side truncation_side;
    bool base64;              /* openai: encoding_format == "base64" */
    uint32_t dimensions;      /* openai: requested width, 0 when not given (checked by
                                 proto_job_prepare: at most the model's); the vector is
                                 cut to it, then made unit length again (Matryoshka) */

    /* fill-mask */
    uint32_t top_k;           /* default 5 */
    const char **targets;     /* (n_targets) NUL-terminated, or NULL */
    size_t n_targets;

    /* classify */
    bool raw_scores;          /* true: function_to_apply = none */
    enum proto_activation function_to_apply;
    uint32_t classify_top_k;  /* 0: every label */

    /* tokenize */
    bool add_special_tokens;  /* default true */
    /* decode */
    bool skip_special_tokens; /* default true, as TEI's */

    /* embed, similarity: text put before every input, as sentence-
     * transformers' encode(prompt=...) or encode(prompt_name=...) (a name
     * of config_sentence_transformers.json's "prompts", checked when
     * preparing); neither: the checkpoint's default_prompt_name, if any */
    const char *prompt;       /* points into the JSON; not NUL-safe, use prompt_len */
    size_t prompt_len;
    const char *prompt_name;

    /* rerank: "texts" (/rerank) or "documents" (/v1/rerank) are the inputs,
     * each paired with the query */
    const char *query;
    size_t query_len;
    bool return_text;         /* /rerank "return_text", /v1/rerank "return_documents" */
    uint32_t top_n;           /* best results to return; 0: all */
    const char **rank_fields; /* Cohere v1: (n_rank_fields) the object fields ranked on, in
                                 order, or NULL: "text" */
    size_t n_rank_fields;
    uint32_t max_chunks_per_doc; /* Cohere v1: a document over the token limit is read in
                                    this many chunks at most, scored by the best; 0: none */
    uint32_t max_tokens_per_doc; /* Cohere v2: each document cut to this many tokens first;
                                    0: no cut */

    /* token-classification (proto/extract.h's enum ner_strategy) */
    int ner_strategy;         /* default NER_STRATEGY_SIMPLE */
    const char **ignore_labels; /* (n_ignore_labels) or NULL: ["O"] */
    size_t n_ignore_labels;
    bool has_stride;          /* windows of the model's length, stride tokens overlapping */
    uint32_t stride;

    /* question-answering: every input is the pair (question, context) */
    uint32_t qa_top_k;        /* answers per input, default 1 */
    bool has_doc_stride;      /* default: min(max_seq_len / 2, 128) */
    uint32_t doc_stride;      /* context tokens two chunks share */
    uint32_t max_answer_len;  /* tokens, default 15 */
    uint32_t max_seq_len;     /* tokens of a chunk; 0: min(the model's limit, 384) */
    uint32_t max_question_len; /* tokens, default 64 (413 beyond) */
    bool handle_impossible_answer;
    bool align_to_words;      /* default true */

    /* zero-shot-classification: every input is paired with each label's
     * hypothesis */
    const char **candidate_labels; /* (n_candidate_labels) NUL-terminated */
    size_t n_candidate_labels;
    char *labels_text;        /* owns the labels split from a comma-separated string */
    const char *hypothesis_template; /* one "{}", default "This example is {}." */
    bool multi_label;

    /* embed_sparse: entries above it are answered (default 0: every
     * non-zero one) */
    float sparse_threshold;

    /* score (vLLM): input i is the pair (a text of "text_1", text_2[i]),
     * with the client's names for the two fields ("text_1" and "text_2",
     * "queries" and "documents" or "items", "data_1" and "data_2") */
    size_t n_score_firsts;    /* texts "text_1" gave: 1 (paired with every input) or
                                 n_inputs (one each) */
    const char *score_names[2];
    uint32_t max_tokens;      /* score's "truncate_prompt_tokens" > 0 or Cohere v2's
                                 "max_tokens": every sequence at most this many tokens (cut
                                 when truncating); 0: the limit of the model and config */

    /* pooling (vLLM): "task" as given; proto_job_prepare sets the one run */
    enum proto_pooling_task pooling_task;

    /* Cohere embed: "texts" are the inputs */
    const char *input_type;   /* "search_query", ...: picks a sentence-transformers prompt */
    unsigned embedding_types; /* PROTO_EMBEDDING_* bits asked for; 0: none named (v1 then
                                 answers bare floats, v2 "float") */
};

/* Cohere's embedding types that are served (int8 and uint8 use Cohere's own
 * scales and are refused). */
enum proto_embedding_type {
    PROTO_EMBEDDING_FLOAT = 1u << 0,
    PROTO_EMBEDDING_BASE64 = 1u << 1,  /* the little-endian float32 bytes */
    PROTO_EMBEDDING_BINARY = 1u << 2,  /* signs packed 8 to a byte, minus 128 */
    PROTO_EMBEDDING_UBINARY = 1u << 3, /* signs packed 8 to a byte */
};

/* Parse and validate `body` for `route`. req->route is `route`, or the
 * route whose body this is when the path serves two APIs' shapes (a body
 * with "documents" on /rerank is /v1/rerank's, as vLLM's /rerank; one with
 * "input" on /classify is vLLM's /classify), also on failure: answer and
 * refuse as req->route. On failure fills err and returns false; `req`
 * then holds nothing to free. */
bool proto_request_parse(enum proto_route route, const char *body, size_t len,
                         const struct proto_limits *limits, struct proto_request *req,
                         struct proto_error *err);
void proto_request_free(struct proto_request *req);

/* One tokenized sequence and what to compute for it. */
struct proto_seq {
    struct bert_encoding enc;
    struct bert_seq_task task; /* output pointers point into the job's buffers */
    size_t n_masks;
};

struct proto_job {
    struct proto_request req;  /* moved in by proto_job_prepare */
    struct proto_seq *seqs;    /* (n_seqs): one per input */
    size_t n_seqs;
    size_t n_tokens;           /* sum of sequence lengths */
    size_t n_truncated;        /* inputs that were cut (x-truncated-inputs) */
    int32_t *target_ids;       /* fill-mask targets as ids, without duplicates */
    float *outputs;            /* one allocation all tasks write into */
    size_t n_outputs;          /* 4-byte values in outputs */
    char *model_name;          /* /v1/embeddings: the "model" to echo */
    size_t *seq_input;         /* (n_seqs) the input each sequence is a window of; NULL when
                                  sequences are the inputs */
};

/* Tokenize `req`'s inputs (taking ownership of `req` even on failure) and set
 * up every sequence's task: 422 when a fill-mask input has no mask token or
 * the checkpoint lacks the route's head (rerank needs a one-label
 * classifier: a cross-encoder), 413 when an input is over
 * limits->max_input_tokens without truncation. /tokenize needs no compute:
 * its job has n_seqs sequences with tasks that callers must not run. */
bool proto_job_prepare(struct proto_job *job, const struct bert_model *model,
                       const struct proto_limits *limits, const struct proto_defaults *defaults,
                       struct proto_request *req, struct proto_error *err);

/* True when the checkpoint is an NLI classifier /zero-shot-classification
 * can use: a label starting with "entail" (the pipeline's rule). */
bool proto_can_zero_shot(const struct bert_model *model);

/* True when /score can score pairs with the checkpoint: a cross-encoder
 * (a one-label classifier) or a model without a classifier (by cosine). */
bool proto_can_score(const struct bert_model *model);

/* The /pooling task `r` runs on this checkpoint: the one it names, else
 * vLLM's default (a token classifier's token_classify, a sequence
 * classifier's classify, any other checkpoint's embed). */
enum proto_pooling_task proto_pooling_task(const struct proto_request *r,
                                           const struct bert_model *model);

/* True when the route needs the encoder (all but /tokenize). */
bool proto_job_needs_compute(const struct proto_job *job);

/* Render the response once every sequence's task has run. Returns a malloc'd
 * NUL-terminated body and its length, or NULL when it cannot: out of memory,
 * or a result that is NaN or infinite (JSON cannot carry it and a 200 with
 * garbage would be worse). On NULL answer 500 PROTO_ERR_INTERNAL.
 * fill-mask expects each task's top_ids to hold vocabulary ids (the target
 * ids themselves when targets were given), best first. */
char *proto_job_respond(const struct proto_job *job, const struct bert_model *model,
                        size_t *len);

/* Safe on a zeroed or already freed job. */
void proto_job_free(struct proto_job *job);

/* OpenAI's model list (GET /v1/models: `id` NULL) or one model object (GET
 * /v1/models/{id}), for the one model served as `name`, loaded at Unix time
 * `created`. Returns a malloc'd body and its length, or NULL with err set:
 * 404 when `id` is not `name`, 500 out of memory. Errors go in OpenAI's
 * envelope (proto_error_body with PROTO_ROUTE_OPENAI_EMBED). */
char *proto_models_body(const char *name, int64_t created, const char *id, size_t *len,
                        struct proto_error *err);

#endif

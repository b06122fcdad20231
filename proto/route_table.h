/* The route table's rows and the functions they name: internal to proto/
 * (route.c holds the table, proto.h the public view of it). */
#ifndef PROTO_ROUTE_TABLE_H
#define PROTO_ROUTE_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

struct json_writer;

/* The parameters a body may carry, at the top level or in "parameters"
 * (request.c names and reads them). Two ids may share a name when routes
 * give it different meanings ("top_k"): a route accepts at most one. */
enum proto_param {
    PROTO_PARAM_POOLING,
    PROTO_PARAM_NORMALIZE,
    PROTO_PARAM_TRUNCATE,
    PROTO_PARAM_TRUNCATION_DIRECTION,
    PROTO_PARAM_TOP_K,          /* fill-mask: predictions per mask, at most max_top_k */
    PROTO_PARAM_TOP_K_LABELS,   /* classify: best labels to return */
    PROTO_PARAM_TARGETS,
    PROTO_PARAM_RAW_SCORES,
    PROTO_PARAM_FUNCTION_TO_APPLY,
    PROTO_PARAM_ADD_SPECIAL_TOKENS,
    PROTO_PARAM_MODEL,          /* a route that takes it answers with the served "model" */
    PROTO_PARAM_ENCODING_FORMAT,
    PROTO_PARAM_DIMENSIONS,
    PROTO_PARAM_USER,
    PROTO_PARAM_QUERY,
    PROTO_PARAM_RETURN_TEXT,
    PROTO_PARAM_RETURN_DOCUMENTS,
    PROTO_PARAM_TOP_N,
    PROTO_PARAM_AGGREGATION_STRATEGY,
    PROTO_PARAM_IGNORE_LABELS,
    PROTO_PARAM_STRIDE,
    PROTO_PARAM_TOP_K_ANSWERS,  /* question-answering: answers to return */
    PROTO_PARAM_DOC_STRIDE,
    PROTO_PARAM_MAX_ANSWER_LEN,
    PROTO_PARAM_MAX_SEQ_LEN,
    PROTO_PARAM_MAX_QUESTION_LEN,
    PROTO_PARAM_HANDLE_IMPOSSIBLE_ANSWER,
    PROTO_PARAM_ALIGN_TO_WORDS,
    PROTO_PARAM_CANDIDATE_LABELS,
    PROTO_PARAM_HYPOTHESIS_TEMPLATE,
    PROTO_PARAM_MULTI_LABEL,
    PROTO_PARAM_NORMALIZED,     /* Jina: unit length or not (/v1/embeddings) */
    PROTO_PARAM_EMBEDDING_TYPE, /* Jina: "float" or "base64" */
    PROTO_PARAM_TASK,           /* Jina: an adapter name; accepted, ignored */
    PROTO_PARAM_LATE_CHUNKING,  /* Jina: false only */
    PROTO_PARAM_RANK_FIELDS,    /* Cohere v1 rerank */
    PROTO_PARAM_MAX_CHUNKS_PER_DOC, /* Cohere v1 rerank */
    PROTO_PARAM_MAX_TOKENS_PER_DOC, /* Cohere v2 rerank */
    PROTO_PARAM_SKIP_SPECIAL_TOKENS, /* /decode */
    PROTO_PARAM_PROMPT_NAME,    /* sentence-transformers prompts (/embed, /similarity) */
    PROTO_PARAM_PROMPT,
    PROTO_PARAM_THRESHOLD,      /* /embed_sparse: smallest value answered */
    PROTO_PARAM_TRUNCATE_PROMPT_TOKENS, /* vLLM: -1 (the limit) or a length to cut to */
    PROTO_PARAM_USE_ACTIVATION, /* vLLM: false answers raw logits, or unnormalised vectors */
    PROTO_PARAM_TRUNCATION_SIDE, /* vLLM: "truncation_direction" */
    PROTO_PARAM_INPUT_TYPE,     /* Cohere: "search_query", ... (a prompt, if the model has it) */
    PROTO_PARAM_EMBEDDING_TYPES, /* Cohere: ["float", "base64", "binary", "ubinary"] */
    PROTO_PARAM_TRUNCATE_SIDE,  /* Cohere: "truncate" as "NONE", "START" or "END" */
    PROTO_PARAM_MAX_TOKENS,     /* Cohere v2: tokens per input */
    PROTO_PARAM_OUTPUT_DIMENSION, /* Cohere v2: "dimensions" */
    PROTO_PARAM_PRIORITY,       /* Cohere v2: accepted, ignored (one queue here) */
    PROTO_PARAM_POOLING_TASK,   /* vLLM /pooling: "task", the output asked for */
    PROTO_PARAM_COUNT
};
_Static_assert(PROTO_PARAM_COUNT <= 64, "a route's parameters are a 64-bit mask");
#define PROTO_PARAM(name) (UINT64_C(1) << PROTO_PARAM_##name)

/* How a body's inputs are read (request.c): the shapes accepted, the
 * message for anything else, and what each input becomes. */
struct proto_inputs;
extern const struct proto_inputs proto_inputs_texts;   /* a string or a list of them */
extern const struct proto_inputs proto_inputs_texts_or_token_ids; /* or token ids (OpenAI) */
extern const struct proto_inputs proto_inputs_texts_or_pairs; /* or of [text, text_pair] */
extern const struct proto_inputs proto_inputs_hf_classify; /* or {"text", "text_pair"} */
extern const struct proto_inputs proto_inputs_tei_predict; /* TEI: [a, b] alone is one pair */
extern const struct proto_inputs proto_inputs_similarity; /* {"source_sentence", "sentences"} */
extern const struct proto_inputs proto_inputs_token_ids; /* token ids only (/decode) */
extern const struct proto_inputs proto_inputs_documents; /* a list, each paired with "query" */
extern const struct proto_inputs proto_inputs_document_objects; /* or of {"text": ...} */
extern const struct proto_inputs proto_inputs_questions; /* {"question", "context"} or a list */
extern const struct proto_inputs proto_inputs_score; /* vLLM: "text_1" with "text_2", ... */
extern const struct proto_inputs proto_inputs_text_list; /* a list of strings (Cohere) */

/* Error bodies (errors.c). */
enum proto_envelope {
    PROTO_ENVELOPE_OURS,        /* {"error": message, "error_type": type} */
    PROTO_ENVELOPE_OPENAI,      /* {"error": {"message", "type", "code"}} */
};

/* Checks the request against the checkpoint before anything is tokenized
 * (the head the route needs, a size it must match): false with err set. */
typedef bool proto_check_fn(const struct proto_request *r, const struct bert_model *model,
                            struct proto_error *err);
/* Sizes job->outputs for the tokenized sequences and points every
 * sequence's task into it: false with err set. */
typedef bool proto_setup_fn(struct proto_job *job, const struct bert_model *model,
                            const struct proto_limits *limits,
                            const struct proto_defaults *defaults, struct proto_error *err);
/* Builds job->seqs from the request's inputs when they are not one
 * sequence each (windows of a long text): false with err set. */
typedef bool proto_tokenize_fn(struct proto_job *job, const struct bert_model *model,
                               const struct proto_limits *limits,
                               const struct proto_defaults *defaults, struct proto_error *err);
/* Writes the response body of a job whose tasks have run: false when out of
 * memory or a result JSON cannot carry (NaN, infinity). */
typedef bool proto_render_fn(struct json_writer *w, const struct proto_job *job,
                             const struct bert_model *model);

/* One route of the API: everything proto/, the server's router, its
 * metrics and the CLI need to know about it. route.c holds the rows, one
 * per enum proto_route. */
struct proto_route_desc {
    const char *path;           /* "/embed" */
    const char *alias;          /* another path it answers on (TEI's /embeddings beside
                                   /v1/embeddings), or NULL */
    const char *name;           /* metrics label and CLI subcommand: "embed" */
    unsigned methods;           /* PROTO_METHOD_* bits it answers */
    bool cli;                   /* `bert <name>` runs it offline */
    /* The body (request.c). */
    const char *inputs_name;    /* the field holding the inputs: "inputs", "input", ... */
    const struct proto_inputs *inputs;
    bool flat_body;             /* OpenAI / Cohere bodies: no Hugging Face "parameters"
                                   and "options" wrappers */
    uint64_t params;            /* PROTO_PARAM() bits accepted */
    /* Another API's body on this path: one with the field `alt_field` and
     * without inputs_name is read, answered and refused as route
     * `alt_route` (vLLM's Jina-shaped /rerank on TEI's /rerank). NULL: no
     * other shape. */
    const char *alt_field;
    enum proto_route alt_route;
    bool alt_only;              /* reached only as another row's alt_route: the path is
                                   that row's, and proto_route_from_path skips it */
    /* The job (job.c) and the answer. */
    proto_check_fn *check;      /* NULL: every checkpoint can */
    proto_tokenize_fn *tokenize; /* NULL: one sequence per input */
    proto_setup_fn *setup;      /* NULL: no forward pass (the answer needs only tokens) */
    proto_render_fn *render;
    enum proto_envelope envelope;
};

extern const struct proto_route_desc proto_routes[PROTO_ROUTE_COUNT];

/* The route functions the rows name, by the file that holds them. */
proto_check_fn proto_check_fill_mask, proto_check_classify, proto_check_rerank,
    proto_check_replaced, proto_check_dimensions;               /* job.c */
proto_setup_fn proto_setup_embed, proto_setup_classify, proto_setup_fill_mask,
    proto_setup_replaced, proto_setup_openai_embed, proto_setup_hidden,
    proto_setup_token_embed;                                    /* job.c */
proto_render_fn proto_render_embed, proto_render_openai, proto_render_fill_mask,
    proto_render_classify, proto_render_tokenize, proto_render_replaced; /* render.c */
proto_render_fn proto_render_rerank, proto_render_v1_rerank, proto_render_v2_rerank;
proto_tokenize_fn proto_tokenize_documents;                      /* rerank.c */
proto_render_fn proto_render_predict, proto_render_similarity, proto_render_decode,
    proto_render_embed_all, proto_render_embed_sparse;           /* render.c */
proto_check_fn proto_check_sparse;                              /* job.c */
proto_setup_fn proto_setup_sparse;
proto_check_fn proto_check_token_classification;                /* extract_routes.c */
proto_tokenize_fn proto_tokenize_windows;
proto_setup_fn proto_setup_tokens;
proto_render_fn proto_render_token_classification;
proto_check_fn proto_check_question_answering;                  /* extract_qa_route.c */
proto_tokenize_fn proto_tokenize_chunks;
proto_render_fn proto_render_question_answering;
proto_check_fn proto_check_zero_shot;                           /* extract_zs_route.c */
proto_tokenize_fn proto_tokenize_hypotheses;
proto_render_fn proto_render_zero_shot;
proto_check_fn proto_check_score;                               /* score.c */
proto_tokenize_fn proto_tokenize_score;
proto_setup_fn proto_setup_score;
proto_render_fn proto_render_score;
proto_render_fn proto_render_cohere_embed, proto_render_cohere_v2_embed; /* cohere_embed.c */
proto_render_fn proto_render_vllm_classify;                     /* render.c */
proto_check_fn proto_check_pooling;                             /* pooling.c */
proto_setup_fn proto_setup_pooling;
proto_render_fn proto_render_pooling;

#endif

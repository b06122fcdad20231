/* The route table: one row per route of the API. proto/ parses, prepares,
 * renders and wraps errors from it; the server routes, checks methods and
 * labels metrics from it; the CLI finds its request subcommands in it.
 *
 * Adding a route is a value in enum proto_route, its row here, and the
 * functions it does not share with another route: rows name the same
 * functions where routes do the same thing (/embed and /v1/embeddings: one
 * setup, each its own body, renderer and envelope). Where the next routes
 * need more than the table has today, the row grows a field whose zero
 * leaves the routes above unchanged. (GET routes without a body or
 * inference, GET /v1/models and /v1/models/{id}, are the server's own, as
 * /info is: server/http.c's get_routes, with proto_models_body.)
 *   - a body of another shape (/similarity's source_sentence and sentences,
 *     /decode's ids, question-answering's question and context): its own
 *     struct proto_inputs in request.c;
 *   - sequences that are not one per input (zero-shot's text x label
 *     pairs, question-answering's chunks): a tokenize hook beside setup;
 *   - several paths with one parser (/predict beside /classify, /v2/rerank
 *     beside /v1/rerank): rows that share inputs, params, check and setup
 *     and name their own render and envelope;
 *   - one row on two paths with the same answer (TEI's /embeddings beside
 *     /v1/embeddings): its alias;
 *   - a path whose route is the checkpoint's (SageMaker's /invocations):
 *     the server asks proto_default_route once at start;
 *   - another API's body on the same path (vLLM's Jina-shaped /rerank on
 *     TEI's, vLLM's /classify on Hugging Face's): alt_field names what
 *     marks it and alt_route the row that reads it, a row of its own
 *     (alt_only) when no other path serves that shape;
 *   - CORS preflight: the server answers OPTIONS for any path of the table
 *     with the row's methods. */
#include <string.h>

#include "proto.h"
#include "route_table.h"

#define TRUNCATION (PROTO_PARAM(TRUNCATE) | PROTO_PARAM(TRUNCATION_DIRECTION))
/* vLLM's truncation: how many tokens, and which end goes. */
#define VLLM_TRUNCATION (PROTO_PARAM(TRUNCATE_PROMPT_TOKENS) | PROTO_PARAM(TRUNCATION_SIDE))
/* vLLM's score request, less what only its engine has (priority,
 * cache_salt, multimodal content, padding). */
#define SCORE_PARAMS                                                                       \
    (PROTO_PARAM(MODEL) | PROTO_PARAM(USER) | VLLM_TRUNCATION | PROTO_PARAM(USE_ACTIVATION))
/* Cohere's embed request, texts only (no "images" or "inputs"). */
#define COHERE_EMBED_PARAMS                                                                \
    (PROTO_PARAM(MODEL) | PROTO_PARAM(INPUT_TYPE) | PROTO_PARAM(EMBEDDING_TYPES) |           \
     PROTO_PARAM(TRUNCATE_SIDE))

const struct proto_route_desc proto_routes[] = {
    [PROTO_ROUTE_EMBED] = {
        .path = "/embed", .name = "embed", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts_or_token_ids,
        .params = PROTO_PARAM(POOLING) | PROTO_PARAM(NORMALIZE) | PROTO_PARAM(DIMENSIONS) |
                  PROTO_PARAM(PROMPT_NAME) | PROTO_PARAM(PROMPT) | TRUNCATION,
        .check = proto_check_dimensions, .setup = proto_setup_embed,
        .render = proto_render_embed,
    },
    [PROTO_ROUTE_FILL_MASK] = {
        .path = "/fill-mask", .name = "fill-mask", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts,
        .params = PROTO_PARAM(TOP_K) | PROTO_PARAM(TARGETS) | TRUNCATION,
        .check = proto_check_fill_mask, .setup = proto_setup_fill_mask,
        .render = proto_render_fill_mask,
    },
    [PROTO_ROUTE_CLASSIFY] = {
        .path = "/classify", .name = "classify", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_hf_classify,
        .params = PROTO_PARAM(RAW_SCORES) | PROTO_PARAM(FUNCTION_TO_APPLY) |
                  PROTO_PARAM(TOP_K_LABELS) | TRUNCATION,
        .check = proto_check_classify, .setup = proto_setup_classify,
        .render = proto_render_classify,
        .alt_field = "input", .alt_route = PROTO_ROUTE_VLLM_CLASSIFY,
    },
    [PROTO_ROUTE_TOKENIZE] = {
        .path = "/tokenize", .name = "tokenize", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts_or_pairs,
        .params = PROTO_PARAM(ADD_SPECIAL_TOKENS) | TRUNCATION,
        .render = proto_render_tokenize,
    },
    [PROTO_ROUTE_OPENAI_EMBED] = {
        .path = "/v1/embeddings", .alias = "/embeddings", .name = "openai-embeddings",
        .methods = PROTO_METHOD_POST,
        .inputs_name = "input", .inputs = &proto_inputs_texts_or_token_ids, .flat_body = true,
        .params = PROTO_PARAM(MODEL) | PROTO_PARAM(ENCODING_FORMAT) | PROTO_PARAM(DIMENSIONS) |
                  PROTO_PARAM(USER) | PROTO_PARAM(NORMALIZED) | PROTO_PARAM(EMBEDDING_TYPE) |
                  PROTO_PARAM(TASK) | PROTO_PARAM(LATE_CHUNKING) | PROTO_PARAM(TRUNCATE) |
                  VLLM_TRUNCATION | PROTO_PARAM(USE_ACTIVATION) |
                  PROTO_PARAM(ADD_SPECIAL_TOKENS),
        .check = proto_check_dimensions, .setup = proto_setup_openai_embed,
        .render = proto_render_openai, .envelope = PROTO_ENVELOPE_OPENAI,
    },
    [PROTO_ROUTE_RERANK] = {
        .path = "/rerank", .name = "rerank", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "texts", .inputs = &proto_inputs_documents,
        .params = PROTO_PARAM(QUERY) | PROTO_PARAM(RAW_SCORES) | PROTO_PARAM(RETURN_TEXT) |
                  PROTO_PARAM(TOP_N) | TRUNCATION,
        .alt_field = "documents", .alt_route = PROTO_ROUTE_V1_RERANK,
        .check = proto_check_rerank, .setup = proto_setup_classify,
        .render = proto_render_rerank,
    },
    [PROTO_ROUTE_TOKEN_CLASSIFICATION] = {
        .path = "/token-classification", .name = "token-classification",
        .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts,
        .params = PROTO_PARAM(AGGREGATION_STRATEGY) | PROTO_PARAM(IGNORE_LABELS) |
                  PROTO_PARAM(STRIDE) | PROTO_PARAM(TRUNCATE),
        .check = proto_check_token_classification, .tokenize = proto_tokenize_windows,
        .setup = proto_setup_tokens, .render = proto_render_token_classification,
    },
    [PROTO_ROUTE_V1_RERANK] = {
        .path = "/v1/rerank", .name = "v1-rerank", .methods = PROTO_METHOD_POST,
        .inputs_name = "documents", .inputs = &proto_inputs_document_objects, .flat_body = true,
        .params = PROTO_PARAM(QUERY) | PROTO_PARAM(MODEL) | PROTO_PARAM(RETURN_DOCUMENTS) |
                  PROTO_PARAM(TOP_N) | PROTO_PARAM(RANK_FIELDS) |
                  PROTO_PARAM(MAX_CHUNKS_PER_DOC) | TRUNCATION,
        .check = proto_check_rerank, .tokenize = proto_tokenize_documents,
        .setup = proto_setup_classify, .render = proto_render_v1_rerank,
    },
    [PROTO_ROUTE_REPLACED_TOKENS] = {
        .path = "/replaced-tokens", .name = "replaced-tokens", .methods = PROTO_METHOD_POST,
        .cli = true, .inputs_name = "inputs", .inputs = &proto_inputs_texts,
        .params = TRUNCATION,
        .check = proto_check_replaced, .setup = proto_setup_replaced,
        .render = proto_render_replaced,
    },
    [PROTO_ROUTE_QUESTION_ANSWERING] = {
        .path = "/question-answering", .name = "question-answering",
        .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_questions,
        .params = PROTO_PARAM(TOP_K_ANSWERS) | PROTO_PARAM(DOC_STRIDE) |
                  PROTO_PARAM(MAX_ANSWER_LEN) | PROTO_PARAM(MAX_SEQ_LEN) |
                  PROTO_PARAM(MAX_QUESTION_LEN) | PROTO_PARAM(HANDLE_IMPOSSIBLE_ANSWER) |
                  PROTO_PARAM(ALIGN_TO_WORDS),
        .check = proto_check_question_answering, .tokenize = proto_tokenize_chunks,
        .setup = proto_setup_tokens, .render = proto_render_question_answering,
    },
    [PROTO_ROUTE_ZERO_SHOT] = {
        .path = "/zero-shot-classification", .name = "zero-shot-classification",
        .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts,
        .params = PROTO_PARAM(CANDIDATE_LABELS) | PROTO_PARAM(HYPOTHESIS_TEMPLATE) |
                  PROTO_PARAM(MULTI_LABEL),
        .check = proto_check_zero_shot, .tokenize = proto_tokenize_hypotheses,
        .setup = proto_setup_classify, .render = proto_render_zero_shot,
    },
    [PROTO_ROUTE_PREDICT] = {
        .path = "/predict", .name = "predict", .methods = PROTO_METHOD_POST,
        .inputs_name = "inputs", .inputs = &proto_inputs_tei_predict,
        .params = PROTO_PARAM(RAW_SCORES) | TRUNCATION,
        .check = proto_check_classify, .setup = proto_setup_classify,
        .render = proto_render_predict,
    },
    [PROTO_ROUTE_SIMILARITY] = {
        .path = "/similarity", .name = "similarity", .methods = PROTO_METHOD_POST,
        .inputs_name = "inputs", .inputs = &proto_inputs_similarity,
        .params = PROTO_PARAM(PROMPT_NAME) | PROTO_PARAM(PROMPT) | TRUNCATION,
        .setup = proto_setup_embed, .render = proto_render_similarity,
    },
    [PROTO_ROUTE_V2_RERANK] = {
        .path = "/v2/rerank", .name = "v2-rerank", .methods = PROTO_METHOD_POST,
        .inputs_name = "documents", .inputs = &proto_inputs_document_objects, .flat_body = true,
        .params = PROTO_PARAM(QUERY) | PROTO_PARAM(MODEL) | PROTO_PARAM(TOP_N) |
                  PROTO_PARAM(MAX_TOKENS_PER_DOC) | PROTO_PARAM(RETURN_DOCUMENTS) | TRUNCATION,
        .check = proto_check_rerank, .tokenize = proto_tokenize_documents,
        .setup = proto_setup_classify, .render = proto_render_v2_rerank,
    },
    [PROTO_ROUTE_DECODE] = {
        .path = "/decode", .name = "decode", .methods = PROTO_METHOD_POST,
        .inputs_name = "ids", .inputs = &proto_inputs_token_ids, .flat_body = true,
        .params = PROTO_PARAM(SKIP_SPECIAL_TOKENS),
        .render = proto_render_decode,
    },
    [PROTO_ROUTE_EMBED_ALL] = {
        .path = "/embed_all", .name = "embed-all", .methods = PROTO_METHOD_POST,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts_or_token_ids,
        .params = PROTO_PARAM(PROMPT_NAME) | PROTO_PARAM(PROMPT) | TRUNCATION,
        .setup = proto_setup_hidden, .render = proto_render_embed_all,
    },
    [PROTO_ROUTE_EMBED_SPARSE] = {
        .path = "/embed_sparse", .name = "embed-sparse", .methods = PROTO_METHOD_POST,
        .inputs_name = "inputs", .inputs = &proto_inputs_texts_or_token_ids,
        .params = PROTO_PARAM(PROMPT_NAME) | PROTO_PARAM(PROMPT) | PROTO_PARAM(THRESHOLD) |
                  TRUNCATION,
        .check = proto_check_sparse, .setup = proto_setup_sparse,
        .render = proto_render_embed_sparse,
    },
    [PROTO_ROUTE_SCORE] = {
        .path = "/score", .name = "score", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "text_2", .inputs = &proto_inputs_score, .flat_body = true,
        .params = SCORE_PARAMS,
        .check = proto_check_score, .tokenize = proto_tokenize_score,
        .setup = proto_setup_score, .render = proto_render_score,
        .envelope = PROTO_ENVELOPE_OPENAI,
    },
    [PROTO_ROUTE_V1_SCORE] = {
        .path = "/v1/score", .name = "v1-score", .methods = PROTO_METHOD_POST,
        .inputs_name = "text_2", .inputs = &proto_inputs_score, .flat_body = true,
        .params = SCORE_PARAMS,
        .check = proto_check_score, .tokenize = proto_tokenize_score,
        .setup = proto_setup_score, .render = proto_render_score,
        .envelope = PROTO_ENVELOPE_OPENAI,
    },
    [PROTO_ROUTE_COHERE_EMBED] = {
        .path = "/v1/embed", .name = "cohere-embed", .methods = PROTO_METHOD_POST,
        .inputs_name = "texts", .inputs = &proto_inputs_text_list, .flat_body = true,
        .params = COHERE_EMBED_PARAMS,
        .setup = proto_setup_openai_embed, .render = proto_render_cohere_embed,
    },
    [PROTO_ROUTE_COHERE_V2_EMBED] = {
        .path = "/v2/embed", .name = "cohere-v2-embed", .methods = PROTO_METHOD_POST,
        .inputs_name = "texts", .inputs = &proto_inputs_text_list, .flat_body = true,
        .params = COHERE_EMBED_PARAMS | PROTO_PARAM(MAX_TOKENS) | PROTO_PARAM(OUTPUT_DIMENSION) |
                  PROTO_PARAM(PRIORITY),
        .check = proto_check_dimensions, .setup = proto_setup_openai_embed,
        .render = proto_render_cohere_v2_embed,
    },
    [PROTO_ROUTE_VLLM_CLASSIFY] = {
        .path = "/classify", .name = "vllm-classify", .methods = PROTO_METHOD_POST,
        .alt_only = true,
        .inputs_name = "input", .inputs = &proto_inputs_texts_or_token_ids, .flat_body = true,
        .params = PROTO_PARAM(MODEL) | PROTO_PARAM(USER) | VLLM_TRUNCATION |
                  PROTO_PARAM(USE_ACTIVATION) | PROTO_PARAM(ADD_SPECIAL_TOKENS) |
                  PROTO_PARAM(PRIORITY),
        .check = proto_check_classify, .setup = proto_setup_classify,
        .render = proto_render_vllm_classify, .envelope = PROTO_ENVELOPE_OPENAI,
    },
    [PROTO_ROUTE_POOLING] = {
        .path = "/pooling", .name = "pooling", .methods = PROTO_METHOD_POST, .cli = true,
        .inputs_name = "input", .inputs = &proto_inputs_texts_or_token_ids, .flat_body = true,
        .params = PROTO_PARAM(MODEL) | PROTO_PARAM(USER) | PROTO_PARAM(POOLING_TASK) |
                  PROTO_PARAM(ENCODING_FORMAT) | VLLM_TRUNCATION | PROTO_PARAM(USE_ACTIVATION) |
                  PROTO_PARAM(ADD_SPECIAL_TOKENS) | PROTO_PARAM(PRIORITY),
        .check = proto_check_pooling, .setup = proto_setup_pooling,
        .render = proto_render_pooling, .envelope = PROTO_ENVELOPE_OPENAI,
    },
};
/* Designated rows leave no gap unnoticed at the end; test_proto_route
 * checks that every row in between is filled. */
_Static_assert(sizeof proto_routes / sizeof proto_routes[0] == PROTO_ROUTE_COUNT,
               "one row per enum proto_route");

bool proto_route_from_path(const char *path, enum proto_route *out)
{
    for (int r = 0; r < PROTO_ROUTE_COUNT; r++) {
        const char *alias = proto_routes[r].alias;
        if (!proto_routes[r].alt_only && (strcmp(path, proto_routes[r].path) == 0 ||
                                          (alias != NULL && strcmp(path, alias) == 0))) {
            *out = (enum proto_route)r;
            return true;
        }
    }
    return false;
}

enum proto_route proto_default_route(const struct bert_model *model)
{
    if (model->can_classify_tokens)
        return PROTO_ROUTE_TOKEN_CLASSIFICATION;
    if (model->can_answer_questions)
        return PROTO_ROUTE_QUESTION_ANSWERING;
    if (model->can_classify)
        return model->config.num_labels == 1 ? PROTO_ROUTE_RERANK : PROTO_ROUTE_PREDICT;
    return PROTO_ROUTE_EMBED;
}

bool proto_route_from_command(const char *name, enum proto_route *out)
{
    for (int r = 0; r < PROTO_ROUTE_COUNT; r++) {
        if (proto_routes[r].cli && strcmp(name, proto_routes[r].name) == 0) {
            *out = (enum proto_route)r;
            return true;
        }
    }
    return false;
}

const char *proto_route_path(enum proto_route route)
{
    return route < PROTO_ROUTE_COUNT ? proto_routes[route].path : "?";
}

const char *proto_route_name(enum proto_route route)
{
    return route < PROTO_ROUTE_COUNT ? proto_routes[route].name : "?";
}

unsigned proto_route_methods(enum proto_route route)
{
    return route < PROTO_ROUTE_COUNT ? proto_routes[route].methods : 0;
}

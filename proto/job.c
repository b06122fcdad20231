/* A validated request -> tokenized sequences with their tasks (render.c
 * turns the tasks' results into the response body). */
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

size_t proto_max_tokens(const struct bert_model *model, const struct proto_limits *limits)
{
    size_t a = limits->max_input_tokens, b = model->max_input_tokens;
    if (a == 0)
        return b;
    return (b == 0 || a < b) ? a : b;
}

/* --- checks: what the route needs of the checkpoint ------------------- */

bool proto_check_fill_mask(const struct proto_request *r, const struct bert_model *model,
                           struct proto_error *err)
{
    (void)r;
    if (bert_tokenizer_mask_id(model->tokenizer) < 0) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot fill masks: its tokenizer has no mask token");
        return false;
    }
    if (!model->can_fill_mask) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot fill masks: the checkpoint has no masked-LM head");
        return false;
    }
    return true;
}

bool proto_check_classify(const struct proto_request *r, const struct bert_model *model,
                          struct proto_error *err)
{
    (void)r;
    if (!model->can_classify) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot classify: "
                        "the checkpoint has no classification head");
        return false;
    }
    return true;
}

/* A cross-encoder scores a (query, document) pair with one logit. */
bool proto_check_rerank(const struct proto_request *r, const struct bert_model *model,
                        struct proto_error *err)
{
    (void)r;
    if (model->can_classify && model->config.num_labels == 1)
        return true;
    if (model->can_classify)
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot rerank: its classifier has %zu labels; a "
                        "cross-encoder has one",
                        model->config.num_labels);
    else
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot rerank: the checkpoint has no "
                        "classification head (a cross-encoder has one with one label)");
    return false;
}

bool proto_check_replaced(const struct proto_request *r, const struct bert_model *model,
                          struct proto_error *err)
{
    (void)r;
    if (!model->can_detect_replaced) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot detect replaced tokens: the checkpoint has no "
                        "ELECTRA discriminator head (discriminator_predictions)");
        return false;
    }
    return true;
}

/* OpenAI's "dimensions": the first N components (Matryoshka truncation),
 * so at most the model's width. */
bool proto_check_dimensions(const struct proto_request *r, const struct bert_model *model,
                            struct proto_error *err)
{
    if (r->dimensions > model->embed_dims) {
        const bool cohere = proto_routes[r->route].params & PROTO_PARAM(OUTPUT_DIMENSION);
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"%s\" must be at most the model's embedding size %zu, got %u",
                        cohere ? "output_dimension" : "dimensions", model->embed_dims,
                        (unsigned)r->dimensions);
        return false;
    }
    return true;
}

/* --- tokenizing ------------------------------------------------------- */

static bool encode_failed(const struct proto_job *job, const struct bert_model *model, size_t i,
                          const struct bert_encode_options *opts, enum bert_status st,
                          const struct bert_error *berr, struct proto_error *err)
{
    const struct proto_input *in = &job->req.inputs[i];
    const struct proto_route_desc *route = &proto_routes[job->req.route];
    const char *name = route->inputs_name;
    switch (st) {
    case BERT_E_TOO_LONG: {
        /* Measure the whole input so the message says by how much. */
        struct bert_encode_options whole = *opts;
        whole.max_length = 0;
        struct bert_encoding enc = {0};
        size_t n = 0;
        if (in->token_ids)
            n = json_array_size(in->token_ids);
        else if (bert_tokenizer_encode(model->tokenizer, in->text, in->text_len, in->pair,
                                       in->pair_len, &whole, &enc, NULL) == BERT_OK)
            n = enc.n;
        bert_encoding_free(&enc);
        const char *hint = route->params & PROTO_PARAM(TRUNCATE)
                               ? "; send \"truncate\": true to cut it"
                           : route->params & PROTO_PARAM(TRUNCATE_SIDE)
                               ? "; send \"truncate\": \"END\" to cut it"
                               : "";
        if (n)
            proto_error_set(err, PROTO_ERR_TOO_LARGE,
                            "%s[%zu] is %zu tokens long, more than the limit of %zu%s", name, i,
                            n, opts->max_length, hint);
        else
            proto_error_set(err, PROTO_ERR_TOO_LARGE, "%s[%zu]: %s%s", name, i, berr->message,
                            hint);
        return false;
    }
    case BERT_E_INVALID:
        proto_error_set(err, PROTO_ERR_MALFORMED, "%s[%zu]: %s", name, i, berr->message);
        return false;
    default:
        proto_error_set(err, PROTO_ERR_INTERNAL, "tokenizing %s[%zu] failed: %s", name, i,
                        berr->message);
        return false;
    }
}

/* OpenAI's token-array input (validated integers) as an encoding. */
static enum bert_status encode_token_ids(const struct bert_model *model, const json_t *list,
                                         const struct bert_encode_options *opts,
                                         struct bert_encoding *enc, struct bert_error *berr)
{
    size_t n = json_array_size(list);
    int32_t *ids = malloc(n * sizeof *ids);
    if (ids == NULL)
        return bert_error_set(berr, BERT_E_NOMEM, "out of memory for %zu token ids", n);
    for (size_t k = 0; k < n; k++)
        ids[k] = (int32_t)json_integer_value(json_array_get(list, k));
    enum bert_status st = bert_encoding_from_ids(model->tokenizer, ids, n, opts, enc, berr);
    free(ids);
    return st;
}

/* Cohere's input_type as a sentence-transformers prompt: one of that name,
 * else for search_query and search_document the "query" and "document"
 * prompts that sentence-transformers' encode_query and encode_document
 * use. False when the checkpoint has none of them. */
static bool input_type_prompt(const struct bert_config *c, const char *input_type,
                              const char **prompt, size_t *len)
{
    const char *alias = strcmp(input_type, "search_query") == 0      ? "query"
                        : strcmp(input_type, "search_document") == 0 ? "document"
                                                                     : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const char *name = pass == 0 ? input_type : alias;
        for (size_t i = 0; name != NULL && i < c->n_prompts; i++)
            if (strcmp(c->prompt_names[i], name) == 0) {
                *prompt = c->prompt_texts[i];
                *len = strlen(*prompt);
                return true;
            }
    }
    return false;
}

/* The prompt put before every input: the request's "prompt", its
 * "prompt_name" among the checkpoint's prompts, the one Cohere's
 * "input_type" names, or the checkpoint's default_prompt_name, on the
 * routes that take prompts; else none (NULL, 0). False with err set for
 * an unknown name. */
static bool find_prompt(const struct proto_request *r, const struct bert_model *model,
                        const char **prompt, size_t *len, struct proto_error *err)
{
    const struct bert_config *c = &model->config;
    *prompt = NULL;
    *len = 0;
    if (r->input_type != NULL && input_type_prompt(c, r->input_type, prompt, len))
        return true;
    if (!(proto_routes[r->route].params & (PROTO_PARAM(PROMPT_NAME) | PROTO_PARAM(INPUT_TYPE))))
        return true;
    if (r->prompt != NULL) {
        *prompt = r->prompt;
        *len = r->prompt_len;
        return true;
    }
    if (r->prompt_name == NULL) {
        if (c->default_prompt >= 0 && (size_t)c->default_prompt < c->n_prompts) {
            *prompt = c->prompt_texts[c->default_prompt];
            *len = strlen(*prompt);
        }
        return true;
    }
    for (size_t i = 0; i < c->n_prompts; i++)
        if (strcmp(c->prompt_names[i], r->prompt_name) == 0) {
            *prompt = c->prompt_texts[i];
            *len = strlen(*prompt);
            return true;
        }
    char q[PROTO_QUOTE_SIZE];
    proto_error_set(err, PROTO_ERR_INVALID,
                    "\"prompt_name\" %s is not one of this model's %zu prompts "
                    "(config_sentence_transformers.json)",
                    proto_quote(q, r->prompt_name, strlen(r->prompt_name)), c->n_prompts);
    return false;
}

/* bert_tokenizer_encode of prompt + text (the prompt's tokens count
 * toward the limit, as in sentence-transformers). */
static enum bert_status encode_prompted(const struct bert_model *model, const char *prompt,
                                        size_t prompt_len, const struct proto_input *in,
                                        const struct bert_encode_options *opts,
                                        struct bert_encoding *enc, struct bert_error *berr)
{
    char *joined = malloc(prompt_len + in->text_len + 1);
    if (joined == NULL)
        return bert_error_set(berr, BERT_E_NOMEM, "out of memory for a prompted input");
    memcpy(joined, prompt, prompt_len);
    memcpy(joined + prompt_len, in->text, in->text_len);
    enum bert_status st = bert_tokenizer_encode(model->tokenizer, joined,
                                                prompt_len + in->text_len, in->pair,
                                                in->pair_len, opts, enc, berr);
    free(joined);
    return st;
}

struct bert_encode_options proto_encode_options(const struct proto_request *r,
                                                const struct bert_model *model,
                                                const struct proto_limits *limits,
                                                const struct proto_defaults *defaults)
{
    struct bert_encode_options o = {
        .add_special_tokens = r->add_special_tokens, /* true unless the request says false */
        .max_length = proto_max_tokens(model, limits),
        .truncate = r->has_truncate ? r->truncate : defaults->truncate,
        .side = r->truncation_side,
    };
    if (r->max_tokens && (o.max_length == 0 || r->max_tokens < o.max_length))
        o.max_length = r->max_tokens;
    return o;
}

void proto_job_add_encoding(struct proto_job *job, const struct bert_model *model,
                            struct bert_encoding *enc)
{
    /* Models with one token type (RoBERTa, XLM-R) have no pair types: a
     * tokenizer template that still marks the second text 1 must not index
     * past their type embeddings. (The encoder ignores type ids of models
     * with none, like DistilBERT.) */
    if (model->config.type_vocab_size == 1)
        memset(enc->type_ids, 0, enc->n * sizeof *enc->type_ids);
    job->n_tokens += enc->n;
    job->n_truncated += enc->truncated ? 1 : 0;
}

static bool tokenize_inputs(struct proto_job *job, const struct bert_model *model,
                            const struct proto_limits *limits,
                            const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    const char *prompt;
    size_t prompt_len;
    if (!find_prompt(r, model, &prompt, &prompt_len, err))
        return false;
    const struct bert_encode_options opts = proto_encode_options(r, model, limits, defaults);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const struct proto_input *in = &r->inputs[i];
        struct bert_encoding *enc = &job->seqs[i].enc;
        struct bert_error berr = {0};
        enum bert_status st =
            in->token_ids ? encode_token_ids(model, in->token_ids, &opts, enc, &berr)
            : prompt      ? encode_prompted(model, prompt, prompt_len, in, &opts, enc, &berr)
                          : bert_tokenizer_encode(model->tokenizer, in->text, in->text_len,
                                                  in->pair, in->pair_len, &opts, enc, &berr);
        if (st == BERT_E_INVALID && in->token_ids) {
            proto_error_set(err, PROTO_ERR_INVALID, "%s[%zu]: %s",
                            proto_routes[r->route].inputs_name, i, berr.message);
            return false;
        }
        if (st != BERT_OK)
            return encode_failed(job, model, i, &opts, st, &berr, err);
        /* A text of no tokens without special tokens: nothing for the
         * encoder (/tokenize answers it). */
        if (enc->n == 0 && proto_routes[r->route].setup != NULL) {
            proto_error_set(err, PROTO_ERR_INVALID,
                            "%s[%zu] has no tokens: send text that has some, or "
                            "\"add_special_tokens\": true",
                            proto_routes[r->route].inputs_name, i);
            return false;
        }
        proto_job_add_encoding(job, model, enc);
    }
    return true;
}

/* Targets -> unique vocabulary ids, as transformers' get_target_ids: an
 * exact token, else the first token of the target tokenized without
 * specials; targets that tokenize to nothing are dropped. Duplicates are
 * found with one bit per vocabulary id, so the cost is linear in the
 * targets (a pairwise search took 0.77 s for 100,000 of them). */
static bool resolve_targets(struct proto_job *job, const struct bert_model *model,
                            uint32_t *n_unique, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    size_t vocab = bert_tokenizer_vocab_size(model->tokenizer);
    unsigned char *seen = calloc(vocab / 8 + 1, 1);
    job->target_ids = malloc(r->n_targets * sizeof *job->target_ids);
    if (job->target_ids == NULL || seen == NULL) {
        free(seen);
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
        return false;
    }
    struct bert_encode_options opts = {.add_special_tokens = false};
    struct bert_encoding enc = {0};
    size_t n = 0;
    for (size_t k = 0; k < r->n_targets; k++) {
        int32_t id = bert_tokenizer_token_to_id(model->tokenizer, r->targets[k]);
        if (id < 0) {
            struct bert_error berr = {0};
            enum bert_status st = bert_tokenizer_encode(model->tokenizer, r->targets[k],
                                                        strlen(r->targets[k]), NULL, 0, &opts,
                                                        &enc, &berr);
            if (st != BERT_OK) {
                bert_encoding_free(&enc);
                enum proto_error_kind kind =
                    st == BERT_E_INVALID ? PROTO_ERR_MALFORMED : PROTO_ERR_INTERNAL;
                proto_error_set(err, kind, "targets[%zu]: %s", k, berr.message);
                free(seen);
                return false;
            }
            if (enc.n == 0)
                continue;
            id = enc.ids[0];
        }
        if (id < 0 || (size_t)id >= vocab)
            continue; /* not the tokenizer's: cannot happen, but never index past `seen` */
        unsigned char bit = (unsigned char)(1u << (id % 8));
        if (!(seen[id / 8] & bit)) {
            seen[id / 8] |= bit;
            job->target_ids[n++] = id;
        }
    }
    free(seen);
    bert_encoding_free(&enc);
    if (n == 0) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "none of the \"targets\" is a token of this model's vocabulary");
        return false;
    }
    *n_unique = (uint32_t)n;
    return true;
}

/* How many tokens of `enc` are `id`; their positions, ascending, into
 * `positions` unless it is NULL. */
static size_t find_ids(const struct bert_encoding *enc, int32_t id, uint32_t *positions)
{
    size_t n = 0;
    for (size_t j = 0; j < enc->n; j++)
        if (enc->ids[j] == id) {
            if (positions != NULL)
                positions[n] = (uint32_t)j;
            n++;
        }
    return n;
}

/* Every prediction carries its whole sequence decoded, so a response costs
 * masks x top_k x length tokens of decoding: bounded, as a request with
 * hundreds of masks and a large top_k would otherwise hold a worker. */
static bool check_decode_budget(const struct proto_job *job, uint32_t top_k,
                                const struct proto_limits *limits, struct proto_error *err)
{
    if (limits->max_fill_mask_decode == 0)
        return true;
    size_t total = 0;
    for (size_t i = 0; i < job->n_seqs; i++)
        total += job->seqs[i].n_masks * (size_t)top_k * job->seqs[i].enc.n;
    if (total <= limits->max_fill_mask_decode)
        return true;
    proto_error_set(err, PROTO_ERR_TOO_LARGE,
                    "this fill-mask response would decode %zu tokens (masks x top_k x sequence "
                    "length), more than max_fill_mask_decode %zu: ask for a smaller top_k or "
                    "fewer masks",
                    total, limits->max_fill_mask_decode);
    return false;
}

/* --- setup: one output buffer, every task pointed into it --------------- */

static bool alloc_outputs(struct proto_job *job, size_t n, struct proto_error *err)
{
    job->outputs = malloc((n ? n : 1) * sizeof(float));
    if (job->outputs == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu results", n);
        return false;
    }
    job->n_outputs = n;
    return true;
}

bool proto_setup_embed(struct proto_job *job, const struct bert_model *model,
                       const struct proto_limits *limits, const struct proto_defaults *defaults,
                       struct proto_error *err)
{
    (void)limits;
    const struct proto_request *r = &job->req;
    const size_t dims = model->embed_dims;
    if (!alloc_outputs(job, job->n_seqs * dims, err))
        return false;
    for (size_t i = 0; i < job->n_seqs; i++) {
        struct bert_seq_task *t = &job->seqs[i].task;
        t->task = BERT_TASK_EMBED;
        t->pooling = r->has_pooling ? r->pooling : defaults->pooling;
        t->normalize = r->has_normalize ? r->normalize : defaults->normalize;
        t->embedding = job->outputs + i * dims;
    }
    return true;
}

/* /embed's task with OpenAI's default: unit length unless the request or
 * the config says otherwise. The renderer cuts to "dimensions" and
 * normalises what is left (normalising before the cut would not give
 * a unit vector). */
bool proto_setup_openai_embed(struct proto_job *job, const struct bert_model *model,
                              const struct proto_limits *limits,
                              const struct proto_defaults *defaults, struct proto_error *err)
{
    if (!proto_setup_embed(job, model, limits, defaults, err))
        return false;
    const struct proto_request *r = &job->req;
    bool unit = r->has_normalize ? r->normalize
                                 : defaults->openai_unit_length || defaults->normalize;
    for (size_t i = 0; i < job->n_seqs; i++)
        job->seqs[i].task.normalize = unit;
    return true;
}

bool proto_setup_classify(struct proto_job *job, const struct bert_model *model,
                          const struct proto_limits *limits,
                          const struct proto_defaults *defaults, struct proto_error *err)
{
    (void)limits;
    (void)defaults;
    size_t labels = model->config.num_labels;
    if (!alloc_outputs(job, job->n_seqs * labels, err))
        return false;
    for (size_t i = 0; i < job->n_seqs; i++) {
        job->seqs[i].task.task = BERT_TASK_CLASSIFY;
        job->seqs[i].task.logits = job->outputs + i * labels;
    }
    return true;
}

/* Every token's row of `width` floats, each sequence's after the one before:
 * the hidden state, or with `project` through the Dense modules. */
static bool setup_token_rows(struct proto_job *job, size_t width, bool project,
                             const struct proto_limits *limits, struct proto_error *err)
{
    size_t floor_bytes = job->n_tokens * width * sizeof(float);
    if (limits->max_response_bytes && floor_bytes > limits->max_response_bytes) {
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "the answer would hold %zu token vectors of %zu numbers, more than "
                        "max_response_bytes (%zu) allows: send fewer or shorter inputs",
                        job->n_tokens, width, limits->max_response_bytes);
        return false;
    }
    if (!alloc_outputs(job, job->n_tokens * width, err))
        return false;
    float *rows = job->outputs;
    for (size_t i = 0; i < job->n_seqs; i++) {
        job->seqs[i].task.task = BERT_TASK_HIDDEN;
        job->seqs[i].task.hidden_states = rows;
        job->seqs[i].task.project = project;
        rows += job->seqs[i].enc.n * width;
    }
    return true;
}

/* TEI's /embed_all: every token's final hidden state. */
bool proto_setup_hidden(struct proto_job *job, const struct bert_model *model,
                        const struct proto_limits *limits, const struct proto_defaults *defaults,
                        struct proto_error *err)
{
    (void)defaults;
    return setup_token_rows(job, model->config.hidden_size, false, limits, err);
}

/* vLLM's token_embed: every token's state through the checkpoint's
 * sentence-transformers Dense modules, as vLLM's token pooler projects it
 * (the hidden state itself for a checkpoint without). */
bool proto_setup_token_embed(struct proto_job *job, const struct bert_model *model,
                             const struct proto_limits *limits,
                             const struct proto_defaults *defaults, struct proto_error *err)
{
    (void)defaults;
    return setup_token_rows(job, model->embed_dims, true, limits, err);
}

/* SPLADE needs the masked-LM head. */
bool proto_check_sparse(const struct proto_request *r, const struct bert_model *model,
                        struct proto_error *err)
{
    (void)r;
    if (!model->can_fill_mask) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot make sparse embeddings: the checkpoint has no "
                        "masked-LM head (SPLADE reads its logits)");
        return false;
    }
    return true;
}

/* One vocabulary-wide vector per sequence: bounded like an answer, since a
 * request of many inputs would otherwise hold inputs x vocabulary floats. */
bool proto_setup_sparse(struct proto_job *job, const struct bert_model *model,
                        const struct proto_limits *limits, const struct proto_defaults *defaults,
                        struct proto_error *err)
{
    (void)defaults;
    const size_t V = model->config.vocab_size;
    const size_t bytes = job->n_seqs * V * sizeof(float);
    if (limits->max_response_bytes && bytes > limits->max_response_bytes) {
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "%zu sparse vectors of %zu entries are more than max_response_bytes "
                        "(%zu) allows: send fewer inputs",
                        job->n_seqs, V, limits->max_response_bytes);
        return false;
    }
    if (!alloc_outputs(job, job->n_seqs * V, err))
        return false;
    for (size_t i = 0; i < job->n_seqs; i++) {
        job->seqs[i].task.task = BERT_TASK_SPARSE;
        job->seqs[i].task.sparse = job->outputs + i * V;
    }
    return true;
}

/* One probability per token, each sequence's after the one before. */
bool proto_setup_replaced(struct proto_job *job, const struct bert_model *model,
                          const struct proto_limits *limits,
                          const struct proto_defaults *defaults, struct proto_error *err)
{
    (void)model;
    (void)limits;
    (void)defaults;
    if (!alloc_outputs(job, job->n_tokens, err))
        return false;
    float *per_token = job->outputs;
    for (size_t i = 0; i < job->n_seqs; i++) {
        job->seqs[i].task.task = BERT_TASK_REPLACED;
        job->seqs[i].task.replaced = per_token;
        per_token += job->seqs[i].enc.n;
    }
    return true;
}

/* top_k probabilities then top_k ids per mask, every mask's probabilities
 * first, then each sequence's mask positions, which the engine runs the MLM
 * head at (all 4 bytes wide). */
bool proto_setup_fill_mask(struct proto_job *job, const struct bert_model *model,
                           const struct proto_limits *limits,
                           const struct proto_defaults *defaults, struct proto_error *err)
{
    (void)defaults;
    const struct proto_request *r = &job->req;
    uint32_t n_targets = 0, top_k = r->top_k;
    size_t total_masks = 0;
    int32_t mask_id = bert_tokenizer_mask_id(model->tokenizer);
    for (size_t i = 0; i < job->n_seqs; i++) {
        struct proto_seq *seq = &job->seqs[i];
        seq->n_masks = find_ids(&seq->enc, mask_id, NULL);
        if (seq->n_masks == 0) {
            proto_error_set(err, PROTO_ERR_INVALID, "inputs[%zu] has no mask token \"%s\"%s", i,
                            bert_tokenizer_mask_token(model->tokenizer),
                            seq->enc.truncated ? " left after truncation" : "");
            return false;
        }
        total_masks += seq->n_masks;
    }
    if (r->n_targets) {
        if (!resolve_targets(job, model, &n_targets, err))
            return false;
        if (top_k > n_targets)
            top_k = n_targets;
    }
    /* There are no more predictions than tokens. */
    if (model->config.vocab_size && top_k > model->config.vocab_size)
        top_k = (uint32_t)model->config.vocab_size;
    if (!check_decode_budget(job, top_k, limits, err) ||
        !alloc_outputs(job, (2 * (size_t)top_k + 1) * total_masks, err))
        return false;
    float *probs = job->outputs;
    int32_t *ids = (int32_t *)(job->outputs + total_masks * top_k);
    uint32_t *positions = (uint32_t *)(job->outputs + 2 * total_masks * top_k);
    for (size_t i = 0; i < job->n_seqs; i++) {
        struct bert_seq_task *t = &job->seqs[i].task;
        t->task = BERT_TASK_FILL_MASK;
        t->top_k = top_k;
        t->targets = n_targets ? job->target_ids : NULL;
        t->n_targets = n_targets;
        t->top_probs = probs;
        t->top_ids = ids;
        t->mask_positions = positions;
        t->n_masks = (uint32_t)find_ids(&job->seqs[i].enc, mask_id, positions);
        positions += t->n_masks;
        probs += job->seqs[i].n_masks * top_k;
        ids += job->seqs[i].n_masks * top_k;
    }
    return true;
}

/* --- the job ---------------------------------------------------------- */

bool proto_job_prepare(struct proto_job *job, const struct bert_model *model,
                       const struct proto_limits *limits, const struct proto_defaults *defaults,
                       struct proto_request *req, struct proto_error *err)
{
    memset(job, 0, sizeof *job);
    job->req = *req;
    memset(req, 0, sizeof *req);
    const struct proto_request *r = &job->req;
    if (r->route >= PROTO_ROUTE_COUNT) {
        proto_error_set(err, PROTO_ERR_NOT_FOUND, "no such route");
        goto fail;
    }
    const struct proto_route_desc *route = &proto_routes[r->route];

    if (route->check && !route->check(r, model, err))
        goto fail;
    /* vLLM refuses a cut longer than the model takes (Cohere's max_tokens
     * is only capped). */
    const size_t limit = proto_max_tokens(model, limits);
    if ((route->params & PROTO_PARAM(TRUNCATE_PROMPT_TOKENS)) && r->max_tokens && limit &&
        r->max_tokens > limit) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"truncate_prompt_tokens\" is %u, more than this model's limit of %zu "
                        "tokens",
                        (unsigned)r->max_tokens, limit);
        goto fail;
    }
    /* A route that takes a "model" answers with one. */
    if (route->params & PROTO_PARAM(MODEL)) {
        const char *name = defaults->model_name ? defaults->model_name : "";
        job->model_name = strdup(name);
        if (job->model_name == NULL) {
            proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
            goto fail;
        }
    }
    job->seqs = calloc(r->n_inputs, sizeof *job->seqs);
    if (job->seqs == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu inputs", r->n_inputs);
        goto fail;
    }
    job->n_seqs = r->n_inputs;
    if (route->tokenize) {
        /* The route cuts its own sequences (windows): none per input yet. */
        free(job->seqs);
        job->seqs = NULL;
        job->n_seqs = 0;
    }
    if (!(route->tokenize ? route->tokenize(job, model, limits, defaults, err)
                          : tokenize_inputs(job, model, limits, defaults, err)) ||
        (route->setup && !route->setup(job, model, limits, defaults, err)))
        goto fail;
    return true;
fail:
    proto_job_free(job);
    return false;
}

bool proto_job_needs_compute(const struct proto_job *job)
{
    return job->req.route < PROTO_ROUTE_COUNT && proto_routes[job->req.route].setup != NULL;
}

void proto_job_free(struct proto_job *job)
{
    if (job == NULL)
        return;
    for (size_t i = 0; i < job->n_seqs; i++)
        bert_encoding_free(&job->seqs[i].enc);
    free(job->seqs);
    free(job->target_ids);
    free(job->outputs);
    free(job->model_name);
    free(job->seq_input);
    proto_request_free(&job->req);
    memset(job, 0, sizeof *job);
}

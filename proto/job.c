/* A validated request -> tokenized sequences with their tasks, and the tasks'
 * results -> the response body of each route. The response shapes follow
 * the Hugging Face pipelines (fill-mask, text-classification) and
 * text-embeddings-inference (/embed, /tokenize) so their clients work
 * unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"

/* The tighter of the configured limit and the model's own (0: unset). */
static size_t max_tokens(const struct bert_model *model, const struct proto_limits *limits)
{
    size_t a = limits->max_input_tokens, b = model->max_input_tokens;
    if (a == 0)
        return b;
    return (b == 0 || a < b) ? a : b;
}

static bool check_model(const struct proto_job *job, const struct bert_model *model,
                        struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    switch (r->route) {
    case PROTO_ROUTE_FILL_MASK:
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
    case PROTO_ROUTE_CLASSIFY:
        if (!model->can_classify) {
            proto_error_set(err, PROTO_ERR_INVALID,
                            "this model cannot classify: "
                            "the checkpoint has no classification head");
            return false;
        }
        return true;
    case PROTO_ROUTE_RERANK:
    case PROTO_ROUTE_V1_RERANK:
        /* A cross-encoder scores a (query, document) pair with one logit. */
        if (!model->can_classify || model->config.num_labels != 1) {
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
        return true;
    case PROTO_ROUTE_REPLACED_TOKENS:
        if (!model->can_detect_replaced) {
            proto_error_set(err, PROTO_ERR_INVALID,
                            "this model cannot detect replaced tokens: the checkpoint has no "
                            "ELECTRA discriminator head (discriminator_predictions)");
            return false;
        }
        return true;
    case PROTO_ROUTE_OPENAI_EMBED:
        if (r->dimensions && r->dimensions != model->config.hidden_size) {
            proto_error_set(err, PROTO_ERR_INVALID,
                            "\"dimensions\" must equal the model's embedding size %zu, got %u",
                            model->config.hidden_size, (unsigned)r->dimensions);
            return false;
        }
        return true;
    default:
        return true;
    }
}

static bool encode_failed(const struct proto_job *job, const struct bert_model *model, size_t i,
                          const struct bert_encode_options *opts, enum bert_status st,
                          const struct bert_error *berr, struct proto_error *err)
{
    const struct proto_input *in = &job->req.inputs[i];
    const char *name = proto_inputs_name(job->req.route);
    switch (st) {
    case BERT_E_TOO_LONG: {
        /* Measure the whole input so the message says by how much. */
        struct bert_encode_options whole = *opts;
        whole.max_length = 0;
        struct bert_encoding enc = {0};
        size_t n = 0;
        if (bert_tokenizer_encode(model->tokenizer, in->text, in->text_len, in->pair,
                                  in->pair_len, &whole, &enc, NULL) == BERT_OK)
            n = enc.n;
        bert_encoding_free(&enc);
        const char *hint = job->req.route == PROTO_ROUTE_OPENAI_EMBED
                               ? ""
                               : "; send \"truncate\": true to cut it";
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

static bool tokenize_inputs(struct proto_job *job, const struct bert_model *model,
                            const struct proto_limits *limits,
                            const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    struct bert_encode_options opts = {
        .add_special_tokens = r->route == PROTO_ROUTE_TOKENIZE ? r->add_special_tokens : true,
        .max_length = max_tokens(model, limits),
        .truncate = r->has_truncate ? r->truncate : defaults->truncate,
        .side = r->truncation_side,
    };
    for (size_t i = 0; i < job->n_seqs; i++) {
        const struct proto_input *in = &r->inputs[i];
        struct bert_encoding *enc = &job->seqs[i].enc;
        struct bert_error berr = {0};
        enum bert_status st = bert_tokenizer_encode(model->tokenizer, in->text, in->text_len,
                                                    in->pair, in->pair_len, &opts, enc, &berr);
        if (st != BERT_OK)
            return encode_failed(job, model, i, &opts, st, &berr, err);
        /* Models with one token type (RoBERTa, XLM-R) have no pair types: a
         * tokenizer template that still marks the second text 1 must not
         * index past their type embeddings. (The encoder ignores type ids
         * of models with none, like DistilBERT.) */
        if (model->config.type_vocab_size == 1)
            memset(enc->type_ids, 0, enc->n * sizeof *enc->type_ids);
        job->n_tokens += enc->n;
        job->n_truncated += enc->truncated ? 1 : 0;
    }
    return true;
}

/* Targets -> unique vocabulary ids, as transformers' get_target_ids: an
 * exact token, else the first token of the target tokenized without
 * specials; targets that tokenize to nothing are dropped. */
static bool resolve_targets(struct proto_job *job, const struct bert_model *model,
                            uint32_t *n_unique, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    job->target_ids = malloc(r->n_targets * sizeof *job->target_ids);
    if (job->target_ids == NULL) {
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
                return false;
            }
            if (enc.n == 0)
                continue;
            id = enc.ids[0];
        }
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++)
            seen = job->target_ids[j] == id;
        if (!seen)
            job->target_ids[n++] = id;
    }
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

/* Size the single output buffer and point every task into it. */
static bool setup_tasks(struct proto_job *job, const struct bert_model *model,
                        const struct proto_limits *limits,
                        const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    size_t hidden = model->config.hidden_size, labels = model->config.num_labels;
    uint32_t n_targets = 0, top_k = r->top_k;
    size_t per_seq = 0, total_masks = 0;

    switch (r->route) {
    case PROTO_ROUTE_TOKENIZE:
        return true;
    case PROTO_ROUTE_EMBED:
    case PROTO_ROUTE_OPENAI_EMBED:
        per_seq = hidden;
        break;
    case PROTO_ROUTE_CLASSIFY:
    case PROTO_ROUTE_RERANK:
    case PROTO_ROUTE_V1_RERANK:
        per_seq = labels;
        break;
    case PROTO_ROUTE_FILL_MASK: {
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
        if (!check_decode_budget(job, top_k, limits, err))
            return false;
        break;
    }
    default:
        break;
    }

    /* Fill-mask stores probabilities, ids, then the mask positions the
     * engine reads; all 4 bytes wide. */
    size_t all_tokens = 0;
    for (size_t i = 0; i < job->n_seqs; i++)
        all_tokens += job->seqs[i].enc.n;
    size_t n_floats = r->route == PROTO_ROUTE_FILL_MASK         ? (2 * top_k + 1) * total_masks
                      : r->route == PROTO_ROUTE_REPLACED_TOKENS ? all_tokens
                                                                : job->n_seqs * per_seq;
    job->outputs = malloc((n_floats ? n_floats : 1) * sizeof(float));
    if (job->outputs == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu results", n_floats);
        return false;
    }
    float *probs = job->outputs;
    int32_t *ids = (int32_t *)(job->outputs + total_masks * top_k);
    uint32_t *positions = (uint32_t *)(job->outputs + 2 * total_masks * top_k);
    float *per_token = job->outputs;
    for (size_t i = 0; i < job->n_seqs; i++) {
        struct bert_seq_task *t = &job->seqs[i].task;
        switch (r->route) {
        case PROTO_ROUTE_EMBED:
        case PROTO_ROUTE_OPENAI_EMBED:
            t->task = BERT_TASK_EMBED;
            t->pooling = r->has_pooling ? r->pooling : defaults->pooling;
            t->normalize = r->has_normalize ? r->normalize : defaults->normalize;
            t->embedding = job->outputs + i * hidden;
            break;
        case PROTO_ROUTE_CLASSIFY:
        case PROTO_ROUTE_RERANK:
        case PROTO_ROUTE_V1_RERANK:
            t->task = BERT_TASK_CLASSIFY;
            t->logits = job->outputs + i * labels;
            break;
        case PROTO_ROUTE_FILL_MASK:
            t->task = BERT_TASK_FILL_MASK;
            t->top_k = top_k;
            t->targets = n_targets ? job->target_ids : NULL;
            t->n_targets = n_targets;
            t->top_probs = probs;
            t->top_ids = ids;
            t->mask_positions = positions;
            t->n_masks = (uint32_t)find_ids(&job->seqs[i].enc,
                                            bert_tokenizer_mask_id(model->tokenizer), positions);
            positions += t->n_masks;
            probs += job->seqs[i].n_masks * top_k;
            ids += job->seqs[i].n_masks * top_k;
            break;
        case PROTO_ROUTE_REPLACED_TOKENS:
            t->task = BERT_TASK_REPLACED;
            t->replaced = per_token;
            per_token += job->seqs[i].enc.n;
            break;
        default:
            break;
        }
    }
    return true;
}

bool proto_job_prepare(struct proto_job *job, const struct bert_model *model,
                       const struct proto_limits *limits, const struct proto_defaults *defaults,
                       struct proto_request *req, struct proto_error *err)
{
    memset(job, 0, sizeof *job);
    job->req = *req;
    memset(req, 0, sizeof *req);
    const struct proto_request *r = &job->req;

    if (!check_model(job, model, err))
        goto fail;
    if (r->route == PROTO_ROUTE_OPENAI_EMBED || r->route == PROTO_ROUTE_V1_RERANK) {
        const char *name = r->model ? r->model : defaults->model_name ? defaults->model_name : "";
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
    if (!tokenize_inputs(job, model, limits, defaults, err) ||
        !setup_tasks(job, model, limits, defaults, err))
        goto fail;
    return true;
fail:
    proto_job_free(job);
    return false;
}

bool proto_job_needs_compute(const struct proto_job *job)
{
    return job->req.route != PROTO_ROUTE_TOKENIZE;
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
    proto_request_free(&job->req);
    memset(job, 0, sizeof *job);
}

/* --- rendering ------------------------------------------------------- */

static bool all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

static void render_embed(struct json_writer *w, const struct proto_job *job, size_t hidden)
{
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++)
        json_writer_float_array(w, job->seqs[i].task.embedding, hidden);
    json_writer_end_array(w);
}

/* OpenAI's base64 is of the little-endian float32 bytes. */
static void write_base64_f32le(struct json_writer *w, const float *v, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    json_writer_base64(w, v, n * sizeof *v);
#else
    unsigned char *le = malloc(n * 4 + 1);
    if (le == NULL) {
        w->nomem = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &v[i], 4);
        for (int k = 0; k < 4; k++)
            le[4 * i + k] = (unsigned char)(b >> (8 * k));
    }
    json_writer_base64(w, le, n * 4);
    free(le);
#endif
}

static bool render_openai(struct json_writer *w, const struct proto_job *job, size_t hidden)
{
    json_writer_begin_object(w);
    json_writer_key(w, "object");
    json_writer_cstring(w, "list");
    json_writer_key(w, "data");
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const float *e = job->seqs[i].task.embedding;
        json_writer_begin_object(w);
        json_writer_key(w, "object");
        json_writer_cstring(w, "embedding");
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)i);
        json_writer_key(w, "embedding");
        if (job->req.base64) {
            if (!all_finite(e, hidden))
                return false;
            write_base64_f32le(w, e, hidden);
        } else {
            json_writer_float_array(w, e, hidden);
        }
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    json_writer_key(w, "model");
    json_writer_cstring(w, job->model_name ? job->model_name : "");
    json_writer_key(w, "usage");
    json_writer_begin_object(w);
    json_writer_key(w, "prompt_tokens");
    json_writer_int(w, (int64_t)job->n_tokens);
    json_writer_key(w, "total_tokens");
    json_writer_int(w, (int64_t)job->n_tokens);
    json_writer_end_object(w);
    json_writer_end_object(w);
    return true;
}

/* One fill-mask prediction: {"score","token","token_str","sequence"} where
 * sequence is the input with this mask replaced and padding removed,
 * decoded without specials only when the input has a single mask (as
 * transformers does, so other masks stay visible). */
static bool render_prediction(struct json_writer *w, const struct bert_tokenizer *tok,
                              const struct proto_seq *seq, size_t mask_pos, int32_t id,
                              float score, int32_t *scratch)
{
    int32_t pad_id = bert_tokenizer_pad_id(tok);
    size_t m = 0;
    for (size_t j = 0; j < seq->enc.n; j++) {
        int32_t v = j == mask_pos ? id : seq->enc.ids[j];
        if (v != pad_id)
            scratch[m++] = v;
    }
    char *sequence = bert_tokenizer_decode(tok, scratch, m, seq->n_masks == 1);
    char *token_str = bert_tokenizer_decode(tok, &id, 1, false);
    bool ok = sequence != NULL && token_str != NULL;
    if (ok) {
        json_writer_begin_object(w);
        json_writer_key(w, "score");
        json_writer_float(w, score);
        json_writer_key(w, "token");
        json_writer_int(w, id);
        json_writer_key(w, "token_str");
        json_writer_cstring(w, token_str);
        json_writer_key(w, "sequence");
        json_writer_cstring(w, sequence);
        json_writer_end_object(w);
    }
    free(sequence);
    free(token_str);
    return ok;
}

static bool render_fill_mask(struct json_writer *w, const struct proto_job *job,
                             const struct bert_model *model)
{
    const struct bert_tokenizer *tok = model->tokenizer;
    int32_t mask_id = bert_tokenizer_mask_id(tok);
    size_t longest = 1;
    for (size_t i = 0; i < job->n_seqs; i++)
        if (job->seqs[i].enc.n > longest)
            longest = job->seqs[i].enc.n;
    int32_t *scratch = malloc(longest * sizeof *scratch);
    if (scratch == NULL)
        return false;
    bool ok = true;
    if (job->req.batched)
        json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs && ok; i++) {
        const struct proto_seq *seq = &job->seqs[i];
        const struct bert_seq_task *t = &seq->task;
        /* One mask: its list; several: a list per mask. */
        if (seq->n_masks != 1)
            json_writer_begin_array(w);
        size_t k = 0;
        for (size_t pos = 0; pos < seq->enc.n && ok; pos++) {
            if (seq->enc.ids[pos] != mask_id)
                continue;
            json_writer_begin_array(w);
            for (uint32_t r = 0; r < t->top_k && ok; r++)
                ok = render_prediction(w, tok, seq, pos, t->top_ids[k * t->top_k + r],
                                       t->top_probs[k * t->top_k + r], scratch);
            json_writer_end_array(w);
            k++;
        }
        if (seq->n_masks != 1)
            json_writer_end_array(w);
    }
    if (job->req.batched)
        json_writer_end_array(w);
    free(scratch);
    return ok;
}

static enum proto_activation default_activation(const struct bert_config *cfg)
{
    /* transformers' TextClassificationPipeline.postprocess, in its order. */
    if (cfg->problem_type == BERT_PROBLEM_MULTI_LABEL || cfg->num_labels == 1)
        return PROTO_ACTIVATION_SIGMOID;
    if (cfg->problem_type == BERT_PROBLEM_SINGLE_LABEL || cfg->num_labels > 1)
        return PROTO_ACTIVATION_SOFTMAX;
    return PROTO_ACTIVATION_NONE;
}

static void activate(enum proto_activation act, const float *logits, size_t n, float *out)
{
    if (act == PROTO_ACTIVATION_SOFTMAX) {
        double max = logits[0], sum = 0;
        for (size_t i = 1; i < n; i++)
            if (logits[i] > max)
                max = logits[i];
        for (size_t i = 0; i < n; i++)
            sum += exp((double)logits[i] - max);
        for (size_t i = 0; i < n; i++)
            out[i] = (float)(exp((double)logits[i] - max) / sum);
    } else if (act == PROTO_ACTIVATION_SIGMOID) {
        for (size_t i = 0; i < n; i++)
            out[i] = (float)(1.0 / (1.0 + exp(-(double)logits[i])));
    } else {
        memcpy(out, logits, n * sizeof *out);
    }
}

static bool render_classify(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    const struct bert_config *cfg = &model->config;
    size_t n = cfg->num_labels;
    enum proto_activation act = job->req.function_to_apply;
    if (act == PROTO_ACTIVATION_DEFAULT)
        act = default_activation(cfg);
    float *scores = malloc((n ? n : 1) * sizeof *scores);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    bool ok = scores != NULL && order != NULL;
    size_t keep = job->req.classify_top_k && job->req.classify_top_k < n ? job->req.classify_top_k
                                                                         : n;
    if (job->req.batched)
        json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs && ok; i++) {
        activate(act, job->seqs[i].task.logits, n, scores);
        /* Insertion sort: stable, so equal scores keep label order. */
        for (size_t a = 0; a < n; a++) {
            size_t b = a;
            while (b > 0 && scores[order[b - 1]] < scores[a]) {
                order[b] = order[b - 1];
                b--;
            }
            order[b] = a;
        }
        json_writer_begin_array(w);
        for (size_t r = 0; r < keep; r++) {
            size_t label = order[r];
            json_writer_begin_object(w);
            json_writer_key(w, "label");
            if (cfg->id2label && cfg->id2label[label])
                json_writer_cstring(w, cfg->id2label[label]);
            else {
                char name[32];
                snprintf(name, sizeof name, "LABEL_%zu", label);
                json_writer_cstring(w, name);
            }
            json_writer_key(w, "score");
            json_writer_float(w, scores[label]);
            json_writer_end_object(w);
        }
        json_writer_end_array(w);
    }
    if (job->req.batched)
        json_writer_end_array(w);
    free(scores);
    free(order);
    return ok;
}

/* text-embeddings-inference's /tokenize: template specials carry their
 * token text and null offsets; other tokens the input bytes they cover.
 * /replaced-tokens adds each token's "probability" of having been replaced
 * (false when one is not finite). */
static bool render_tokenize(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    const bool replaced = job->req.route == PROTO_ROUTE_REPLACED_TOKENS;
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const struct bert_encoding *enc = &job->seqs[i].enc;
        const struct proto_input *in = &job->req.inputs[i];
        json_writer_begin_array(w);
        for (size_t j = 0; j < enc->n; j++) {
            json_writer_begin_object(w);
            json_writer_key(w, "id");
            json_writer_int(w, enc->ids[j]);
            json_writer_key(w, "text");
            bool special = enc->special[j] != 0;
            if (special) {
                const char *t = bert_tokenizer_id_to_token(model->tokenizer, enc->ids[j]);
                json_writer_cstring(w, t ? t : "");
            } else {
                const char *src = enc->sequence[j] == 1 ? in->pair : in->text;
                size_t src_len = enc->sequence[j] == 1 ? in->pair_len : in->text_len;
                size_t start = enc->start[j], stop = enc->stop[j];
                if (src == NULL || stop > src_len || start > stop)
                    start = stop = 0;
                json_writer_string(w, src ? src + start : "", stop - start);
            }
            json_writer_key(w, "special");
            json_writer_bool(w, special);
            json_writer_key(w, "start");
            if (special)
                json_writer_null(w);
            else
                json_writer_int(w, enc->start[j]);
            json_writer_key(w, "stop");
            if (special)
                json_writer_null(w);
            else
                json_writer_int(w, enc->stop[j]);
            if (replaced) {
                const float p = job->seqs[i].task.replaced[j];
                if (!isfinite(p))
                    return false;
                json_writer_key(w, "probability");
                json_writer_float(w, p);
            }
            json_writer_end_object(w);
        }
        json_writer_end_array(w);
    }
    json_writer_end_array(w);
    return true;
}

char *proto_job_respond(const struct proto_job *job, const struct bert_model *model,
                        size_t *len)
{
    size_t hidden = model->config.hidden_size;
    bool embeds = job->req.route == PROTO_ROUTE_EMBED || job->req.route == PROTO_ROUTE_OPENAI_EMBED;
    struct json_writer w;
    /* Sized once for the common case: about 12 bytes a float. */
    json_writer_init(&w, job->n_seqs * (embeds ? hidden * 12 + 64 : 256) + 256);
    bool ok = true;
    switch (job->req.route) {
    case PROTO_ROUTE_EMBED:
        render_embed(&w, job, hidden);
        break;
    case PROTO_ROUTE_OPENAI_EMBED:
        ok = render_openai(&w, job, hidden);
        break;
    case PROTO_ROUTE_FILL_MASK:
        ok = render_fill_mask(&w, job, model);
        break;
    case PROTO_ROUTE_CLASSIFY:
        ok = render_classify(&w, job, model);
        break;
    case PROTO_ROUTE_TOKENIZE:
    case PROTO_ROUTE_REPLACED_TOKENS:
        ok = render_tokenize(&w, job, model);
        break;
    case PROTO_ROUTE_RERANK:
    case PROTO_ROUTE_V1_RERANK:
        ok = proto_render_rerank(&w, job);
        break;
    default:
        ok = false;
    }
    if (!ok) {
        json_writer_free(&w);
        return NULL;
    }
    return json_writer_finish(&w, len);
}

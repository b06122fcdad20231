/* POST /pooling: vLLM's Pooling API. Each input (a text or token ids)
 * answers the encoder's output for one task, "task" or the checkpoint's
 * default:
 *   embed           the pooled embedding, unit length (as /v1/embeddings)
 *   classify        the classifier's probabilities (as vLLM's /classify "probs")
 *   token_embed     every token's final hidden state, specials included,
 *                   through the checkpoint's Dense modules if any, each
 *                   unit length
 *   token_classify  every token's label probabilities: softmax, or sigmoid
 *                   for one label (vLLM's token pooler head)
 * "use_activation": false answers them before the normalisation or the
 * activation. The answer is vLLM's {"id", "object": "list", "created",
 * "model", "data": [{"index", "object": "pooling", "data"}], "usage"},
 * "data" a list of numbers (a list of lists for the token tasks), or with
 * "encoding_format": "base64" the base64 of their little-endian float32
 * bytes, row after row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

/* vLLM's names of the tasks, by enum proto_pooling_task. */
static const char *const task_names[] = {
    [PROTO_POOLING_EMBED] = "embed",
    [PROTO_POOLING_CLASSIFY] = "classify",
    [PROTO_POOLING_TOKEN_EMBED] = "token_embed",
    [PROTO_POOLING_TOKEN_CLASSIFY] = "token_classify",
};

bool proto_pooling_task_parse(const char *name, enum proto_pooling_task *out)
{
    for (size_t t = 0; t < sizeof task_names / sizeof task_names[0]; t++) {
        if (task_names[t] != NULL && strcmp(name, task_names[t]) == 0) {
            *out = (enum proto_pooling_task)t;
            return true;
        }
    }
    return false;
}

enum proto_pooling_task proto_pooling_task(const struct proto_request *r,
                                           const struct bert_model *model)
{
    if (r->pooling_task != PROTO_POOLING_DEFAULT)
        return r->pooling_task;
    if (model->can_classify_tokens)
        return PROTO_POOLING_TOKEN_CLASSIFY;
    if (model->can_classify)
        return PROTO_POOLING_CLASSIFY;
    return PROTO_POOLING_EMBED;
}

/* Every checkpoint embeds; the classifying tasks need their head. */
bool proto_check_pooling(const struct proto_request *r, const struct bert_model *model,
                         struct proto_error *err)
{
    const enum proto_pooling_task task = proto_pooling_task(r, model);
    const char *missing = NULL;
    if (task == PROTO_POOLING_CLASSIFY && !model->can_classify)
        missing = "a sequence classification head";
    if (task == PROTO_POOLING_TOKEN_CLASSIFY && !model->can_classify_tokens)
        missing = "a token classification head";
    if (missing == NULL)
        return true;
    proto_error_set(err, PROTO_ERR_INVALID,
                    "\"task\": \"%s\" needs %s, which this checkpoint has not; its tasks: "
                    "\"embed\", \"token_embed\"%s%s",
                    task_names[task], missing, model->can_classify ? ", \"classify\"" : "",
                    model->can_classify_tokens ? ", \"token_classify\"" : "");
    return false;
}

bool proto_setup_pooling(struct proto_job *job, const struct bert_model *model,
                         const struct proto_limits *limits,
                         const struct proto_defaults *defaults, struct proto_error *err)
{
    job->req.pooling_task = proto_pooling_task(&job->req, model);
    switch (job->req.pooling_task) {
    case PROTO_POOLING_CLASSIFY:
        return proto_setup_classify(job, model, limits, defaults, err);
    case PROTO_POOLING_TOKEN_EMBED:
        return proto_setup_token_embed(job, model, limits, defaults, err);
    case PROTO_POOLING_TOKEN_CLASSIFY:
        return proto_setup_tokens(job, model, limits, defaults, err);
    case PROTO_POOLING_EMBED:
    case PROTO_POOLING_DEFAULT:
        break;
    }
    return proto_setup_openai_embed(job, model, limits, defaults, err);
}

/* The token tasks answer a row per token, the others one flat list. */
static bool per_token(enum proto_pooling_task task)
{
    return task == PROTO_POOLING_TOKEN_EMBED || task == PROTO_POOLING_TOKEN_CLASSIFY;
}

/* Rows x columns of sequence i's answer (one row for a flat list). */
static void answer_shape(const struct proto_job *job, const struct bert_model *model, size_t i,
                         size_t *rows, size_t *cols)
{
    const enum proto_pooling_task task = job->req.pooling_task;
    *rows = per_token(task) ? job->seqs[i].enc.n : 1;
    *cols = task == PROTO_POOLING_TOKEN_EMBED ? model->embed_dims
            : task == PROTO_POOLING_CLASSIFY || task == PROTO_POOLING_TOKEN_CLASSIFY
                ? model->config.num_labels
                : proto_answer_dims(job, model);
}

/* Sequence i's answer into out (rows x cols). False for a non-finite
 * value. */
static bool answer_values(const struct proto_job *job, const struct bert_model *model, size_t i,
                          size_t rows, size_t cols, float *out)
{
    const struct bert_seq_task *t = &job->seqs[i].task;
    const bool activate = !job->req.raw_scores;
    switch (job->req.pooling_task) {
    case PROTO_POOLING_CLASSIFY:
        proto_activate(activate ? proto_default_activation(&model->config)
                                : PROTO_ACTIVATION_NONE,
                       t->logits, cols, out);
        break;
    case PROTO_POOLING_TOKEN_EMBED:
        for (size_t r = 0; r < rows; r++) {
            const float *row = t->hidden_states + r * cols;
            if (activate)
                proto_unit_vector(row, cols, out + r * cols);
            else
                memcpy(out + r * cols, row, cols * sizeof *out);
        }
        break;
    case PROTO_POOLING_TOKEN_CLASSIFY: {
        const enum proto_activation act = !activate ? PROTO_ACTIVATION_NONE
                                          : cols == 1 ? PROTO_ACTIVATION_SIGMOID
                                                      : PROTO_ACTIVATION_SOFTMAX;
        for (size_t r = 0; r < rows; r++)
            proto_activate(act, t->token_logits + r * cols, cols, out + r * cols);
        break;
    }
    case PROTO_POOLING_EMBED:
    case PROTO_POOLING_DEFAULT:
        if (!proto_answer_vector(job, model, i, out))
            return false;
        break;
    }
    for (size_t k = 0; k < rows * cols; k++)
        if (!isfinite(out[k]))
            return false;
    return true;
}

bool proto_render_pooling(struct json_writer *w, const struct proto_job *job,
                          const struct bert_model *model)
{
    size_t most = 1;
    for (size_t i = 0; i < job->n_seqs; i++) {
        size_t rows, cols;
        answer_shape(job, model, i, &rows, &cols);
        if (rows * cols > most)
            most = rows * cols;
    }
    float *values = malloc(most * sizeof *values);
    if (values == NULL)
        return false;
    bool ok = true;
    json_writer_begin_object(w);
    proto_write_vllm_head(w, job, "pooling-");
    json_writer_key(w, "data");
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs && ok; i++) {
        size_t rows, cols;
        answer_shape(job, model, i, &rows, &cols);
        ok = answer_values(job, model, i, rows, cols, values);
        json_writer_begin_object(w);
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)i);
        json_writer_key(w, "object");
        json_writer_cstring(w, "pooling");
        json_writer_key(w, "data");
        if (job->req.base64) {
            proto_write_base64_f32le(w, values, rows * cols);
        } else if (!per_token(job->req.pooling_task)) {
            json_writer_float_array(w, values, cols);
        } else {
            json_writer_begin_array(w);
            for (size_t r = 0; r < rows; r++)
                json_writer_float_array(w, values + r * cols, cols);
            json_writer_end_array(w);
        }
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    proto_write_usage(w, job, true);
    json_writer_end_object(w);
    free(values);
    return ok && json_writer_ok(w);
}

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

#include "answer.h"
#include "json_writer.h"
#include "proto.h"
#include "route_table.h"

static const char *task_name(enum proto_pooling_task task)
{
    switch (task) {
    case PROTO_POOLING_EMBED: return "embed";
    case PROTO_POOLING_CLASSIFY: return "classify";
    case PROTO_POOLING_TOKEN_EMBED: return "token_embed";
    case PROTO_POOLING_TOKEN_CLASSIFY: return "token_classify";
    case PROTO_POOLING_DEFAULT: break;
    }
    return "?";
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
                    task_name(task), missing, model->can_classify ? ", \"classify\"" : "",
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

/* Rows x columns of sequence i's answer; rows 0 for a flat list. */
static void answer_shape(const struct proto_job *job, const struct bert_model *model, size_t i,
                         size_t *rows, size_t *cols)
{
    const struct bert_config *c = &model->config;
    switch (job->req.pooling_task) {
    case PROTO_POOLING_CLASSIFY:
        *rows = 0, *cols = c->num_labels;
        return;
    case PROTO_POOLING_TOKEN_EMBED:
        *rows = job->seqs[i].enc.n, *cols = model->embed_dims;
        return;
    case PROTO_POOLING_TOKEN_CLASSIFY:
        *rows = job->seqs[i].enc.n, *cols = c->num_labels;
        return;
    case PROTO_POOLING_EMBED:
    case PROTO_POOLING_DEFAULT:
        break;
    }
    *rows = 0, *cols = proto_answer_dims(job, model);
}

/* Each row of v (rows x cols) scaled to unit length, as torch's
 * F.normalize (sums in double, eps 1e-12). */
static void normalize_rows(float *v, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++, v += cols) {
        double sq = 0;
        for (size_t k = 0; k < cols; k++)
            sq += (double)v[k] * v[k];
        const double scale = 1.0 / fmax(sqrt(sq), 1e-12);
        for (size_t k = 0; k < cols; k++)
            v[k] = (float)(v[k] * scale);
    }
}

/* Sequence i's answer into out (rows x cols, rows at least 1). False for a
 * non-finite value. */
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
        for (size_t k = 0; k < rows * cols; k++)
            out[k] = t->hidden_states[k];
        if (activate)
            normalize_rows(out, rows, cols);
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
        if ((rows ? rows : 1) * cols > most)
            most = (rows ? rows : 1) * cols;
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
        ok = answer_values(job, model, i, rows ? rows : 1, cols, values);
        json_writer_begin_object(w);
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)i);
        json_writer_key(w, "object");
        json_writer_cstring(w, "pooling");
        json_writer_key(w, "data");
        if (job->req.base64) {
            proto_write_base64_f32le(w, values, (rows ? rows : 1) * cols);
        } else if (rows == 0) {
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

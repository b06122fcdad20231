/* Task heads on top of the encoder (bert_run): pooled embeddings, masked-LM
 * top-k, sequence classification and ELECTRA's replaced-token detection,
 * each run only on the rows it needs. */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "bert.h"
#include "engine.h"
#include "kernels.h"
#include "scratch.h"
#include "simd.h"
#include "vmath.h"

/* torch.nn.functional.normalize: x / max(||x||, 1e-12). */
static void l2_normalize(float *v, size_t n)
{
    double sq = 0.0;
    for (size_t k = 0; k < n; k++)
        sq += (double)v[k] * v[k];
    float norm = (float)sqrt(sq);
    float inv = 1.0f / (norm > 1e-12f ? norm : 1e-12f);
    for (size_t k = 0; k < n; k++)
        v[k] *= inv;
}

void bert_pool(const float *hidden, size_t H, size_t row0, size_t n, enum bert_pooling pooling,
               bool normalize, float *out)
{
    const float *rows = hidden + row0 * H;
    switch (pooling) {
    case BERT_POOLING_CLS:
        memcpy(out, rows, H * sizeof *out);
        break;
    case BERT_POOLING_MEAN:
        memcpy(out, rows, H * sizeof *out);
        for (size_t r = 1; r < n; r++)
            for (size_t k = 0; k < H; k++)
                out[k] += rows[r * H + k];
        for (size_t k = 0; k < H; k++)
            out[k] /= (float)n;
        break;
    case BERT_POOLING_MAX:
        memcpy(out, rows, H * sizeof *out);
        for (size_t r = 1; r < n; r++)
            for (size_t k = 0; k < H; k++)
                out[k] = rows[r * H + k] > out[k] ? rows[r * H + k] : out[k];
        break;
    }
    if (normalize)
        l2_normalize(out, H);
}

/* Row x (hidden_size) through the Dense modules into out (embed_dims);
 * two rows of scratch carry the chain's steps. */
static void project(const struct bert_model *model, struct bert_scratch *s, const float *x,
                    float *out)
{
    const struct bert_engine *e = model->engine;
    for (size_t k = 0; k < e->n_dense; k++) {
        float *y = k + 1 == e->n_dense ? out : (k % 2 ? s->tmp : s->ctx);
        st_dense_apply(&e->dense[k], x, y);
        x = y;
    }
}

/* The Dense modules after pooling, then Normalize: each embed sequence's
 * pooled row (in `pooled`, row i for sequence i) through the chain into
 * its embedding; each projected hidden task's rows into its output. */
static void run_dense(const struct bert_model *model, struct bert_scratch *s,
                      const struct bert_batch *b, const float *hidden, const float *pooled,
                      const struct bert_seq_task *tasks)
{
    const size_t H = model->config.hidden_size, E = model->embed_dims;
    for (size_t i = 0; i < b->n_seqs; i++) {
        const struct bert_seq_task *t = &tasks[i];
        if (t->task == BERT_TASK_EMBED) {
            project(model, s, pooled + i * H, t->embedding);
            if (t->normalize)
                l2_normalize(t->embedding, E);
        } else if (t->task == BERT_TASK_HIDDEN && t->project) {
            for (size_t r = b->seq_start[i]; r < b->seq_start[i + 1]; r++)
                project(model, s, hidden + r * H, t->hidden_states + (r - b->seq_start[i]) * E);
        }
    }
}

/* Pooler (dense + the family's activation on the first token: tanh for
 * BERT and RoBERTa, ReLU for DistilBERT, GELU for ELECTRA; ModernBERT's
 * head on the cls or mean pooled row, with its LayerNorm) then the
 * classifier, for every classify sequence at once: one GEMM each over the
 * gathered first rows. Small, so one member does it. */
static void run_classify(const struct bert_model *model, struct bert_scratch *s,
                         const struct bert_batch *b, const float *hidden,
                         const struct bert_seq_task *tasks)
{
    const struct bert_weights *w = &model->engine->weights;
    const size_t H = model->config.hidden_size, C = model->config.num_labels;
    float *gathered = s->ctx; /* (m, H) [CLS] rows; the encoder is done with ctx */
    float *pooled = s->tmp;   /* (m, H) */
    /* ModernBERT pools by its classifier_pooling; the others read [CLS]. */
    const enum bert_pooling pooling = model->config.family == BERT_FAMILY_MODERNBERT
                                          ? model->config.modern.classifier_pooling
                                          : BERT_POOLING_CLS;
    size_t m = 0;
    for (size_t i = 0; i < b->n_seqs; i++)
        if (tasks[i].task == BERT_TASK_CLASSIFY)
            bert_pool(hidden, H, b->seq_start[i], b->seq_start[i + 1] - b->seq_start[i],
                      pooling, false, gathered + m++ * H);
    if (m == 0)
        return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)H, (int)H, 1.0f, gathered,
                (int)H, w->pooler_w, (int)H, 0.0f, pooled, (int)H);
    kernel_bias_activation(pooled, w->pooler_b, m, H, H, model->config.pooler_activation);
    if (w->pooler_ln_g != NULL) /* ModernBertPredictionHead ends with its norm */
        kernel_add_layernorm(pooled, NULL, NULL, w->pooler_ln_g, w->pooler_ln_b, m, H,
                             model->config.layer_norm_eps);
    /* Logits go into the gather buffer, which is free again. */
    float *logits = gathered;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)C, (int)H, 1.0f, pooled,
                (int)H, w->classifier_w, (int)H, 0.0f, logits, (int)C);
    kernel_add_bias(logits, w->classifier_b, m, C, C);
    m = 0;
    for (size_t i = 0; i < b->n_seqs; i++)
        if (tasks[i].task == BERT_TASK_CLASSIFY)
            memcpy(tasks[i].logits, logits + m++ * C, C * sizeof(float));
}

/* ElectraDiscriminatorPredictions on every token of the replaced-token
 * sequences: dense + hidden_act, dense_prediction, sigmoid. One member,
 * a sequence at a time through ctx. */
static void run_replaced(const struct bert_model *model, struct bert_scratch *s,
                         const struct bert_batch *b, const float *hidden,
                         const struct bert_seq_task *tasks)
{
    const struct bert_weights *w = &model->engine->weights;
    const size_t H = model->config.hidden_size;
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (tasks[i].task != BERT_TASK_REPLACED)
            continue;
        const size_t r0 = b->seq_start[i], n = b->seq_start[i + 1] - r0;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)H, (int)H, 1.0f,
                    hidden + r0 * H, (int)H, w->disc_dense_w, (int)H, 0.0f, s->ctx, (int)H);
        kernel_bias_activation(s->ctx, w->disc_dense_b, n, H, H, model->config.activation);
        for (size_t t = 0; t < n; t++) {
            const float logit =
                cblas_sdot((int)H, s->ctx + t * H, 1, w->disc_pred_w, 1) + w->disc_pred_b[0];
            tasks[i].replaced[t] = 1.0f / (1.0f + vmath_exp(-logit));
        }
    }
}

/* The per-token head on every token of the BERT_TASK_TOKENS sequences:
 * ModernBERT's head (dense, classifier_activation, norm) first, then
 * Linear(H, width). One member, a sequence at a time through ctx. */
static void run_tokens(const struct bert_model *model, struct bert_scratch *s,
                       const struct bert_batch *b, const float *hidden,
                       const struct bert_seq_task *tasks)
{
    const struct bert_weights *w = &model->engine->weights;
    const size_t H = model->config.hidden_size, C = bert_token_head_width(model);
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (tasks[i].task != BERT_TASK_TOKENS)
            continue;
        const size_t r0 = b->seq_start[i], n = b->seq_start[i + 1] - r0;
        const float *rows = hidden + r0 * H;
        if (w->pooler_ln_g != NULL) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)H, (int)H, 1.0f,
                        rows, (int)H, w->pooler_w, (int)H, 0.0f, s->ctx, (int)H);
            kernel_bias_activation(s->ctx, w->pooler_b, n, H, H, model->config.pooler_activation);
            kernel_add_layernorm(s->ctx, NULL, NULL, w->pooler_ln_g, w->pooler_ln_b, n, H,
                                 model->config.layer_norm_eps);
            rows = s->ctx;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)C, (int)H, 1.0f, rows,
                    (int)H, w->token_w, (int)H, 0.0f, tasks[i].token_logits, (int)C);
        kernel_add_bias(tasks[i].token_logits, w->token_b, n, C, C);
    }
}

/* Keep the k best (score, id) pairs, best first; ties go to the lower id,
 * which arrives first. */
static void topk_insert(float *scores, int32_t *ids, uint32_t k, uint32_t *have, float v,
                        int32_t id)
{
    if (*have == k && !(v > scores[k - 1]))
        return;
    uint32_t pos = *have < k ? (*have)++ : k - 1;
    while (pos > 0 && v > scores[pos - 1]) {
        scores[pos] = scores[pos - 1];
        ids[pos] = ids[pos - 1];
        pos--;
    }
    scores[pos] = v;
    ids[pos] = id;
}

/* max and sum of exp(l - max) over a vocabulary row. */
BERT_HOT
static void softmax_stats(const float *logits, size_t V, float *max_out, float *sum_out)
{
    const size_t nv = V - V % VLANES;
    vf16 vmax = vf16_splat(logits[0]);
    for (size_t j = 0; j < nv; j += VLANES)
        vmax = vf16_max(vmax, vf16_load(logits + j));
    float max = vf16_hmax(vmax);
    for (size_t j = nv; j < V; j++)
        max = logits[j] > max ? logits[j] : max;
    vf16 vsum = {0};
    for (size_t j = 0; j < nv; j += VLANES)
        vsum += vf16_exp(vf16_load(logits + j) - max);
    float sum = vf16_sum(vsum);
    for (size_t j = nv; j < V; j++)
        sum += vmath_exp(logits[j] - max);
    *max_out = max;
    *sum_out = sum;
}

/* Softmax over the vocabulary row and the task's top-k, written at mask
 * `ord` of the sequence. Probabilities are exp(l - max) / sum like
 * torch.softmax; only the k winners are normalised. Only ids below `emit`
 * (the tokenizer's) are answered: rows past it pad the vocabulary (NomicBERT
 * rounds it up to a multiple of 64) and no token has them. */
static void mlm_select(const float *logits, size_t V, size_t emit, const struct bert_seq_task *t,
                       size_t ord)
{
    float max, sum;
    softmax_stats(logits, V, &max, &sum);
    int32_t *ids = t->top_ids + ord * t->top_k;
    float *probs = t->top_probs + ord * t->top_k;
    uint32_t have = 0;
    if (t->targets != NULL) {
        for (uint32_t j = 0; j < t->n_targets; j++)
            topk_insert(probs, ids, t->top_k, &have, logits[t->targets[j]], t->targets[j]);
    } else {
        for (size_t j = 0; j < emit; j++)
            topk_insert(probs, ids, t->top_k, &have, logits[j], (int32_t)j);
    }
    for (uint32_t j = 0; j < have; j++)
        probs[j] = vmath_exp(probs[j] - max) / sum;
}

/* acc[j] = max(acc[j], x[j]). */
static void max_into(float *acc, const float *x, size_t n)
{
    for (size_t j = 0; j < n; j++)
        acc[j] = x[j] > acc[j] ? x[j] : acc[j];
}

struct heads_job {
    const struct bert_model *model;
    struct bert_scratch *s;
    const struct bert_batch *b;
    const float *hidden;
    const struct bert_seq_task *tasks;
    bool any_classify, any_replaced, any_tokens;
    size_t n_masks;
};

/* The MLM head, only at [MASK] rows, MLM_ROW_BLOCK of them at a time: the
 * members gather and transform their share of the rows, split the
 * vocabulary projection by columns, then take the top-k of their rows. */
static void fill_mask_member(const struct heads_job *job, size_t member, size_t n_members)
{
    const struct bert_model *model = job->model;
    const struct bert_weights *w = &model->engine->weights;
    const struct bert_config *c = &model->config;
    struct bert_scratch *s = job->s;
    const size_t H = c->hidden_size, E = c->embedding_size, V = c->vocab_size;
    for (size_t first = 0; first < job->n_masks; first += MLM_ROW_BLOCK) {
        const size_t m = job->n_masks - first < MLM_ROW_BLOCK ? job->n_masks - first
                                                               : MLM_ROW_BLOCK;
        const struct bert_mask_row *rows = s->masks + first;
        size_t r0, r1;
        bert_team_share(m, member, n_members, &r0, &r1);
        for (size_t r = r0; r < r1; r++)
            memcpy(s->ctx + r * H, job->hidden + rows[r].row * H, H * sizeof(float));
        if (r1 > r0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r1 - r0), (int)E, (int)H,
                        1.0f, s->ctx + r0 * H, (int)H, w->mlm_dense_w, (int)H, 0.0f,
                        s->tmp + r0 * E, (int)E);
            kernel_bias_activation(s->tmp + r0 * E, w->mlm_dense_b, r1 - r0, E, E,
                                   c->mlm_activation);
            kernel_add_layernorm(s->tmp + r0 * E, NULL, NULL, w->mlm_ln_g, w->mlm_ln_b, r1 - r0,
                                 E, c->layer_norm_eps);
        }
        bert_team_barrier(s->team);
        size_t v0, v1;
        bert_team_share(V, member, n_members, &v0, &v1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)(v1 - v0), (int)E,
                    1.0f, s->tmp, (int)E, w->mlm_decoder_w + v0 * E, (int)E, 0.0f,
                    s->logits + v0, (int)V);
        kernel_add_bias(s->logits + v0, w->mlm_decoder_b + v0, m, v1 - v0, V);
        /* SPLADE rows: each member pools its own columns, so no two write
         * one value. */
        for (size_t r = 0; r < m; r++)
            if (job->tasks[rows[r].seq].task == BERT_TASK_SPARSE)
                max_into(job->tasks[rows[r].seq].sparse + v0, s->logits + r * V + v0, v1 - v0);
        bert_team_barrier(s->team);
        for (size_t r = r0; r < r1; r++)
            if (job->tasks[rows[r].seq].task == BERT_TASK_FILL_MASK)
                mlm_select(s->logits + r * V, V, model->engine->emit_vocab,
                           &job->tasks[rows[r].seq], rows[r].ord);
        bert_team_barrier(s->team);
    }
}

static void heads_member(void *arg, size_t member, size_t n_members)
{
    const struct heads_job *job = arg;
    const struct bert_batch *b = job->b;
    const size_t H = job->model->config.hidden_size;
    size_t i0, i1;
    bert_team_share(b->n_seqs, member, n_members, &i0, &i1);
    /* With Dense modules the pooled row waits in qkv (the encoder is done
     * with it) for run_dense. */
    const bool dense = job->model->engine->n_dense > 0;
    for (size_t i = i0; i < i1; i++) {
        const struct bert_seq_task *t = &job->tasks[i];
        if (t->task == BERT_TASK_EMBED)
            bert_pool(job->hidden, H, b->seq_start[i], b->seq_start[i + 1] - b->seq_start[i],
                      t->pooling, t->normalize && !dense,
                      dense ? job->s->qkv + i * H : t->embedding);
    }
    if (job->any_classify && member == 0)
        run_classify(job->model, job->s, b, job->hidden, job->tasks);
    if (job->any_replaced && member == 0)
        run_replaced(job->model, job->s, b, job->hidden, job->tasks);
    if (job->any_tokens && member == 0)
        run_tokens(job->model, job->s, b, job->hidden, job->tasks);
    if (job->n_masks > 0) {
        bert_team_barrier(job->s->team); /* classify is done with ctx and tmp */
        fill_mask_member(job, member, n_members);
    }
}

/* The rows the MLM head runs at: each fill-mask task's mask positions,
 * moved to the packed batch's rows, in order, and every row of a SPLADE
 * task. */
static size_t find_masks(struct bert_scratch *s, const struct bert_batch *b,
                         const struct bert_seq_task *tasks)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (tasks[i].task == BERT_TASK_SPARSE) {
            for (size_t row = b->seq_start[i]; row < b->seq_start[i + 1]; row++)
                s->masks[n++] = (struct bert_mask_row){row, i, 0};
            continue;
        }
        if (tasks[i].task != BERT_TASK_FILL_MASK)
            continue;
        for (size_t ord = 0; ord < tasks[i].n_masks; ord++)
            s->masks[n++] =
                (struct bert_mask_row){b->seq_start[i] + tasks[i].mask_positions[ord], i, ord};
    }
    return n;
}

/* Strictly ascending and inside the sequence, so a batch has at most as
 * many mask rows as tokens (the scratch's room). */
static bool masks_valid(const struct bert_seq_task *t, size_t seq_len)
{
    const uint32_t *pos = t->mask_positions;
    for (uint32_t k = 0; k < t->n_masks; k++)
        if (pos[k] >= seq_len || (k > 0 && pos[k] <= pos[k - 1]))
            return false;
    return true;
}

/* Whether rows [r0, r1) of `hidden` (H columns) are all finite. */
static bool rows_finite(const float *hidden, size_t H, size_t r0, size_t r1)
{
    uint32_t any = 0;
    for (size_t i = r0 * H; i < r1 * H; i++) {
        uint32_t bits;
        memcpy(&bits, &hidden[i], sizeof bits);
        any |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return any == 0;
}

/* A sequence whose encoder output is not finite (an overflow in a
 * checkpoint that loaded) must not be answered: the clamps inside tanh,
 * GELU and the top-k would turn its NaNs into finite nonsense. Its first
 * output value becomes NaN, which every renderer refuses (500). */
static void poison_non_finite(const struct bert_model *model, const struct bert_batch *b,
                              const float *hidden, const struct bert_seq_task *tasks)
{
    const size_t H = model->config.hidden_size;
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (rows_finite(hidden, H, b->seq_start[i], b->seq_start[i + 1]))
            continue;
        const struct bert_seq_task *t = &tasks[i];
        float *first = t->task == BERT_TASK_EMBED       ? t->embedding
                       : t->task == BERT_TASK_CLASSIFY  ? t->logits
                       : t->task == BERT_TASK_REPLACED  ? t->replaced
                       : t->task == BERT_TASK_FILL_MASK ? t->top_probs
                       : t->task == BERT_TASK_HIDDEN    ? t->hidden_states
                       : t->task == BERT_TASK_SPARSE    ? t->sparse
                                                        : NULL;
        if (first != NULL &&
            (t->task != BERT_TASK_FILL_MASK || (t->top_k > 0 && t->n_masks > 0)))
            first[0] = NAN;
    }
}

enum bert_status bert_run(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *batch, const struct bert_seq_task *tasks,
                          struct bert_error *err)
{
    struct heads_job job = {.model = model, .s = s, .b = batch, .tasks = tasks};
    for (size_t i = 0; i < batch->n_seqs; i++) {
        const struct bert_seq_task *t = &tasks[i];
        if (t->task == BERT_TASK_CLASSIFY) {
            if (!model->can_classify)
                return bert_error_set(err, BERT_E_INVALID,
                                      "this checkpoint has no classification head");
            job.any_classify = true;
        } else if (t->task == BERT_TASK_REPLACED) {
            if (!model->can_detect_replaced)
                return bert_error_set(err, BERT_E_INVALID,
                                      "this checkpoint has no ELECTRA discriminator head");
            job.any_replaced = true;
        } else if (t->task == BERT_TASK_TOKENS) {
            if (bert_token_head_width(model) == 0)
                return bert_error_set(err, BERT_E_INVALID,
                                      "this checkpoint has no token-classification or "
                                      "question-answering head");
            job.any_tokens = true;
        } else if (t->task == BERT_TASK_FILL_MASK) {
            if (!model->can_fill_mask)
                return bert_error_set(err, BERT_E_INVALID,
                                      "this checkpoint has no masked-LM head");
            if (t->top_k == 0 || (t->targets != NULL && t->top_k > t->n_targets))
                return bert_error_set(err, BERT_E_INVALID,
                                      "sequence %zu: top_k %u is invalid", i, t->top_k);
            if (!masks_valid(t, batch->seq_start[i + 1] - batch->seq_start[i]))
                return bert_error_set(err, BERT_E_INVALID,
                                      "sequence %zu: mask positions out of order or range", i);
        } else if (t->task == BERT_TASK_SPARSE && !model->can_fill_mask) {
            return bert_error_set(err, BERT_E_INVALID, "this checkpoint has no masked-LM head");
        }
    }
    const size_t V = model->config.vocab_size;
    for (size_t i = 0; i < batch->n_seqs; i++)
        if (tasks[i].task == BERT_TASK_SPARSE)
            for (size_t j = 0; j < V; j++)
                tasks[i].sparse[j] = -INFINITY;
    enum bert_status st = bert_encode(model, s, batch, &job.hidden, err);
    if (st != BERT_OK)
        return st;
    job.n_masks = find_masks(s, batch, tasks);
    bert_team_run(s->team, heads_member, &job);
    if (model->engine->n_dense > 0)
        run_dense(model, s, batch, job.hidden, s->qkv, tasks);
    /* The hidden states need no head: a copy of the sequence's rows. */
    const size_t H = model->config.hidden_size;
    for (size_t i = 0; i < batch->n_seqs; i++)
        if (tasks[i].task == BERT_TASK_HIDDEN && !(tasks[i].project && model->engine->n_dense))
            memcpy(tasks[i].hidden_states, job.hidden + batch->seq_start[i] * H,
                   (batch->seq_start[i + 1] - batch->seq_start[i]) * H * sizeof(float));
    /* The max of the logits is the max of log(1 + relu(logit)): one
     * transform per entry instead of one per token. */
    for (size_t i = 0; i < batch->n_seqs; i++)
        if (tasks[i].task == BERT_TASK_SPARSE)
            for (size_t j = 0; j < V; j++)
                tasks[i].sparse[j] = log1pf(tasks[i].sparse[j] > 0.0f ? tasks[i].sparse[j] : 0.0f);
    poison_non_finite(model, batch, job.hidden, tasks);
    return BERT_OK;
}

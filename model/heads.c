#include "heads.h"

#include <math.h>
#include <string.h>

#include <cblas.h>

#include "kernels.h"
#include "scratch.h"

size_t bert_count_masks(const struct bert_model *model, const struct bert_batch *batch, size_t i)
{
    int32_t mask = bert_tokenizer_mask_id(model->tokenizer);
    size_t n = 0;
    for (size_t t = batch->seq_start[i]; t < batch->seq_start[i + 1]; t++)
        n += batch->ids[t] == mask;
    return n;
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
    if (normalize) {
        /* torch.nn.functional.normalize: x / max(||x||, 1e-12). */
        double sq = 0.0;
        for (size_t k = 0; k < H; k++)
            sq += (double)out[k] * out[k];
        float norm = (float)sqrt(sq);
        float inv = 1.0f / (norm > 1e-12f ? norm : 1e-12f);
        for (size_t k = 0; k < H; k++)
            out[k] *= inv;
    }
}

/* Pooler (dense + tanh on [CLS]) then the classifier, for every classify
 * sequence at once: one GEMM each over the gathered [CLS] rows. */
static void run_classify(const struct bert_model *model, struct bert_scratch *s,
                         const struct bert_batch *b, const float *hidden,
                         const struct bert_seq_task *tasks)
{
    const struct bert_weights *w = &model->weights;
    const size_t H = model->config.hidden_size, C = model->config.num_labels;
    float *gathered = s->ctx; /* (m, H) [CLS] rows; the encoder is done with ctx */
    float *pooled = s->tmp;   /* (m, H) then logits (m, C) after it */
    size_t m = 0;
    for (size_t i = 0; i < b->n_seqs; i++)
        if (tasks[i].task == BERT_TASK_CLASSIFY)
            memcpy(gathered + m++ * H, hidden + b->seq_start[i] * H, H * sizeof(float));
    if (m == 0)
        return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)H, (int)H, 1.0f, gathered,
                (int)H, w->pooler_w, (int)H, 0.0f, pooled, (int)H);
    kernel_bias_tanh(pooled, w->pooler_b, m, H);
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

/* Softmax over the vocabulary row and the task's top-k, written at mask
 * `ord` of the sequence. Probabilities are exp(l - max) / sum like
 * torch.softmax; only the k winners are normalised. */
static void mlm_select(const float *logits, size_t V, const struct bert_seq_task *t, size_t ord)
{
    float max = logits[0];
    for (size_t j = 1; j < V; j++)
        max = logits[j] > max ? logits[j] : max;
    float sum = 0.0f;
    for (size_t j = 0; j < V; j++)
        sum += expf(logits[j] - max);
    int32_t *ids = t->top_ids + ord * t->top_k;
    float *probs = t->top_probs + ord * t->top_k;
    uint32_t have = 0;
    if (t->targets != NULL) {
        for (uint32_t j = 0; j < t->n_targets; j++)
            topk_insert(probs, ids, t->top_k, &have, logits[t->targets[j]], t->targets[j]);
    } else {
        for (size_t j = 0; j < V; j++)
            topk_insert(probs, ids, t->top_k, &have, logits[j], (int32_t)j);
    }
    for (uint32_t j = 0; j < have; j++)
        probs[j] = expf(probs[j] - max) / sum;
}

static void mlm_block(const struct bert_model *model, struct bert_scratch *s, size_t m,
                      const struct bert_seq_task *tasks)
{
    const struct bert_weights *w = &model->weights;
    const struct bert_config *c = &model->config;
    const size_t H = c->hidden_size, V = c->vocab_size;
    float *rows = s->ctx;            /* (m, H) gathered mask rows */
    float *transformed = s->tmp;     /* (m, H) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)H, (int)H, 1.0f, rows,
                (int)H, w->mlm_dense_w, (int)H, 0.0f, transformed, (int)H);
    kernel_bias_activation(transformed, w->mlm_dense_b, m, H, c->activation);
    kernel_add_layernorm(transformed, NULL, NULL, w->mlm_ln_g, w->mlm_ln_b, m, H,
                         c->layer_norm_eps);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)V, (int)H, 1.0f,
                transformed, (int)H, w->mlm_decoder_w, (int)H, 0.0f, s->logits, (int)V);
    kernel_add_bias(s->logits, w->mlm_decoder_b, m, V, V);
    for (size_t r = 0; r < m; r++)
        mlm_select(s->logits + r * V, V, &tasks[s->mlm_seq[r]], s->mlm_ord[r]);
}

/* The MLM head runs only at [MASK] rows, MLM_ROW_BLOCK of them at a time. */
static void run_fill_mask(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *b, const float *hidden,
                          const struct bert_seq_task *tasks)
{
    const size_t H = model->config.hidden_size;
    const int32_t mask = bert_tokenizer_mask_id(model->tokenizer);
    size_t m = 0;
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (tasks[i].task != BERT_TASK_FILL_MASK)
            continue;
        size_t ord = 0;
        for (size_t t = b->seq_start[i]; t < b->seq_start[i + 1]; t++) {
            if (b->ids[t] != mask)
                continue;
            memcpy(s->ctx + m * H, hidden + t * H, H * sizeof(float));
            s->mlm_seq[m] = i;
            s->mlm_ord[m] = ord++;
            if (++m == MLM_ROW_BLOCK) {
                mlm_block(model, s, m, tasks);
                m = 0;
            }
        }
    }
    if (m > 0)
        mlm_block(model, s, m, tasks);
}

enum bert_status bert_run(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *batch, const struct bert_seq_task *tasks,
                          struct bert_error *err)
{
    bool any_classify = false, any_mlm = false;
    for (size_t i = 0; i < batch->n_seqs; i++) {
        const struct bert_seq_task *t = &tasks[i];
        if (t->task == BERT_TASK_CLASSIFY) {
            if (!model->can_classify)
                return bert_error_set(err, BERT_E_INVALID,
                                      "this checkpoint has no classification head");
            any_classify = true;
        } else if (t->task == BERT_TASK_FILL_MASK) {
            if (!model->can_fill_mask)
                return bert_error_set(err, BERT_E_INVALID,
                                      "this checkpoint has no masked-LM head");
            if (t->top_k == 0 || (t->targets != NULL && t->top_k > t->n_targets))
                return bert_error_set(err, BERT_E_INVALID,
                                      "sequence %zu: top_k %u is invalid", i, t->top_k);
            any_mlm = true;
        }
    }
    const float *hidden;
    enum bert_status st = bert_encode(model, s, batch, &hidden, err);
    if (st != BERT_OK)
        return st;
    const size_t H = model->config.hidden_size;
    for (size_t i = 0; i < batch->n_seqs; i++) {
        if (tasks[i].task == BERT_TASK_EMBED)
            bert_pool(hidden, H, batch->seq_start[i], batch->seq_start[i + 1] - batch->seq_start[i],
                      tasks[i].pooling, tasks[i].normalize, tasks[i].embedding);
    }
    if (any_classify)
        run_classify(model, s, batch, hidden, tasks);
    if (any_mlm)
        run_fill_mask(model, s, batch, hidden, tasks);
    return BERT_OK;
}

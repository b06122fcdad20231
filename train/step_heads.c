/* The heads of a training step (step_internal.h): BertForMaskedLM's
 * decoder at the labelled rows, and the pooler and classifier of
 * BertForSequenceClassification (single-label, multi-label or regression),
 * with their losses and gradients. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels.h"
#include "simd.h"
#include "step_heads.h"
#include "team.h"
#include "vmath.h"

/* row[j] = exp(row[j] - max), 16 lanes at a time; returns the sum. Kept in
 * the row for the gradient. */
BERT_HOT
static double exp_shifted(float *row, size_t n, float max)
{
    const size_t nv = n - n % VLANES;
    vf16 vsum = {0};
    for (size_t j = 0; j < nv; j += VLANES) {
        vf16 e = vf16_exp(vf16_load(row + j) - max);
        vf16_store(row + j, e);
        vsum += e;
    }
    double sum = vf16_sum(vsum);
    for (size_t j = nv; j < n; j++) {
        row[j] = vmath_exp(row[j] - max);
        sum += row[j];
    }
    return sum;
}

/* Index of the first largest element: the maximum 16 lanes at a time, then
 * a scan for its first occurrence. */
BERT_HOT
static size_t first_argmax(const float *row, size_t n)
{
    const size_t nv = n - n % VLANES;
    float max = row[0];
    if (nv > 0) {
        vf16 vmax = vf16_load(row);
        for (size_t j = VLANES; j < nv; j += VLANES)
            vmax = vf16_max(vmax, vf16_load(row + j));
        max = vf16_hmax(vmax);
    }
    for (size_t j = nv; j < n; j++)
        max = row[j] > max ? row[j] : max;
    size_t best = 0;
    while (best + 1 < n && row[best] != max) /* bounded: a NaN row never matches */
        best++;
    return best;
}

/* Cross-entropy of one logits row against `label`: loss, whether the
 * argmax is right, and (with grad_scale != 0) the row replaced by
 * grad_scale * (softmax - onehot). */
static double cross_entropy(float *row, size_t n, int32_t label, float grad_scale,
                            bool *correct)
{
    const size_t best = first_argmax(row, n);
    const float max = row[best];
    const float target = row[label];
    const double sum = exp_shifted(row, n, max);
    const double loss = log(sum) + max - target;
    *correct = best == (size_t)label;
    if (grad_scale != 0.0f) {
        const float k = (float)(grad_scale / sum);
        for (size_t j = 0; j < n; j++)
            row[j] *= k;
        row[label] -= grad_scale;
    }
    return loss;
}

struct mlm_loss_job {
    float *logits;          /* (rows, V) */
    size_t V;
    const int32_t *labels;  /* by token */
    const size_t *tokens;   /* (rows) token of each logits row */
    size_t rows;
    float grad_scale;
    double loss[MLM_BLOCK];
    bool correct[MLM_BLOCK];
};

/* Cross-entropy of the member's share of the decoder's rows. */
static void mlm_loss_member(void *arg, size_t member, size_t n)
{
    struct mlm_loss_job *j = arg;
    size_t r0, r1;
    bert_team_share(j->rows, member, n, &r0, &r1);
    for (size_t r = r0; r < r1; r++)
        j->loss[r] = cross_entropy(j->logits + r * j->V, j->V, j->labels[j->tokens[r]],
                                   j->grad_scale, &j->correct[r]);
}

/* The MLM head at the picked rows; with backward, its gradient lands in dx
 * (zeroed elsewhere by the caller). */
void step_mlm_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                   bool backward, struct train_stats *st)
{
    const struct bert_config *c = &m->config;
    const struct train_view *p = &m->p;
    struct train_view *g = &m->g;
    const size_t H = c->hidden_size, V = c->vocab_size;
    const float *hidden = w->x[c->num_layers];
    size_t n = 0;
    for (size_t t = 0; t < tb->b.n_tokens; t++)
        if (tb->mlm_labels[t] != -100) {
            w->rows[n] = t;
            memcpy(w->mg + n++ * H, hidden + t * H, H * sizeof(float));
        }
    st->mlm_count = n;
    if (n == 0)
        return;
    step_gemm(w, false, true, n, H, H, 1.0f, w->mg, H, p->mlm_dense_w, H, 0.0f, w->md, H);
    step_bias_activation_forward(w->md, p->mlm_dense_b, w->ma, n, H, c->activation);
    step_layernorm_forward(w->ma, p->mlm_ln_g, p->mlm_ln_b, n, H, c->layer_norm_eps, w->me, w->mst);
    const float scale = backward ? 1.0f / (float)n : 0.0f;
    for (size_t r0 = 0; r0 < n; r0 += MLM_BLOCK) {
        const size_t rows = n - r0 < MLM_BLOCK ? n - r0 : MLM_BLOCK;
        const float *e = w->me + r0 * H;
        /* The decoder is the word-embedding matrix (tied, BERT sec. 3.1). */
        step_linear_forward(w, e, rows, H, p->word_emb, p->mlm_bias, V, w->logits, V);
        struct mlm_loss_job j = {.logits = w->logits, .V = V, .labels = tb->mlm_labels,
                                 .tokens = w->rows + r0, .rows = rows, .grad_scale = scale};
        bert_team_run(w->team, mlm_loss_member, &j);
        for (size_t r = 0; r < rows; r++) {
            st->mlm_loss_sum += j.loss[r];
            st->mlm_correct += j.correct[r];
        }
        if (backward)
            step_linear_backward(w, w->logits, V, e, rows, H, p->word_emb, V, g->word_emb,
                                 g->mlm_bias, w->dme + r0 * H, 0.0f);
    }
    if (!backward)
        return;
    step_layernorm_backward(w->dme, w->ma, w->mst, p->mlm_ln_g, n, H, w->dme, g->mlm_ln_g,
                            g->mlm_ln_b);
    step_activation_backward(w, w->dme, w->md, n * H, c->activation);
    step_linear_backward(w, w->dme, H, w->mg, n, H, p->mlm_dense_w, H, g->mlm_dense_w,
                         g->mlm_dense_b, w->md, 0.0f);
    for (size_t r = 0; r < n; r++) {
        float *d = w->dx + w->rows[r] * H;
        for (size_t k = 0; k < H; k++)
            d[k] += w->md[r * H + k];
    }
}

/* Multi-label loss of one logits row: the mean over the n labels of
 * BCE(sigmoid(z), y) = max(z, 0) - z y + log(1 + exp(-|z|)) (the stable
 * form BCEWithLogitsLoss uses); with grad_scale != 0 the row becomes
 * grad_scale * (sigmoid(z) - y) / n. *exact counts a row whose predicted
 * set (z > 0) equals the gold one. */
static double binary_cross_entropy(float *row, const float *y, size_t n, float grad_scale,
                                   size_t *exact)
{
    double loss = 0.0;
    bool all = true;
    for (size_t j = 0; j < n; j++) {
        const double z = row[j];
        loss += fmax(z, 0.0) - z * y[j] + log1p(exp(-fabs(z)));
        all = all && (z > 0.0) == (y[j] > 0.5f);
        if (grad_scale != 0.0f)
            row[j] = (float)((1.0 / (1.0 + exp(-z)) - y[j]) * grad_scale / (double)n);
    }
    *exact += all;
    return loss / (double)n;
}

/* Regression loss of one single-logit row: (z - y)^2; with grad_scale != 0
 * the row becomes grad_scale * 2 (z - y). */
static double squared_error(float *row, float y, float grad_scale)
{
    const double d = (double)row[0] - y;
    if (grad_scale != 0.0f)
        row[0] = (float)(2.0 * d * grad_scale);
    return d * d;
}

/* The token the classifier reads: [CLS], or for a causal model the last
 * token, the only one that has seen the whole sequence. */
static size_t pooled_token(const struct bert_config *c, const struct bert_batch *b, size_t i)
{
    return c->is_decoder ? b->seq_start[i + 1] - 1 : b->seq_start[i];
}

/* Pooler (dense + tanh on the pooled token) and classifier; with backward
 * (and an encoder that trains) its gradient lands in dx. */
void step_cls_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                   const struct dropout *drop, bool backward, bool into_encoder,
                   struct train_stats *st)
{
    const struct bert_config *c = &m->config;
    const struct train_view *p = &m->p;
    struct train_view *g = &m->g;
    const size_t H = c->hidden_size, C = c->num_labels, n = tb->b.n_seqs;
    const float *hidden = w->x[c->num_layers];
    for (size_t i = 0; i < n; i++)
        memcpy(w->cg + i * H, hidden + pooled_token(c, &tb->b, i) * H, H * sizeof(float));
    step_linear_forward(w, w->cg, n, H, p->pooler_w, p->pooler_b, H, w->pooled, H);
    for (size_t i = 0; i < n * H; i++)
        w->pooled[i] = tanhf(w->pooled[i]);
    step_dropout_apply(drop, DROP_POOLED(c->num_layers), w->pooled, w->pooled, n * H);
    step_linear_forward(w, w->pooled, n, H, p->classifier_w, p->classifier_b, C, w->cls_logits, C);
    const float scale = backward ? 1.0f / (float)n : 0.0f;
    for (size_t i = 0; i < n; i++) {
        float *row = w->cls_logits + i * C;
        if (tb->cls_logits != NULL)
            memcpy(tb->cls_logits + i * C, row, C * sizeof *row);
        if (tb->cls_pred != NULL) {
            size_t best = 0;
            for (size_t k = 1; k < C; k++)
                best = row[k] > row[best] ? k : best;
            tb->cls_pred[i] = (int32_t)best;
        }
        if (tb->cls_labels != NULL) {
            bool ok;
            st->cls_loss_sum += cross_entropy(row, C, tb->cls_labels[i], scale, &ok);
            st->cls_correct += ok;
        } else if (tb->cls_targets != NULL) {
            st->cls_loss_sum += c->problem_type == BERT_PROBLEM_MULTI_LABEL
                                    ? binary_cross_entropy(row, tb->cls_targets + i * C, C,
                                                           scale, &st->cls_correct)
                                    : squared_error(row, tb->cls_targets[i], scale);
        }
    }
    const bool supervised = tb->cls_labels != NULL || tb->cls_targets != NULL;
    st->cls_count = supervised ? n : 0;
    if (!backward || !supervised)
        return;
    step_linear_backward(w, w->cls_logits, C, w->pooled, n, H, p->classifier_w, C, g->classifier_w,
                         g->classifier_b, w->dpool, 0.0f);
    /* pooled holds tanh * mask / keep; where the mask is 0 so is dpool. */
    step_dropout_apply(drop, DROP_POOLED(c->num_layers), w->dpool, w->dpool, n * H);
    for (size_t i = 0; i < n * H; i++) {
        float y = w->pooled[i] * drop->keep;
        w->dpool[i] *= 1.0f - y * y;
    }
    step_linear_backward(w, w->dpool, H, w->cg, n, H, p->pooler_w, H, g->pooler_w, g->pooler_b,
                         into_encoder ? w->cg : NULL, 0.0f);
    if (into_encoder)
        for (size_t i = 0; i < n; i++) {
            float *d = w->dx + pooled_token(c, &tb->b, i) * H;
            for (size_t k = 0; k < H; k++)
                d[k] += w->cg[i * H + k];
        }
}


/* BertForTokenClassification: the classifier on every labelled token's
 * final hidden state (after dropout), mean cross-entropy over those tokens.
 * Uses the sequence classifier's buffers (a model has one or the other):
 * cg the gathered rows, pooled the dropped-out rows, cls_logits the logits,
 * dpool their gradient. */
void step_token_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                     const struct dropout *drop, bool backward, bool into_encoder,
                     struct train_stats *st)
{
    const struct bert_config *c = &m->config;
    const struct train_view *p = &m->p;
    struct train_view *g = &m->g;
    const size_t H = c->hidden_size, C = c->num_labels;
    const float *hidden = w->x[c->num_layers];
    size_t n = 0;
    for (size_t t = 0; t < tb->b.n_tokens; t++)
        if (tb->token_labels[t] != -100) {
            w->rows[n] = t;
            memcpy(w->cg + n++ * H, hidden + t * H, H * sizeof(float));
        }
    st->token_count = n;
    if (n == 0)
        return;
    step_dropout_apply(drop, DROP_TOKENS(c->num_layers), w->cg, w->pooled, n * H);
    const float *in = drop->cut ? w->pooled : w->cg;
    step_linear_forward(w, in, n, H, p->classifier_w, p->classifier_b, C, w->cls_logits, C);
    const float scale = backward ? 1.0f / (float)n : 0.0f;
    for (size_t r = 0; r < n; r++) {
        float *row = w->cls_logits + r * C;
        const size_t t = w->rows[r];
        if (tb->token_pred != NULL)
            tb->token_pred[t] = (int32_t)first_argmax(row, C);
        bool ok;
        st->token_loss_sum += cross_entropy(row, C, tb->token_labels[t], scale, &ok);
        st->token_correct += ok;
    }
    if (!backward)
        return;
    step_linear_backward(w, w->cls_logits, C, in, n, H, p->classifier_w, C, g->classifier_w,
                         g->classifier_b, into_encoder ? w->dpool : NULL, 0.0f);
    if (!into_encoder)
        return;
    step_dropout_apply(drop, DROP_TOKENS(c->num_layers), w->dpool, w->dpool, n * H);
    for (size_t r = 0; r < n; r++) {
        float *d = w->dx + w->rows[r] * H;
        for (size_t k = 0; k < H; k++)
            d[k] += w->dpool[r * H + k];
    }
}

#include "step_heads.h"
#include "step_ops.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels.h"
#include "simd.h"
#include "team.h"
#include "vmath.h"

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

struct train_work *train_work_new(const struct train_model *m, size_t max_tokens,
                                  size_t max_seq_len, size_t threads, struct bert_error *err)
{
    const struct bert_config *c = &m->config;
    if (max_tokens == 0 || max_seq_len == 0 || max_seq_len > max_tokens ||
        max_seq_len > c->max_position_embeddings) {
        bert_error_set(err, BERT_E_INVALID,
                       "work sizes must satisfy 0 < max_seq_len (%zu) <= max_tokens (%zu) and "
                       "max_seq_len <= positions (%zu)",
                       max_seq_len, max_tokens, c->max_position_embeddings);
        return NULL;
    }
    struct train_work *w = calloc(1, sizeof *w);
    if (w == NULL) {
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return NULL;
    }
    w->team = bert_team_new(threads, err);
    if (w->team == NULL) {
        free(w);
        return NULL;
    }
    const size_t T = max_tokens, S = max_seq_len, H = c->hidden_size, FF = c->intermediate_size;
    const size_t L = c->num_layers, A = c->num_heads, V = c->vocab_size;
    const size_t members = bert_team_size(w->team);
    const size_t TH = round16(T * H), TI = round16(T * FF), T2 = round16(2 * T);
    const size_t probs = round16(A * T * S);
    size_t per_layer = 3 * TH /* qkv */ + probs + TH + TH + T2 + TH + 2 * TI + TH + T2;
    size_t total = (L + 1) * TH + TH + T2 + L * per_layer      /* activations */
                   + 3 * TH + 3 * TH + TI + members * round16(S * S) /* gradients */
                   + 5 * TH + T2 + round16(MLM_BLOCK * V)    /* MLM head */
                   + 3 * TH + round16(T * c->num_labels);    /* classifier */
    w->memory = aligned_alloc(64, total * sizeof(float));
    w->x = calloc(L + 1, sizeof *w->x);
    w->acts = calloc(L, sizeof *w->acts);
    w->prob_offset = calloc(T + 1, sizeof *w->prob_offset);
    w->rows = calloc(T, sizeof *w->rows);
    if (w->memory == NULL || w->x == NULL || w->acts == NULL || w->prob_offset == NULL ||
        w->rows == NULL) {
        train_work_free(w);
        bert_error_set(err, BERT_E_NOMEM, "out of memory allocating %zu MiB of training work",
                       total * sizeof(float) >> 20);
        return NULL;
    }
    w->bytes = total * sizeof(float);
    w->max_tokens = T;
    w->max_seq_len = S;
    float *p = w->memory;
#define TAKE(n) (p += (n), p - (n))
    for (size_t l = 0; l <= L; l++)
        w->x[l] = TAKE(TH);
    w->z0 = TAKE(TH);
    w->st0 = TAKE(T2);
    for (size_t l = 0; l < L; l++) {
        struct layer_acts *a = &w->acts[l];
        a->qkv = TAKE(3 * TH);
        a->probs = TAKE(probs);
        a->ctx = TAKE(TH);
        a->z1 = TAKE(TH);
        a->st1 = TAKE(T2);
        a->h1 = TAKE(TH);
        a->u = TAKE(TI);
        a->a = TAKE(TI);
        a->z2 = TAKE(TH);
        a->st2 = TAKE(T2);
    }
    w->dx = TAKE(TH);
    w->dh = TAKE(TH);
    w->dctx = TAKE(TH);
    w->dqkv = TAKE(3 * TH);
    w->du = TAKE(TI);
    w->dp = TAKE(members * round16(S * S));
    w->mg = TAKE(TH);
    w->md = TAKE(TH);
    w->ma = TAKE(TH);
    w->me = TAKE(TH);
    w->dme = TAKE(TH);
    w->mst = TAKE(T2);
    w->logits = TAKE(round16(MLM_BLOCK * V));
    w->cg = TAKE(TH);
    w->pooled = TAKE(TH);
    w->dpool = TAKE(TH);
    w->cls_logits = TAKE(round16(T * c->num_labels));
#undef TAKE
    return w;
}

void train_work_free(struct train_work *w)
{
    if (w == NULL)
        return;
    bert_team_free(w->team);
    free(w->memory);
    free(w->x);
    free(w->acts);
    free(w->prob_offset);
    free(w->rows);
    free(w);
}

size_t train_work_bytes(const struct train_work *w) { return w->bytes; }

/* ---- attention ----------------------------------------------------------- */

struct attention_job {
    struct train_work *w;
    const struct bert_batch *b;
    struct layer_acts *acts;
    size_t H, A;
    bool causal, backward;
};

/* Forward: P = softmax(Q K^T / sqrt(D)), ctx = P V (Vaswani et al. 2017).
 * Backward: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)),
 * dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D). One (sequence, head) at a
 * time; packed sequences never see each other. Causal attention (a decoder)
 * lets row r see columns 0..r only: P is 0 beyond, so the backward
 * formulas hold unchanged. */
static void attention_member(void *arg, size_t member, size_t n_members)
{
    (void)n_members;
    const struct attention_job *j = arg;
    struct train_work *w = j->w;
    const size_t H = j->H, A = j->A, D = H / A, ld = 3 * H, items = j->b->n_seqs * A;
    const float scale = 1.0f / sqrtf((float)D);
    float *dp = w->dp + member * round16(w->max_seq_len * w->max_seq_len);
    size_t item;
    while ((item = atomic_fetch_add_explicit(&w->next_item, 1, memory_order_relaxed)) < items) {
        const size_t i = item / A, h = item % A;
        const size_t r0 = j->b->seq_start[i], n = j->b->seq_start[i + 1] - r0;
        const float *q = j->acts->qkv + r0 * ld + h * D, *k = q + H, *v = q + 2 * H;
        float *p = j->acts->probs + w->prob_offset[i] + h * n * n;
        if (!j->backward) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)D, scale,
                        q, (int)ld, k, (int)ld, 0.0f, p, (int)n);
            if (j->causal)
                for (size_t r = 0; r < n; r++) {
                    kernel_softmax_rows(p + r * n, 1, r + 1, n);
                    memset(p + r * n + r + 1, 0, (n - r - 1) * sizeof *p);
                }
            else
                kernel_softmax_rows(p, n, n, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)D, (int)n, 1.0f,
                        p, (int)n, v, (int)ld, 0.0f, j->acts->ctx + r0 * H + h * D, (int)H);
            continue;
        }
        const float *dout = w->dctx + r0 * H + h * D;
        float *dq = w->dqkv + r0 * ld + h * D, *dk = dq + H, *dv = dq + 2 * H;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)D, 1.0f, dout,
                    (int)H, v, (int)ld, 0.0f, dp, (int)n);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)D, (int)n, 1.0f, p,
                    (int)n, dout, (int)H, 0.0f, dv, (int)ld);
        for (size_t r = 0; r < n; r++) {
            float dot = 0.0f;
            for (size_t c = 0; c < n; c++)
                dot += dp[r * n + c] * p[r * n + c];
            for (size_t c = 0; c < n; c++)
                dp[r * n + c] = p[r * n + c] * (dp[r * n + c] - dot);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)D, (int)n, scale, dp,
                    (int)n, k, (int)ld, 0.0f, dq, (int)ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)D, (int)n, scale, dp,
                    (int)n, q, (int)ld, 0.0f, dk, (int)ld);
    }
}

static void attention(struct train_work *w, const struct bert_batch *b, struct layer_acts *acts,
                      const struct bert_config *c, bool backward)
{
    struct attention_job j = {w, b, acts, c->hidden_size, c->num_heads, c->is_decoder, backward};
    atomic_store_explicit(&w->next_item, 0, memory_order_relaxed);
    bert_team_run(w->team, attention_member, &j);
}

/* ---- dropout -------------------------------------------------------------- */

static struct dropout dropout_of(const struct train_batch *tb)
{
    float p = tb->dropout > 0.0f && tb->dropout < 1.0f ? tb->dropout : 0.0f;
    return (struct dropout){tb->dropout_seed, (uint32_t)((double)p * 4294967296.0),
                            1.0f / (1.0f - p), 1.0f - p};
}

/* The gradient src through site's mask: src itself when nothing drops
 * (no copy on the hot path), else the masked gradient written to spare. */
static const float *dropout_grad(const struct dropout *d, unsigned site, const float *src,
                                 float *spare, size_t n)
{
    if (d->cut == 0)
        return src;
    step_dropout_apply(d, site, src, spare, n);
    return spare;
}

/* ---- the network --------------------------------------------------------- */

static void embed_forward(const struct train_model *m, struct train_work *w,
                          const struct bert_batch *b, const struct dropout *d)
{
    const size_t H = m->config.hidden_size;
    const struct train_view *p = &m->p;
    for (size_t i = 0; i < b->n_seqs; i++)
        for (size_t t = b->seq_start[i]; t < b->seq_start[i + 1]; t++) {
            const float *we = p->word_emb + (size_t)b->ids[t] * H;
            const float *pe = p->pos_emb + (t - b->seq_start[i]) * H;
            const float *te = p->type_emb + (size_t)b->type_ids[t] * H;
            for (size_t k = 0; k < H; k++)
                w->z0[t * H + k] = we[k] + pe[k] + te[k];
        }
    step_layernorm_forward(w->z0, p->emb_ln_g, p->emb_ln_b, b->n_tokens, H,
                           m->config.layer_norm_eps, w->x[0], w->st0);
    step_dropout_apply(d, DROP_EMBED, w->x[0], w->x[0], b->n_tokens * H);
}

static void embed_backward(struct train_model *m, struct train_work *w,
                           const struct bert_batch *b, const struct dropout *d, float *dx)
{
    const size_t H = m->config.hidden_size;
    struct train_view *g = &m->g;
    step_dropout_apply(d, DROP_EMBED, dx, dx, b->n_tokens * H);
    step_layernorm_backward(dx, w->z0, w->st0, m->p.emb_ln_g, b->n_tokens, H, dx, g->emb_ln_g,
                            g->emb_ln_b);
    for (size_t i = 0; i < b->n_seqs; i++)
        for (size_t t = b->seq_start[i]; t < b->seq_start[i + 1]; t++) {
            float *gw = g->word_emb + (size_t)b->ids[t] * H;
            float *gp = g->pos_emb + (t - b->seq_start[i]) * H;
            float *gt = g->type_emb + (size_t)b->type_ids[t] * H;
            for (size_t k = 0; k < H; k++) {
                gw[k] += dx[t * H + k];
                gp[k] += dx[t * H + k];
                gt[k] += dx[t * H + k];
            }
        }
}

static void layer_forward(const struct train_model *m, struct train_work *w,
                          const struct bert_batch *b, const struct dropout *d, size_t l)
{
    const struct bert_config *c = &m->config;
    const struct train_layer *p = &m->p.layers[l];
    struct layer_acts *a = &w->acts[l];
    const size_t T = b->n_tokens, H = c->hidden_size, FF = c->intermediate_size;
    const float *x = w->x[l];
    step_linear_forward(w, x, T, H, p->query_w, p->query_b, H, a->qkv, 3 * H);
    step_linear_forward(w, x, T, H, p->key_w, p->key_b, H, a->qkv + H, 3 * H);
    step_linear_forward(w, x, T, H, p->value_w, p->value_b, H, a->qkv + 2 * H, 3 * H);
    attention(w, b, a, c, false);
    step_linear_forward(w, a->ctx, T, H, p->attn_out_w, p->attn_out_b, H, a->z1, H);
    step_dropout_apply(d, DROP_ATTN(l), a->z1, a->z1, T * H);
    for (size_t i = 0; i < T * H; i++)
        a->z1[i] += x[i];
    step_layernorm_forward(a->z1, p->attn_ln_g, p->attn_ln_b, T, H, c->layer_norm_eps, a->h1,
                           a->st1);
    step_gemm(w, false, true, T, FF, H, 1.0f, a->h1, H, p->ffn_in_w, H, 0.0f, a->u, FF);
    step_bias_activation_forward(a->u, p->ffn_in_b, a->a, T, FF, c->activation);
    step_linear_forward(w, a->a, T, FF, p->ffn_out_w, p->ffn_out_b, H, a->z2, H);
    step_dropout_apply(d, DROP_FFN(l), a->z2, a->z2, T * H);
    for (size_t i = 0; i < T * H; i++)
        a->z2[i] += a->h1[i];
    step_layernorm_forward(a->z2, p->ffn_ln_g, p->ffn_ln_b, T, H, c->layer_norm_eps, w->x[l + 1],
                           a->st2);
}

/* In: dx = dLoss/d(layer output). Out: dx = dLoss/d(layer input). */
static void layer_backward(struct train_model *m, struct train_work *w,
                           const struct bert_batch *b, const struct dropout *d, size_t l)
{
    const struct bert_config *c = &m->config;
    const struct train_layer *p = &m->p.layers[l];
    struct train_layer *g = &m->g.layers[l];
    struct layer_acts *a = &w->acts[l];
    const size_t T = b->n_tokens, H = c->hidden_size, FF = c->intermediate_size;
    /* dh = dz2; then dh = dh1 = dz2 + d(ffn)/dh1. The feed-forward output's
     * gradient (dz2 through the dropout mask) goes through dx, free here. */
    step_layernorm_backward(w->dx, a->z2, a->st2, p->ffn_ln_g, T, H, w->dh, g->ffn_ln_g,
                            g->ffn_ln_b);
    const float *dffn = dropout_grad(d, DROP_FFN(l), w->dh, w->dx, T * H);
    step_linear_backward(w, dffn, H, a->a, T, FF, p->ffn_out_w, H, g->ffn_out_w, g->ffn_out_b,
                         w->du, 0.0f);
    step_activation_backward(w, w->du, a->u, T * FF, c->activation);
    step_linear_backward(w, w->du, FF, a->h1, T, H, p->ffn_in_w, FF, g->ffn_in_w, g->ffn_in_b,
                         w->dh, 1.0f);
    /* dx = dz1; dctx (from dz1 through the dropout mask, in dh, free here);
     * attention; then dx += the Q, K, V paths */
    step_layernorm_backward(w->dh, a->z1, a->st1, p->attn_ln_g, T, H, w->dx, g->attn_ln_g,
                            g->attn_ln_b);
    const float *dattn = dropout_grad(d, DROP_ATTN(l), w->dx, w->dh, T * H);
    step_linear_backward(w, dattn, H, a->ctx, T, H, p->attn_out_w, H, g->attn_out_w, g->attn_out_b,
                         w->dctx, 0.0f);
    attention(w, b, a, c, true);
    const float *x = w->x[l];
    step_linear_backward(w, w->dqkv, 3 * H, x, T, H, p->query_w, H, g->query_w, g->query_b, w->dx,
                         1.0f);
    /* The key bias adds the same q . b to every score of a row, which the
     * softmax cancels: its gradient is exactly 0, so it is left at 0 rather
     * than filled with rounding noise that AdamW would turn into steps. */
    step_linear_backward(w, w->dqkv + H, 3 * H, x, T, H, p->key_w, H, g->key_w, NULL, w->dx, 1.0f);
    step_linear_backward(w, w->dqkv + 2 * H, 3 * H, x, T, H, p->value_w, H, g->value_w, g->value_b,
                         w->dx, 1.0f);
}

static enum bert_status check(const struct train_model *m, const struct train_work *w,
                              const struct train_batch *tb, struct bert_error *err)
{
    const struct bert_config *c = &m->config;
    const struct bert_batch *b = &tb->b;
    const bool targets_head = c->problem_type == BERT_PROBLEM_MULTI_LABEL ||
                              (c->problem_type == BERT_PROBLEM_REGRESSION && c->num_labels == 1);
    if ((tb->mlm_labels != NULL && !m->mlm) ||
        ((tb->cls_labels != NULL || tb->cls_targets != NULL || tb->cls_pred != NULL ||
          tb->cls_logits != NULL) &&
         !m->classifier) ||
        (tb->cls_labels != NULL && (targets_head || c->problem_type == BERT_PROBLEM_REGRESSION)) ||
        (tb->cls_targets != NULL && (!targets_head || tb->cls_labels != NULL)) ||
        ((tb->token_labels != NULL) !=
         (m->classifier && c->token_head == BERT_TOKEN_HEAD_CLASSIFICATION)) ||
        (tb->token_labels != NULL && (tb->cls_labels != NULL || tb->cls_targets != NULL)))
        return bert_error_set(err, BERT_E_INVALID, "the model has no head for this loss");
    if (b->n_seqs == 0 || b->n_tokens > w->max_tokens || b->seq_start[0] != 0 ||
        b->seq_start[b->n_seqs] != b->n_tokens)
        return bert_error_set(err, BERT_E_INVALID,
                              "batch of %zu tokens does not fit the work (%zu) or its offsets "
                              "are inconsistent",
                              b->n_tokens, w->max_tokens);
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (b->seq_start[i + 1] <= b->seq_start[i] ||
            b->seq_start[i + 1] - b->seq_start[i] > w->max_seq_len)
            return bert_error_set(err, BERT_E_INVALID, "sequence %zu has %zu tokens (1..%zu)",
                                  i, b->seq_start[i + 1] - b->seq_start[i], w->max_seq_len);
        if (tb->cls_labels != NULL &&
            (tb->cls_labels[i] < 0 || (size_t)tb->cls_labels[i] >= c->num_labels))
            return bert_error_set(err, BERT_E_INVALID, "sequence %zu: label %d out of range",
                                  i, tb->cls_labels[i]);
    }
    for (size_t t = 0; t < b->n_tokens; t++) {
        const int32_t label = tb->mlm_labels ? tb->mlm_labels[t] : -100;
        const int32_t tag = tb->token_labels ? tb->token_labels[t] : -100;
        if (b->ids[t] < 0 || (size_t)b->ids[t] >= c->vocab_size || b->type_ids[t] < 0 ||
            (size_t)b->type_ids[t] >= c->type_vocab_size ||
            (label != -100 && (label < 0 || (size_t)label >= c->vocab_size)) ||
            (tag != -100 && (tag < 0 || (size_t)tag >= c->num_labels)))
            return bert_error_set(err, BERT_E_INVALID,
                                  "token %zu: id %d, type %d or label %d out of range", t,
                                  b->ids[t], b->type_ids[t], label);
    }
    return BERT_OK;
}

enum bert_status train_step(struct train_model *m, struct train_work *w,
                            const struct train_batch *tb, bool backward, bool freeze_encoder,
                            struct train_stats *st, struct bert_error *err)
{
    enum bert_status s = check(m, w, tb, err);
    if (s != BERT_OK)
        return s;
    const struct bert_config *c = &m->config;
    const struct bert_batch *b = &tb->b;
    const size_t H = c->hidden_size, A = c->num_heads;
    memset(st, 0, sizeof *st);
    w->prob_offset[0] = 0;
    for (size_t i = 0; i < b->n_seqs; i++) {
        size_t n = b->seq_start[i + 1] - b->seq_start[i];
        w->prob_offset[i + 1] = w->prob_offset[i] + A * n * n;
    }
    const struct dropout drop = dropout_of(tb);
    embed_forward(m, w, b, &drop);
    for (size_t l = 0; l < c->num_layers; l++)
        layer_forward(m, w, b, &drop, l);
    const bool encoder_grads = backward && !freeze_encoder;
    if (encoder_grads)
        memset(w->dx, 0, b->n_tokens * H * sizeof(float));
    if (tb->mlm_labels != NULL)
        step_mlm_head(m, w, tb, encoder_grads, st);
    if (tb->token_labels != NULL)
        step_token_head(m, w, tb, &drop, backward, encoder_grads, st);
    else if (tb->cls_labels != NULL || tb->cls_targets != NULL || tb->cls_pred != NULL ||
             tb->cls_logits != NULL)
        step_cls_head(m, w, tb, &drop, backward, encoder_grads, st);
    if (st->mlm_count > 0)
        st->loss += st->mlm_loss_sum / (double)st->mlm_count;
    if (st->cls_count > 0)
        st->loss += st->cls_loss_sum / (double)st->cls_count;
    if (st->token_count > 0)
        st->loss += st->token_loss_sum / (double)st->token_count;
    if (!encoder_grads)
        return BERT_OK;
    for (size_t l = c->num_layers; l-- > 0;)
        layer_backward(m, w, b, &drop, l);
    embed_backward(m, w, b, &drop, w->dx);
    return BERT_OK;
}

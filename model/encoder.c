#include "encoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "attention.h"
#include "kernels.h"
#include "scratch.h"

/* Views are 64-byte aligned so GEMMs and vector loops start on cache lines. */
static size_t round_floats(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

struct bert_scratch *bert_scratch_new(const struct bert_model *model, size_t max_tokens,
                                      size_t max_seq_len, struct bert_error *err)
{
    const struct bert_config *c = &model->config;
    if (max_tokens == 0 || max_seq_len == 0 || max_seq_len > max_tokens) {
        bert_error_set(err, BERT_E_INVALID,
                       "scratch sizes must satisfy 0 < max_seq_len (%zu) <= max_tokens (%zu)",
                       max_seq_len, max_tokens);
        return NULL;
    }
    const size_t T = max_tokens, H = c->hidden_size, FF = c->intermediate_size;
    size_t sizes[] = {
        round_floats(T * H),                         /* x */
        round_floats(T * 3 * H),                     /* qkv */
        round_floats(T * H),                         /* ctx */
        round_floats(T * H),                         /* tmp */
        round_floats(T * FF),                         /* ffn */
        round_floats(attention_workspace_floats(max_seq_len, H / c->num_heads)), /* attention */
        model->weights.mlm_dense_w ? round_floats(MLM_ROW_BLOCK * c->vocab_size) : 0,
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        total += sizes[i];

    struct bert_scratch *s = calloc(1, sizeof *s);
    float *mem = s ? aligned_alloc(64, total * sizeof(float)) : NULL;
    if (mem == NULL) {
        free(s);
        bert_error_set(err, BERT_E_NOMEM, "out of memory allocating %zu MiB of scratch",
                       total * sizeof(float) >> 20);
        return NULL;
    }
    s->memory = mem;
    s->bytes = total * sizeof(float);
    s->max_tokens = max_tokens;
    s->max_seq_len = max_seq_len;
    float **views[] = {&s->x, &s->qkv, &s->ctx, &s->tmp, &s->ffn, &s->attn, &s->logits};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *views[i] = sizes[i] ? mem : NULL;
        mem += sizes[i];
    }
    return s;
}

void bert_scratch_free(struct bert_scratch *s)
{
    if (s == NULL)
        return;
    free(s->memory);
    free(s);
}

size_t bert_scratch_max_tokens(const struct bert_scratch *s) { return s->max_tokens; }
size_t bert_scratch_max_seq_len(const struct bert_scratch *s) { return s->max_seq_len; }
size_t bert_scratch_bytes(const struct bert_scratch *s) { return s->bytes; }

/* Y (rows, out) = X (rows, in) W^T, with W (out, in) as torch.nn.Linear
 * stores it; the bias is left to the fused kernel that follows. */
static void linear(const float *x, size_t rows, size_t in, const float *w, size_t out, float *y,
                   size_t ldy)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)out, (int)in, 1.0f, x,
                (int)in, w, (int)in, 0.0f, y, (int)ldy);
}

static enum bert_status check_batch(const struct bert_model *model, const struct bert_scratch *s,
                                    const struct bert_batch *b, struct bert_error *err)
{
    const struct bert_config *c = &model->config;
    if (b->n_tokens > s->max_tokens || b->seq_start[0] != 0 ||
        b->seq_start[b->n_seqs] != b->n_tokens)
        return bert_error_set(err, BERT_E_INVALID,
                              "batch of %zu tokens does not fit the scratch (%zu) or its "
                              "sequence offsets are inconsistent",
                              b->n_tokens, s->max_tokens);
    for (size_t i = 0; i < b->n_seqs; i++) {
        size_t n = b->seq_start[i + 1] - b->seq_start[i];
        if (b->seq_start[i + 1] < b->seq_start[i] || n == 0 || n > s->max_seq_len ||
            n > c->max_position_embeddings)
            return bert_error_set(err, BERT_E_INVALID,
                                  "sequence %zu has %zu tokens (must be 1..%zu)", i, n,
                                  s->max_seq_len < c->max_position_embeddings
                                      ? s->max_seq_len
                                      : c->max_position_embeddings);
    }
    for (size_t t = 0; t < b->n_tokens; t++) {
        if (b->ids[t] < 0 || (size_t)b->ids[t] >= c->vocab_size || b->type_ids[t] < 0 ||
            (size_t)b->type_ids[t] >= c->type_vocab_size)
            return bert_error_set(err, BERT_E_INVALID,
                                  "token %zu: id %d / type id %d out of range (vocab %zu, types "
                                  "%zu)",
                                  t, b->ids[t], b->type_ids[t], c->vocab_size,
                                  c->type_vocab_size);
    }
    return BERT_OK;
}

/* x = LayerNorm(word + position + token type) (BERT sec. 3.2). Positions
 * restart at 0 for every packed sequence. */
static void embed(const struct bert_model *model, const struct bert_batch *b, float *x)
{
    const struct bert_weights *w = &model->weights;
    const size_t H = model->config.hidden_size;
    for (size_t i = 0; i < b->n_seqs; i++) {
        for (size_t t = b->seq_start[i]; t < b->seq_start[i + 1]; t++) {
            size_t pos = t - b->seq_start[i];
            const float *we = w->word_emb + (size_t)b->ids[t] * H;
            const float *pe = w->pos_emb + pos * H;
            const float *te = w->type_emb + (size_t)b->type_ids[t] * H;
            float *row = x + t * H;
            for (size_t k = 0; k < H; k++)
                row[k] = we[k] + pe[k] + te[k];
        }
    }
    kernel_add_layernorm(x, NULL, NULL, w->emb_ln_g, w->emb_ln_b, b->n_tokens, H,
                         model->config.layer_norm_eps);
}

/* Attention per sequence and head: sequences never see each other's tokens,
 * which is what packing without padding needs. */
static void attention(const struct bert_model *model, struct bert_scratch *s,
                      const struct bert_batch *b)
{
    const size_t H = model->config.hidden_size, A = model->config.num_heads, D = H / A;
    const size_t ld = 3 * H;
    const float scale = 1.0f / sqrtf((float)D);
    for (size_t i = 0; i < b->n_seqs; i++) {
        size_t r0 = b->seq_start[i], n = b->seq_start[i + 1] - r0;
        for (size_t h = 0; h < A; h++) {
            const float *q = s->qkv + r0 * ld + h * D;
            attention_head(q, q + H, q + 2 * H, ld, n, D, scale, s->ctx + r0 * H + h * D, H,
                           s->attn);
        }
    }
}

static void layer_forward(const struct bert_model *model, const struct bert_layer_weights *l,
                          struct bert_scratch *s, const struct bert_batch *b)
{
    const struct bert_config *c = &model->config;
    const size_t T = b->n_tokens, H = c->hidden_size, FF = c->intermediate_size;

    /* Q, K and V land side by side in one (T, 3H) matrix. */
    linear(s->x, T, H, l->query_w, H, s->qkv, 3 * H);
    linear(s->x, T, H, l->key_w, H, s->qkv + H, 3 * H);
    linear(s->x, T, H, l->value_w, H, s->qkv + 2 * H, 3 * H);
    kernel_add_bias(s->qkv, l->query_b, T, H, 3 * H);
    kernel_add_bias(s->qkv + H, l->key_b, T, H, 3 * H);
    kernel_add_bias(s->qkv + 2 * H, l->value_b, T, H, 3 * H);
    attention(model, s, b);

    /* Post-LN residual blocks (BERT keeps the original Transformer order). */
    linear(s->ctx, T, H, l->attn_out_w, H, s->tmp, H);
    kernel_add_layernorm(s->tmp, s->x, l->attn_out_b, l->attn_ln_g, l->attn_ln_b, T, H,
                         c->layer_norm_eps);
    float *swap = s->x;
    s->x = s->tmp;
    s->tmp = swap;

    linear(s->x, T, H, l->ffn_in_w, FF, s->ffn, FF);
    kernel_bias_activation(s->ffn, l->ffn_in_b, T, FF, c->activation);
    linear(s->ffn, T, FF, l->ffn_out_w, H, s->tmp, H);
    kernel_add_layernorm(s->tmp, s->x, l->ffn_out_b, l->ffn_ln_g, l->ffn_ln_b, T, H,
                         c->layer_norm_eps);
    swap = s->x;
    s->x = s->tmp;
    s->tmp = swap;
}

enum bert_status bert_encode(const struct bert_model *model, struct bert_scratch *s,
                             const struct bert_batch *batch, const float **hidden,
                             struct bert_error *err)
{
    enum bert_status st = check_batch(model, s, batch, err);
    if (st != BERT_OK)
        return st;
    embed(model, batch, s->x);
    for (size_t l = 0; l < model->config.num_layers; l++)
        layer_forward(model, &model->weights.layers[l], s, batch);
    *hidden = s->x;
    return BERT_OK;
}

/* The ModernBERT encoder (family.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"
#include "engine.h"
#include "family.h"
#include "kernels.h"
#include "rope.h"

/* dst rows [r0, r1) = LayerNorm(src rows) (no residual). */
static void norm_rows(const float *src, float *dst, size_t r0, size_t r1, size_t H,
                      const float *g, const float *beta, float eps)
{
    memcpy(dst + r0 * H, src + r0 * H, (r1 - r0) * H * sizeof *dst);
    kernel_add_layernorm(dst + r0 * H, NULL, NULL, g, beta, r1 - r0, H, eps);
}

/* x rows [r0, r1) += y + bias: the pre-norm residual. */
static void add_residual(float *x, const float *y, const float *bias, size_t r0, size_t r1,
                         size_t H)
{
    for (size_t r = r0; r < r1; r++)
        for (size_t k = 0; k < H; k++)
            x[r * H + k] += y[r * H + k] + bias[k];
}

/* Everyone's columns of a product are needed before any row-wise step when
 * products are split by columns. */
static void sync_cols(const struct bert_share *p, struct bert_team *team)
{
    if (!p->by_rows)
        bert_team_barrier(team);
}

static void layer_forward(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *b, const struct bert_share *p, size_t i)
{
    const struct bert_config *c = &model->config;
    const struct bert_layer_weights *l = &model->engine->weights.layers[i];
    const size_t H = c->hidden_size, I = c->intermediate_size;
    const size_t r0 = p->r0, r1 = p->r1;
    const float eps = c->layer_norm_eps;
    const bool global = i % c->modern.global_attn_every == 0;

    /* Attention block: h = attn_norm(x) (layer 0: x itself). */
    const float *h = s->x;
    if (l->attn_ln_g != NULL) {
        norm_rows(s->x, s->tmp, r0, r1, H, l->attn_ln_g, l->attn_ln_b, eps);
        h = s->tmp;
        sync_cols(p, s->team);
    }
    bert_linear_share_bias(p, h, H, &l->query, 3 * H, s->qkv, 3 * H, l->query_b, NULL, false);
    bert_team_barrier(s->team);
    const struct bert_engine *e = model->engine;
    rope_rotate_rows(b, s->qkv, r0, r1, H, c->num_heads, global ? e->rope_global : e->rope_local);
    if (p->member == 0)
        atomic_store_explicit(&s->next_item, 0, memory_order_relaxed);
    bert_team_barrier(s->team);
    attention_member(model, s, b, p->member,
                          global ? SIZE_MAX : c->modern.local_window / 2);
    bert_team_barrier(s->team);
    bert_linear_share(p, s->ctx, H, &l->attn_out, H, s->tmp, H);
    sync_cols(p, s->team);
    add_residual(s->x, s->tmp, l->attn_out_b, r0, r1, H);

    /* MLP block: GeGLU, Wo(act(input) * gate) with input, gate = Wi(h). */
    norm_rows(s->x, s->tmp, r0, r1, H, l->ffn_ln_g, l->ffn_ln_b, eps);
    sync_cols(p, s->team);
    bert_linear_share_bias(p, s->tmp, H, &l->ffn_in, 2 * I, s->ffn, 2 * I, l->ffn_in_b, NULL,
                           false);
    sync_cols(p, s->team);
    kernel_bias_activation(s->ffn + r0 * 2 * I, model->engine->weights.zeros, r1 - r0, I, 2 * I,
                           c->activation);
    float *glu = s->qkv; /* (T, I); attention is done with qkv */
    for (size_t r = r0; r < r1; r++) {
        const float *in = s->ffn + r * 2 * I;
        for (size_t k = 0; k < I; k++)
            glu[r * I + k] = in[k] * in[I + k];
    }
    sync_cols(p, s->team);
    bert_linear_share(p, glu, I, &l->ffn_out, H, s->tmp, H);
    sync_cols(p, s->team);
    add_residual(s->x, s->tmp, l->ffn_out_b, r0, r1, H);
    /* Always: glu rows are I floats apart, qkv rows 3H, so one member's
     * next QKV rows overlap another's glu rows. */
    bert_team_barrier(s->team);
}

void family_modernbert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                              const struct bert_batch *b, const struct bert_share *p)
{
    const struct bert_config *c = &model->config;
    const struct bert_weights *w = &model->engine->weights;
    const size_t H = c->hidden_size;
    for (size_t t = p->r0; t < p->r1; t++)
        memcpy(s->x + t * H, w->word_emb + (size_t)b->ids[t] * H, H * sizeof(float));
    kernel_add_layernorm(s->x + p->r0 * H, NULL, NULL, w->emb_ln_g, w->emb_ln_b, p->r1 - p->r0,
                         H, c->layer_norm_eps);
    sync_cols(p, s->team);
    for (size_t i = 0; i < c->num_layers; i++)
        layer_forward(model, s, b, p, i);
    kernel_add_layernorm(s->x + p->r0 * H, NULL, NULL, w->final_ln_g, w->final_ln_b,
                         p->r1 - p->r0, H, c->layer_norm_eps);
}

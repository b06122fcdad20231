/* The post-LN gated MLP sub-layer NomicBERT and JinaBERT share (Shazeer
 * 2020, "GLU Variants Improve Transformer"): out = LayerNorm(W2(a * b) + x),
 * where one of a, b goes through the activation. */
#include "engine.h"
#include "family.h"
#include "kernels.h"

/* Everyone's columns of a product are needed before any row-wise step when
 * products are split by columns. */
static void sync_cols(const struct bert_share *p, struct bert_team *team)
{
    if (!p->by_rows)
        bert_team_barrier(team);
}

void family_glu_ffn(const struct bert_model *model, struct bert_scratch *s,
                    const struct bert_layer_weights *l, const struct bert_share *p,
                    const float *x, float *out)
{
    const struct bert_config *c = &model->config;
    const size_t H = c->hidden_size, I = c->intermediate_size, rows = p->r1 - p->r0;
    /* JinaBERT activates the first half; NomicBERT's fc12 and GTE's gate
     * (up_gate_proj's second half) are the second. */
    const bool act_first = c->family == BERT_FAMILY_JINA_BERT;
    /* Both halves side by side in ffn (T, 2I): one product of 2I rows, or
     * NomicBERT's fc11 and fc12, each with its bias and the activated one
     * with its activation in the same pass. */
    if (l->ffn_gate.w != NULL) {
        bert_linear_share_bias(p, x, H, &l->ffn_in, I, s->ffn, 2 * I, l->ffn_in_b,
                               act_first ? &c->activation : NULL, false);
        bert_linear_share_bias(p, x, H, &l->ffn_gate, I, s->ffn + I, 2 * I, l->ffn_gate_b,
                               act_first ? NULL : &c->activation, false);
        sync_cols(p, s->team);
    } else {
        bert_linear_share_bias(p, x, H, &l->ffn_in, 2 * I, s->ffn, 2 * I, l->ffn_in_b, NULL,
                               false);
        sync_cols(p, s->team);
        kernel_bias_activation(s->ffn + p->r0 * 2 * I + (act_first ? 0 : I),
                               model->engine->weights.zeros, rows, I, 2 * I, c->activation);
    }
    float *glu = s->qkv; /* (T, I); attention is done with qkv */
    for (size_t r = p->r0; r < p->r1; r++) {
        const float *in = s->ffn + r * 2 * I;
        for (size_t k = 0; k < I; k++)
            glu[r * I + k] = in[k] * in[I + k];
    }
    sync_cols(p, s->team);
    bert_linear_share(p, glu, I, &l->ffn_out, H, out, H);
    sync_cols(p, s->team);
    kernel_add_layernorm(out + p->r0 * H, x + p->r0 * H, l->ffn_out_b, l->ffn_ln_g, l->ffn_ln_b,
                         rows, H, c->layer_norm_eps);
}

/* The NomicBERT encoder (Nussbaum et al. 2024, "Nomic Embed"; the remote
 * code modeling_hf_nomic_bert.py): BERT's post-LN blocks with rotary
 * positions (Su et al. 2021, GPT-NeoX halves, one base for every layer)
 * applied to the query and key of a fused Wqkv, and a gated MLP
 * fc2(fc11(x) * act(fc12(x))) (Shazeer 2020: SwiGLU with silu, GeGLU with
 * gelu). Embeddings are word + token type, then emb_ln; no positions. */
#include <stdint.h>

#include "attention.h"
#include "engine.h"
#include "family.h"
#include "kernels.h"
#include "rope.h"

/* Everyone's columns of a product are needed before any row-wise step when
 * products are split by columns. */
static void sync_cols(const struct bert_share *p, struct bert_team *team)
{
    if (!p->by_rows)
        bert_team_barrier(team);
}

/* Attention: Wqkv, RoPE on queries and keys, softmax attention, out_proj;
 * then norm1(out + x) into *tmp. */
static void attention_block(const struct bert_model *model, struct bert_scratch *s,
                            const struct bert_batch *b, const struct bert_layer_weights *l,
                            const struct bert_share *p, const float *x, float *out)
{
    const struct bert_config *c = &model->config;
    const size_t H = c->hidden_size, rows = p->r1 - p->r0;
    bert_linear_share_bias(p, x, H, &l->query, 3 * H, s->qkv, 3 * H, l->query_b, NULL, false);
    bert_team_barrier(s->team);
    rope_rotate_rows(b, s->qkv, p->r0, p->r1, H, c->num_heads, model->engine->rope_global);
    if (p->member == 0)
        atomic_store_explicit(&s->next_item, 0, memory_order_relaxed);
    bert_team_barrier(s->team);
    attention_member(model, s, b, p->member, SIZE_MAX);
    bert_team_barrier(s->team);
    bert_linear_share(p, s->ctx, H, &l->attn_out, H, out, H);
    sync_cols(p, s->team);
    kernel_add_layernorm(out + p->r0 * H, x + p->r0 * H, l->attn_out_b, l->attn_ln_g,
                         l->attn_ln_b, rows, H, c->layer_norm_eps);
}

void family_nomic_bert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                                     const struct bert_batch *b, const struct bert_share *p)
{
    const struct bert_weights *w = &model->engine->weights;
    family_bert_embed_rows(model, b, p->r0, p->r1, s->x);
    sync_cols(p, s->team);
    for (size_t i = 0; i < model->config.num_layers; i++) {
        /* x -> tmp -> x: the result stays in s->x. */
        attention_block(model, s, b, &w->layers[i], p, s->x, s->tmp);
        sync_cols(p, s->team);
        family_glu_ffn(model, s, &w->layers[i], p, s->tmp, s->x);
        /* Always: glu rows are I floats apart, qkv rows 3H, so one member's
         * next QKV rows overlap another's glu rows. */
        bert_team_barrier(s->team);
    }
}

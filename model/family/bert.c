/* The post-LN encoder of BERT (Devlin et al. 2018; the Transformer layer of
 * Vaswani et al. 2017) and of the families that keep its layers: DistilBERT
 * (no token types), RoBERTa / XLM-R (positions from padding_idx + 1) and
 * ELECTRA (narrower embeddings projected to H). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"
#include "engine.h"
#include "family.h"
#include "kernels.h"
#include "profile.h"

void family_bert_embed_rows(const struct bert_model *model, const struct bert_batch *b,
                            size_t r0, size_t r1, float *x)
{
    const struct bert_weights *w = &model->engine->weights;
    const size_t H = model->config.embedding_size;
    const size_t offset = model->config.position_offset;
    size_t seq = 0;
    prof_lap(BERT_OP_OTHER);
    while (b->seq_start[seq + 1] <= r0)
        seq++;
    for (size_t t = r0; t < r1; t++) {
        while (b->seq_start[seq + 1] <= t)
            seq++;
        size_t pos = offset + t - b->seq_start[seq];
        const float *we = w->word_emb + (size_t)b->ids[t] * H;
        float *row = x + t * H;
        memcpy(row, we, H * sizeof *row);
        if (w->pos_emb != NULL) {
            const float *pe = w->pos_emb + pos * H;
            for (size_t k = 0; k < H; k++)
                row[k] += pe[k];
        }
        if (w->type_emb != NULL) {
            const float *te = w->type_emb + (size_t)b->type_ids[t] * H;
            for (size_t k = 0; k < H; k++)
                row[k] += te[k];
        }
    }
    prof_lap(BERT_OP_EMBED);
    kernel_add_layernorm(x + r0 * H, NULL, NULL, w->emb_ln_g, w->emb_ln_b, r1 - r0, H,
                         model->config.layer_norm_eps);
}

void family_bert_attention(const struct bert_model *model, struct bert_scratch *s,
                           const struct bert_batch *b, const struct bert_layer_weights *l,
                           const struct bert_share *p, const float *x, float *out)
{
    const struct bert_config *c = &model->config;
    struct bert_team *team = s->team;
    const size_t H = c->hidden_size;

    /* Q, K and V land side by side in one (T, 3H) matrix, with their biases. */
    const struct bert_dense *const qkv_dense[3] = {&l->query, &l->key, &l->value};
    const float *const qkv_bias[3] = {l->query_b, l->key_b, l->value_b};
    bert_linear_share_qkv(p, x, H, &l->qkv, l->qkv_b, qkv_dense, qkv_bias, s->qkv);
    if (p->member == 0)
        atomic_store_explicit(&s->next_item, 0, memory_order_relaxed);
    bert_team_barrier(team);
    if (c->family == BERT_FAMILY_DEBERTA_V2)
        family_deberta_attention_member(model, s, b, (size_t)(l - model->engine->weights.layers),
                                        p->member);
    else
        attention_member(model, s, b, p->member, SIZE_MAX);
    bert_team_barrier(team);

    /* Both callers' feed-forward input is `out`, read as it is written. */
    const struct bert_norm norm = {l->attn_out_b, x, l->attn_ln_g, l->attn_ln_b,
                                   c->layer_norm_eps, team};
    bert_linear_share_norm(p, s->ctx, H, &l->attn_out, H, out, &norm, true);
}

/* One post-LN Transformer layer (BERT keeps the original order) for this
 * member; *x and *tmp swap so *x ends as the layer's output. */
static void layer_forward(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *b, const struct bert_layer_weights *l,
                          const struct bert_share *p, float **x, float **tmp)
{
    const struct bert_config *c = &model->config;
    struct bert_team *team = s->team;
    const size_t H = c->hidden_size, FF = c->intermediate_size;

    family_bert_attention(model, s, b, l, p, *x, *tmp);
    float *swap = *x;
    *x = *tmp;
    *tmp = swap;
    if (!p->by_rows)
        bert_team_barrier(team);

    bert_linear_share_bias(p, *x, H, &l->ffn_in, FF, s->ffn, FF, l->ffn_in_b, &c->activation,
                           true);
    if (!p->by_rows)
        bert_team_barrier(team);
    /* The next layer's Q, K and V read the output as it is written. */
    const bool last = l == model->engine->weights.layers + c->num_layers - 1;
    const struct bert_norm norm = {l->ffn_out_b, *x, l->ffn_ln_g, l->ffn_ln_b,
                                   c->layer_norm_eps, team};
    bert_linear_share_norm(p, s->ffn, FF, &l->ffn_out, H, *tmp, &norm, !last);
    swap = *x;
    *x = *tmp;
    *tmp = swap;
    if (!p->by_rows)
        bert_team_barrier(team);
}

void family_bert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                               const struct bert_batch *b, const struct bert_share *p)
{
    const struct bert_weights *w = &model->engine->weights;
    family_bert_embed_rows(model, b, p->r0, p->r1, w->emb_proj.w ? s->ffn : s->x);
    if (!p->by_rows)
        bert_team_barrier(s->team);
    if (w->emb_proj.w != NULL) {
        /* ElectraEmbeddings: LayerNorm at width E, then embeddings_project to H. */
        const size_t E = model->config.embedding_size, H = model->config.hidden_size;
        size_t c0, c1;
        bert_linear_share(p, s->ffn, E, &w->emb_proj, H, s->x, H);
        bert_share_cols(p, H, &c0, &c1);
        size_t r0 = p->by_rows ? p->r0 : 0, nr = p->by_rows ? p->r1 - p->r0 : p->rows;
        kernel_add_bias(s->x + r0 * H + c0, w->emb_proj_b + c0, nr, c1 - c0, H);
        if (!p->by_rows)
            bert_team_barrier(s->team);
    }
    float *x = s->x, *tmp = s->tmp;
    for (size_t l = 0; l < model->config.num_layers; l++)
        layer_forward(model, s, b, &w->layers[l], p, &x, &tmp);
}

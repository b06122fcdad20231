/* The JinaBERT v2 encoder (Günther et al. 2023, "Jina Embeddings 2"; the
 * remote code jina-bert-implementation/modeling_bert.py): BERT's post-LN
 * layers without position embeddings, the attention scores of head h
 * biased by -slope_h * |i - j| (symmetric ALiBi, Press et al. 2022), and
 * JinaBertGLUMLP in place of the feed-forward: wo(act(g) * u) with g and u
 * the two halves of gated_layers(x), then LayerNorm(wo + x). */
#include <math.h>
#include <stdlib.h>

#include "engine.h"
#include "family.h"
#include "kernels.h"

/* ALiBi's head slopes (the paper's, for any head count): for 2^k heads the
 * geometric sequence from 2^(-8/2^k); otherwise the slopes of the closest
 * lower power of two, then every other slope of the next power's. */
static double alibi_slope(size_t h, size_t heads)
{
    size_t pow2 = 1;
    while (pow2 * 2 <= heads)
        pow2 *= 2;
    if (h < pow2)
        return pow(2.0, -8.0 * (double)(h + 1) / (double)pow2);
    return pow(2.0, -8.0 * (double)(2 * (h - pow2) + 1) / (double)(2 * pow2));
}

float *family_jina_alibi_new(const struct bert_config *c, size_t positions)
{
    const size_t A = c->num_heads, span = 2 * positions - 1;
    float *table = malloc(A * span * sizeof *table);
    if (table == NULL)
        return NULL;
    for (size_t h = 0; h < A; h++) {
        /* The slope rounded to float first, as the remote code's
         * torch.Tensor(slopes) holds it. */
        const float slope = (float)alibi_slope(h, A);
        for (size_t k = 0; k < span; k++) {
            const long d = (long)k - (long)(positions - 1);
            table[h * span + k] = -slope * (float)(d < 0 ? -d : d);
        }
    }
    return table;
}

/* Everyone's columns of a product are needed before any row-wise step when
 * products are split by columns. */
static void sync_cols(const struct bert_share *p, struct bert_team *team)
{
    if (!p->by_rows)
        bert_team_barrier(team);
}

void family_jina_bert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                                    const struct bert_batch *b, const struct bert_share *p)
{
    const struct bert_weights *w = &model->engine->weights;
    family_bert_embed_rows(model, b, p->r0, p->r1, s->x);
    sync_cols(p, s->team);
    for (size_t i = 0; i < model->config.num_layers; i++) {
        /* x -> tmp -> x; attention adds the ALiBi table (engine rel_bias). */
        family_bert_attention(model, s, b, &w->layers[i], p, s->x, s->tmp);
        sync_cols(p, s->team);
        family_glu_ffn(model, s, &w->layers[i], p, s->tmp, s->x);
        /* Always: glu rows are I floats apart, qkv rows 3H, so one member's
         * next QKV rows overlap another's glu rows. */
        bert_team_barrier(s->team);
    }
}

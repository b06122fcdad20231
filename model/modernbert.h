/* The ModernBERT encoder (Warner et al. 2024, modeling_modernbert.py) over
 * a packed batch: token embeddings + LayerNorm, then pre-norm layers
 * (LayerNorm, fused QKV, RoPE, attention that is global every
 * global_attn_every layers and a sliding window otherwise, GeGLU MLP) and a
 * final LayerNorm. Unpadded like the rest of the engine: sequences are
 * packed rows, positions restart per sequence, attention never crosses
 * sequences. Internal to encoder.c. */
#ifndef BERT_MODERNBERT_H
#define BERT_MODERNBERT_H

#include "linear.h"
#include "scratch.h"

/* One team member's part of the forward pass; the final hidden states end
 * in s->x. */
void modernbert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                              const struct bert_batch *b, const struct bert_share *p);

#endif

/* The encoder families. Each runs one team member's part of a forward pass
 * over a packed batch: token ids in, the final hidden states (T x H) in
 * s->x. Unpadded like the rest of the engine: sequences are packed rows,
 * positions restart per sequence, attention never crosses sequences.
 *
 * encoder.c picks a family's function from config.family; the weights it
 * reads are bound by weights.c under names.c's tensor names. A new family
 * is a file here, its function below, a row in encoder.c's family_encoder,
 * and its names and binding. Private to model/. */
#ifndef BERT_FAMILY_H
#define BERT_FAMILY_H

#include "bert.h"
#include "linear.h"
#include "scratch.h"
#include "weights.h"

typedef void (*family_encode_member_fn)(const struct bert_model *model, struct bert_scratch *s,
                                        const struct bert_batch *b, const struct bert_share *p);

/* x = LayerNorm(word + position + token type) (BERT sec. 3.2) for rows
 * [r0, r1), E wide, with the embedding LayerNorm (NomicBERT's emb_ln).
 * Positions restart for every packed sequence, at position_offset (RoBERTa
 * numbers them from padding_idx + 1); families without position
 * embeddings (rotary ones) or token types add none (bert.c). */
void family_bert_embed_rows(const struct bert_model *model, const struct bert_batch *b,
                            size_t r0, size_t r1, float *x);

/* BERT's attention sub-layer for this member's rows: separate query, key
 * and value products, attention (with the engine's relative bias, when the
 * model has one), the output dense, then out = LayerNorm(dense + x). The
 * caller synchronises before the next product reads `out` (bert.c). */
void family_bert_attention(const struct bert_model *model, struct bert_scratch *s,
                           const struct bert_batch *b, const struct bert_layer_weights *l,
                           const struct bert_share *p, const float *x, float *out);

/* BERT, DistilBERT, RoBERTa / XLM-R and ELECTRA: post-LN layers (bert.c). */
void family_bert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                               const struct bert_batch *b, const struct bert_share *p);

/* ModernBERT (Warner et al. 2024, modeling_modernbert.py; modernbert.c):
 * token embeddings + LayerNorm, then pre-norm layers (LayerNorm, fused QKV,
 * RoPE, attention that is global every global_attn_every layers and a
 * sliding window otherwise, GeGLU MLP) and a final LayerNorm. */
void family_modernbert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                                     const struct bert_batch *b, const struct bert_share *p);

/* The post-LN gated MLP (glu.c) for this member's rows: out =
 * LayerNorm(ffn_out(a * b) + x). JinaBERT: [a | b] = ffn_in(x) (2I rows),
 * act(a); GTE: [a | b] = ffn_in(x) (up_gate_proj), act(b); NomicBERT: a =
 * ffn_in(x) (fc11), b = act(ffn_gate(x)) (fc12). The
 * product goes through s->qkv, so the next layer's QKV must wait for a
 * barrier. */
void family_glu_ffn(const struct bert_model *model, struct bert_scratch *s,
                    const struct bert_layer_weights *l, const struct bert_share *p,
                    const float *x, float *out);

/* NomicBERT (nomic_bert.c): word + token type embeddings and emb_ln, then
 * post-LN blocks (fused Wqkv, RoPE with the engine's rope_global table,
 * out_proj, norm1, gated MLP fc11 * act(fc12) -> fc2, norm2). GTE "new"
 * runs it too: the same layer order (qkv_proj, RoPE with the NTK-scaled
 * table, o_proj, attn_ln, up_gate_proj's up * act(gate) -> down_proj,
 * mlp_ln); only the names and the table differ. */
void family_nomic_bert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                                     const struct bert_batch *b, const struct bert_share *p);

/* JinaBERT v2 (jina_bert.c): BERT's embeddings without positions, BERT's
 * attention sub-layer with the ALiBi table, and JinaBertGLUMLP. */
void family_jina_bert_encode_member(const struct bert_model *model, struct bert_scratch *s,
                                    const struct bert_batch *b, const struct bert_share *p);

/* JinaBERT's symmetric ALiBi as a relative bias table in the layout of
 * family_mpnet_rel_bias_new's: -slope_h * |d| for |d| < positions. NULL when
 * out of memory; free() it. */
float *family_jina_alibi_new(const struct bert_config *c, size_t positions);

/* MPNet (mpnet.c) runs family_bert_encode_member; its relative position
 * bias is a table made at load: for head h and distance d = key - query
 * (|d| < positions), table[h * (2 * positions - 1) + positions - 1 + d] is
 * relative_attention_bias[bucket(d)][h]. `bias` is the checkpoint's
 * (buckets, heads) tensor. NULL when out of memory; free() it. */
float *family_mpnet_rel_bias_new(const struct bert_config *c, const float *bias,
                                 size_t positions);

/* DeBERTa-v2/v3 (deberta.c) runs family_bert_encode_member (embeddings
 * without positions, BERT's post-LN layers); its attention is
 * disentangled. The tables made at load: each layer's key_proj and
 * query_proj of the (LayerNorm'd) relative embeddings, and the relative
 * index of every distance below `positions`. NULL when out of memory. */
struct family_deberta;
struct family_deberta *family_deberta_new(const struct bert_config *c,
                                          const struct bert_weights *w, size_t positions);
void family_deberta_free(struct family_deberta *t);

/* Floats of attention workspace per member for sequences up to max_n. */
size_t family_deberta_workspace_floats(const struct bert_config *c, size_t max_n);

/* This member's share of layer `layer`'s disentangled attention, from
 * s->qkv into s->ctx, handed out per (sequence, head) as attention_member
 * does (s->next_item reset before a barrier). */
void family_deberta_attention_member(const struct bert_model *model, struct bert_scratch *s,
                                     const struct bert_batch *b, size_t layer, size_t member);

#endif

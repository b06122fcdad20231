/* Binds the tensors of a safetensors file to the encoder parameter layout,
 * under the names of the config's family (names.h), checking every name,
 * dtype and shape against the config. F32 tensors are
 * used in place from the mapping; F16/BF16 (and any misaligned F32) tensors
 * are converted once into one owned arena. */
#ifndef BERT_WEIGHTS_H
#define BERT_WEIGHTS_H

#include <stdbool.h>

#include "config.h"
#include "linear.h"
#include "names.h"
#include "safetensors.h"

/* The dense layers the encoder runs (bert_linear_share) are struct
 * bert_dense: the f32 weight and, in bf16 or int8 mode, its packed copy. ModernBERT
 * keeps its fused Wqkv (3H, H) in query / query_b and has no key / value;
 * its norms are pre-norm (attn_ln before attention, NULL in layer 0; ffn_ln
 * before the MLP) and ffn_in is the GeGLU Wi (2I, H). Biases a config
 * turns off point at zeros. */
struct bert_layer_weights {
    struct bert_dense query;              /* (H, H) */
    struct bert_dense key;                /* (H, H) */
    struct bert_dense value;              /* (H, H) */
    struct bert_dense attn_out;           /* (H, H) */
    struct bert_dense ffn_in;             /* (I, H) */
    struct bert_dense ffn_gate;           /* (I, H): NomicBERT's fc12; w NULL elsewhere */
    struct bert_dense ffn_out;            /* (H, I) */
    const float *query_b, *key_b, *value_b, *attn_out_b; /* (H) each */
    const float *attn_ln_g, *attn_ln_b;   /* (H), (H) */
    const float *ffn_in_b, *ffn_gate_b;   /* (I), (I) */
    const float *ffn_out_b;               /* (H) */
    const float *ffn_ln_g, *ffn_ln_b;     /* (H), (H) */
    /* bf16 and int8, BERT's separate Q, K and V: their weights stacked
     * (3H, H) in one packed weight (qkv.bf16, qkv.int8; qkv.w stays NULL)
     * and their biases side by side (qkv_b, 3H), all owned; empty
     * otherwise. query, key and value then hold no bf16 or int8 copy. */
    struct bert_dense qkv;
    float *qkv_b;
};

struct bert_weights {
    const float *word_emb;                /* (V, E); E == H except for ELECTRA */
    const float *pos_emb;                 /* (P, E) */
    const float *type_emb;                /* (type_vocab, E); NULL without token types */
    const float *emb_ln_g, *emb_ln_b;     /* (E), (E) */
    struct bert_dense emb_proj;           /* (H, E); w NULL when E == H */
    const float *emb_proj_b;              /* (H) */
    struct bert_layer_weights *layers;    /* (n_layers) */
    size_t n_layers;
    const float *rel_attn_bias;           /* (buckets, A): MPNet's, shared by the layers */
    const float *rel_emb;                 /* (2 * att_span, H): DeBERTa-v2's, shared */
    const float *rel_ln_g, *rel_ln_b;     /* (H): its norm_rel_ebd LayerNorm; NULL without */

    /* Optional heads: NULL when the checkpoint has none. The pooler is the
     * dense layer the classifier reads (BERT pooler, DistilBERT
     * pre_classifier, RoBERTa / ELECTRA classifier.dense). The MLM head
     * works at width E (ELECTRA's generator; H elsewhere). */
    const float *pooler_w, *pooler_b;     /* (H, H), (H) */
    const float *mlm_dense_w, *mlm_dense_b; /* (E, H), (E) */
    const float *mlm_ln_g, *mlm_ln_b;     /* (E), (E) */
    const float *mlm_decoder_w;           /* (V, E); word_emb when tied */
    const float *mlm_decoder_b;           /* (V) */
    const float *classifier_w;            /* (num_labels, H) */
    const float *classifier_b;            /* (num_labels) */
    const float *pooler_ln_g, *pooler_ln_b; /* (H): ModernBERT head.norm; NULL elsewhere */
    const float *final_ln_g, *final_ln_b; /* (H): ModernBERT final_norm; NULL elsewhere */
    const float *disc_dense_w, *disc_dense_b; /* (H, H), (H): ELECTRA discriminator */
    const float *disc_pred_w, *disc_pred_b;   /* (1, H), (1) */
    /* The per-token head (config token_head): classifier or qa_outputs;
     * ModernBERT's reads its head (pooler_w ... pooler_ln_b) first. */
    const float *token_w, *token_b;       /* (width, H), (width) */
    float *zeros;                         /* owned: stands in for absent biases */

    float *f32_arena;                     /* the f32 kernel's packed weights, owned */
    float *arena;                         /* converted tensors, owned */
    size_t arena_floats;
    bool prefixed;                        /* names carried the family prefix ("bert.", ...) */
};

/* The per-token head `file` is for: cfg->token_head, or else
 * cfg->listed_token_head when the file holds that head's weights and no
 * pooler (which a sequence classifier would need). */
enum bert_token_head bert_weights_token_head(const struct bert_config *cfg,
                                             const struct safetensors_file *file);

/* Bind `file`'s tensors for `cfg`. Errors name the file, the tensor and the
 * expected and actual shape or dtype. */
enum bert_status bert_weights_bind(const struct bert_config *cfg,
                                   const struct safetensors_file *file,
                                   struct bert_weights *w, struct bert_error *err);

enum bert_pack_kind { BERT_PACK_F32, BERT_PACK_BF16, BERT_PACK_INT8 };

struct bert_pack_counts {
    size_t dense;          /* dense layers the encoder runs */
    size_t packed;         /* of which now have a packed copy */
    size_t packed_bytes;   /* the f32 packed copies' bytes (f32) */
    size_t released_bytes; /* f32 bytes of the mapping given back (f32, int8) */
    size_t pad_rows;       /* int8: the most rows any product of fewer is padded to
                              (linear_int8_weight_min_rows; 1 or 0: none) */
};

/* Give every dense layer the encoder runs its bf16 (linear_bf16.h) or int8
 * (linear_int8.h) copy, made now, once: products then run in that type
 * wherever oneDNN has a fast kernel for the weight's shape, and in f32 for
 * the others. With int8 and `file`, the f32 originals that lie in the
 * file's mapping leave the resident set (they are read again from the file
 * only should a product fall back to f32); converted ones (F16/BF16
 * checkpoints) stay in the arena. bf16 and int8 drop the f32 packed
 * copies. F32: the weights that lie in `file`'s mapping get their copy for
 * the f32 kernel (linear_f32.h, where the CPU runs it) and their mapped
 * originals leave the resident set, so each is held once; the others stay
 * on OpenBLAS. Not while the weights are in use. */
struct bert_pack_counts bert_weights_pack(struct bert_weights *w, const struct bert_config *c,
                                          enum bert_pack_kind kind,
                                          const struct safetensors_file *file);

/* Frees the packed copies too. Safe on a zeroed or already freed struct. */
void bert_weights_free(struct bert_weights *w);

#endif

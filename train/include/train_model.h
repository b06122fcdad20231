/* A trainable BERT: every parameter in one float arena (llm.c's habit), a
 * gradient arena of the same layout, named views into both, and the
 * Hugging Face tensor names for saving. Heads: the masked-LM head with its
 * decoder tied to the word embeddings (BertForMaskedLM), and the pooler +
 * classifier (BertForSequenceClassification). */
#ifndef BERT_TRAIN_MODEL_H
#define BERT_TRAIN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bert.h"

struct bert_weights; /* the engine's bound weights (model/weights.h) */

struct train_layer {
    float *query_w, *query_b, *key_w, *key_b, *value_w, *value_b; /* (H, H), (H) */
    float *attn_out_w, *attn_out_b, *attn_ln_g, *attn_ln_b;       /* (H, H), (H) x 3 */
    float *ffn_in_w, *ffn_in_b;                                   /* (I, H), (I) */
    float *ffn_out_w, *ffn_out_b, *ffn_ln_g, *ffn_ln_b;           /* (H, I), (H) x 3 */
};

/* Pointers into one arena; head pointers are NULL when the head is absent. */
struct train_view {
    float *word_emb, *pos_emb, *type_emb; /* (V, H), (P, H), (types, H) */
    float *emb_ln_g, *emb_ln_b;           /* (H) */
    struct train_layer *layers;           /* (L) */
    float *pooler_w, *pooler_b;           /* (H, H), (H) */
    float *mlm_dense_w, *mlm_dense_b;     /* (H, H), (H) */
    float *mlm_ln_g, *mlm_ln_b;           /* (H) */
    float *mlm_bias;                      /* (V); the decoder weight is word_emb */
    float *classifier_w, *classifier_b;   /* (C, H), (C) */
};

enum train_param_kind { TRAIN_WEIGHT, TRAIN_BIAS, TRAIN_LN_GAMMA, TRAIN_LN_BETA };

/* Which part of the network a tensor belongs to, as bits, so that a run
 * updates only the parts it trains (the optimiser's `parts`). The tied
 * decoder weight is the word embeddings: part of the encoder. */
enum train_part {
    TRAIN_PART_ENCODER = 1u,    /* embeddings and layers */
    TRAIN_PART_CLASSIFIER = 2u, /* pooler and classifier */
    TRAIN_PART_MLM = 4u,        /* the MLM head's transform and bias */
    TRAIN_PART_ALL = 7u,
};

struct train_tensor {
    char name[96];               /* Hugging Face name, "bert." prefixed for the encoder */
    enum train_param_kind kind;  /* weights decay; biases and LayerNorm do not */
    size_t offset, count;        /* floats into the arena */
    size_t ndim, shape[2];
    enum train_part part;
};

struct train_model {
    struct bert_config config;   /* owns id2label */
    bool mlm, classifier;
    size_t n_tensors;
    struct train_tensor *tensors;
    size_t n_params;
    float *params, *grads;       /* (n_params) each */
    struct train_view p, g;
};

/* The small BERT `bert init` and `bert pretrain` start from unless told
 * otherwise: 2 layers, hidden 128, 2 heads, intermediate 512, 512
 * positions, 2 token types, LayerNorm eps 1e-12. Sets only those fields. */
void train_small_geometry(struct bert_config *c);

/* Lay out a model for `cfg` (copied, id2label included) with the chosen
 * heads; parameters and gradients zeroed. BERT_E_UNSUPPORTED for a family
 * other than BERT: the trainer's layers are BERT's. */
enum bert_status train_model_init(struct train_model *m, const struct bert_config *cfg,
                                  bool mlm, bool classifier, struct bert_error *err);

/* Fill every parameter from synth.h's generator (the values `bert
 * init` writes for the same seed and ranges). */
void train_model_synth(struct train_model *m, uint64_t seed, double weight_std,
                       double bias_range, double ln_range);

/* Copy the tensors a loaded checkpoint has; heads it lacks keep their
 * current values. An untied MLM decoder is BERT_E_UNSUPPORTED. */
enum bert_status train_model_copy_weights(struct train_model *m, const struct bert_weights *w,
                                          struct bert_error *err);

/* Load the checkpoint in `dir` into a model of its configuration with the
 * chosen heads (train_model_init, then train_model_copy_weights). On
 * failure *m is freed. */
enum bert_status train_model_load(struct train_model *m, const char *dir, bool mlm,
                                  bool classifier, struct bert_error *err);

/* Write `dir`: config.json, model.safetensors (`dtype`: F32, F16 or BF16)
 * and the tokenizer files from `tokenizer_dir`. */
enum bert_status train_model_save(const struct train_model *m, const char *dir,
                                  const char *tokenizer_dir, enum bert_dtype dtype,
                                  struct bert_error *err);

/* Safe on a zeroed or already freed model. */
void train_model_free(struct train_model *m);

#endif

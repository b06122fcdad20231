/* Encoder families and the Hugging Face tensor names of each: which
 * model_type values belong to a family, the prefix its task models put in
 * front of the encoder ("bert.", "distilbert.", "roberta.", "electra.",
 * "model."), and
 * the name of every parameter bertserve binds. One table, read by the
 * weight binder and by the synthetic-checkpoint writer. */
#ifndef BERT_NAMES_H
#define BERT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

/* Every parameter a family may have. Names of the BERT_TENSOR_LAYER_*
 * entries contain the layer number. */
enum bert_tensor {
    BERT_TENSOR_WORD_EMB,
    BERT_TENSOR_POS_EMB,
    BERT_TENSOR_TYPE_EMB,
    BERT_TENSOR_EMB_LN_G,
    BERT_TENSOR_EMB_LN_B,
    BERT_TENSOR_EMB_PROJ_W,   /* ELECTRA embeddings_project */
    BERT_TENSOR_EMB_PROJ_B,
    BERT_TENSOR_LAYER_QUERY_W,  /* ModernBERT: the fused (3H, H) Wqkv */
    BERT_TENSOR_LAYER_QUERY_B,
    BERT_TENSOR_LAYER_KEY_W,
    BERT_TENSOR_LAYER_KEY_B,
    BERT_TENSOR_LAYER_VALUE_W,
    BERT_TENSOR_LAYER_VALUE_B,
    BERT_TENSOR_LAYER_ATTN_OUT_W,
    BERT_TENSOR_LAYER_ATTN_OUT_B,
    BERT_TENSOR_LAYER_ATTN_LN_G,
    BERT_TENSOR_LAYER_ATTN_LN_B,
    BERT_TENSOR_LAYER_FFN_IN_W,
    BERT_TENSOR_LAYER_FFN_IN_B,
    BERT_TENSOR_LAYER_FFN_OUT_W,
    BERT_TENSOR_LAYER_FFN_OUT_B,
    BERT_TENSOR_LAYER_FFN_LN_G,
    BERT_TENSOR_LAYER_FFN_LN_B,
    /* The dense layer in front of the classifier: BERT's pooler, DistilBERT's
     * pre_classifier, RoBERTa's and ELECTRA's classifier.dense. */
    BERT_TENSOR_POOLER_W,
    BERT_TENSOR_POOLER_B,
    BERT_TENSOR_CLASSIFIER_W,
    BERT_TENSOR_CLASSIFIER_B,
    BERT_TENSOR_MLM_DENSE_W,
    BERT_TENSOR_MLM_DENSE_B,
    BERT_TENSOR_MLM_LN_G,
    BERT_TENSOR_MLM_LN_B,
    BERT_TENSOR_MLM_DECODER_W,  /* absent from the file when tied to the word embeddings */
    BERT_TENSOR_MLM_DECODER_B,
    BERT_TENSOR_FINAL_LN_G,     /* ModernBERT final_norm (pre-norm encoders end with one) */
    BERT_TENSOR_FINAL_LN_B,
    BERT_TENSOR_POOLER_LN_G,    /* ModernBERT head.norm after the head's dense + activation */
    BERT_TENSOR_POOLER_LN_B,
    BERT_TENSOR_DISC_DENSE_W,   /* ELECTRA discriminator_predictions: dense, activation, */
    BERT_TENSOR_DISC_DENSE_B,
    BERT_TENSOR_DISC_PRED_W,    /* then dense_prediction (1, H): the "replaced" logit */
    BERT_TENSOR_DISC_PRED_B,
    /* Per-token heads (*ForTokenClassification, *ForQuestionAnswering): a
     * Linear(H, labels) / Linear(H, 2) on every token; ModernBERT's run
     * after its head (the POOLER / POOLER_LN tensors). */
    BERT_TENSOR_TOKEN_CLS_W,
    BERT_TENSOR_TOKEN_CLS_B,
    BERT_TENSOR_QA_W,
    BERT_TENSOR_QA_B,
    /* MPNet's relative_attention_bias (buckets, heads), shared by all layers. */
    BERT_TENSOR_REL_ATTN_BIAS,
    /* The gate of a gated MLP kept apart from its input (NomicBERT fc12). */
    BERT_TENSOR_LAYER_FFN_GATE_W,
    BERT_TENSOR_LAYER_FFN_GATE_B,
    /* DeBERTa-v2's relative position embeddings (2 * att_span, H) and the
     * encoder LayerNorm applied to them (norm_rel_ebd), shared by the layers. */
    BERT_TENSOR_REL_EMB,
    BERT_TENSOR_REL_LN_G,
    BERT_TENSOR_REL_LN_B,
    BERT_TENSOR_COUNT
};

/* "bert" -> BERT_FAMILY_BERT, "xlm-roberta" -> BERT_FAMILY_ROBERTA, ...;
 * false for a model_type no family has. */
bool bert_family_from_model_type(const char *model_type, enum bert_family *out);
/* The model_type values bertserve supports, for error messages. */
const char *bert_family_supported_types(void);
/* The architecture a task model of the family is called, e.g.
 * ("roberta", "ForMaskedLM") -> "RobertaForMaskedLM"; `model_type` picks
 * XLMRoberta / Camembert within the RoBERTa family. */
const char *bert_family_class_prefix(const char *model_type);
/* The encoder prefix of the family's task models: "bert.", ... */
const char *bert_family_prefix(enum bert_family family);

/* Write the name of `tensor` (of layer `layer` for the per-layer ones) as
 * `family` stores it into buf; encoder tensors get the family prefix when
 * `prefixed`. Returns false when the family has no such tensor. */
bool bert_tensor_name(enum bert_family family, enum bert_tensor tensor, size_t layer,
                      bool prefixed, char *buf, size_t size);

/* The older name a tensor may carry instead (BERT's LayerNorm gamma/beta,
 * the decoder bias stored under the decoder): as bert_tensor_name, false
 * when there is none. */
bool bert_tensor_alt_name(enum bert_family family, enum bert_tensor tensor, size_t layer,
                          bool prefixed, char *buf, size_t size);

#endif

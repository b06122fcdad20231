/* Model configuration: Hugging Face `config.json` plus the
 * sentence-transformers files that choose pooling and normalisation. */
#ifndef BERT_CONFIG_H
#define BERT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "status.h"

enum bert_activation {
    BERT_ACTIVATION_GELU,      /* exact erf GELU ("gelu") */
    BERT_ACTIVATION_GELU_TANH, /* tanh approximation ("gelu_new", "gelu_pytorch_tanh", "gelu_fast") */
    BERT_ACTIVATION_RELU,
    BERT_ACTIVATION_SILU,      /* "silu", "swish" */
    BERT_ACTIVATION_TANH,      /* the BERT / RoBERTa classification dense layer */
};

enum bert_pooling {
    BERT_POOLING_CLS,
    BERT_POOLING_MEAN,
    BERT_POOLING_MAX,
};

enum bert_problem_type {
    BERT_PROBLEM_UNSET,       /* config.json has no problem_type */
    BERT_PROBLEM_SINGLE_LABEL,
    BERT_PROBLEM_MULTI_LABEL,
    BERT_PROBLEM_REGRESSION,
};

struct bert_config {
    char model_type[32];         /* "bert", "distilbert", "roberta", "xlm-roberta", ... */
    enum bert_family family;     /* from model_type */
    size_t vocab_size;
    size_t embedding_size;       /* E: ELECTRA's embedding width, projected to H; else H */
    size_t hidden_size;          /* H */
    size_t num_layers;           /* L */
    size_t num_heads;            /* A; H % A == 0 */
    size_t intermediate_size;    /* I */
    size_t max_position_embeddings;
    size_t type_vocab_size;      /* 0: the family has no token types (DistilBERT) */
    size_t position_offset;      /* first position id: RoBERTa pad_token_id + 1, else 0 */
    float layer_norm_eps;
    enum bert_activation activation;
    enum bert_activation pooler_activation; /* the dense layer before the classifier */
    enum bert_activation mlm_activation;    /* the MLM head's transform */
    int32_t pad_token_id;

    /* Classification head. num_labels is 2 when config.json says nothing,
     * as in transformers. id2label[i] is malloc'd ("LABEL_i" by default). */
    size_t num_labels;
    char **id2label;             /* (num_labels) */
    enum bert_problem_type problem_type;
    bool tie_word_embeddings;    /* MLM decoder shares the word embeddings */
    char architecture[64];       /* architectures[0], "" when absent */
    bool is_decoder;             /* causal self-attention (BertConfig's flag); trainer-only */

    /* sentence-transformers: defaults for /embed. `pooling_from_model` is
     * true when 1_Pooling/config.json chose the pooling; `normalize` is true
     * when modules.json lists a Normalize module. */
    enum bert_pooling pooling;
    bool pooling_from_model;
    bool normalize;
    size_t st_max_seq_length;    /* sentence_bert_config.json max_seq_length, 0 if none */

    /* ModernBERT (zero / false for the other families). Layer i attends
     * globally when i % global_attn_every == 0, else to the tokens within
     * local_window / 2 positions on either side; each kind rotates queries
     * and keys with its own RoPE theta. Missing biases are absent tensors. */
    struct bert_modernbert {
        double global_rope_theta, local_rope_theta;
        size_t global_attn_every;
        size_t local_window;     /* config.json local_attention: the whole window */
        bool attention_bias, mlp_bias, norm_bias, classifier_bias;
        enum bert_pooling classifier_pooling; /* cls | mean */
        enum bert_activation classifier_activation; /* ModernBertPredictionHead's */
    } modern;
};

/* Read `dir/config.json` and the optional sentence-transformers files.
 * Unsupported model_type, position_embedding_type or hidden_act is
 * BERT_E_UNSUPPORTED with a message listing what is supported; a missing or
 * malformed key is BERT_E_FORMAT naming the file and key. On failure `cfg`
 * holds nothing to free. */
enum bert_status bert_config_load(const char *dir, struct bert_config *cfg,
                                  struct bert_error *err);

/* Parse config.json text (no sentence-transformers files); for fuzzing and
 * tests. `name` is used in messages. */
enum bert_status bert_config_parse(const char *name, const char *json, size_t len,
                                   struct bert_config *cfg, struct bert_error *err);

/* Write `cfg` as a Hugging Face config.json at `path`. */
enum bert_status bert_config_write(const struct bert_config *cfg, const char *path,
                                   struct bert_error *err);

/* Release id2label. Safe on a zeroed or already freed config. */
void bert_config_free(struct bert_config *cfg);

const char *bert_pooling_name(enum bert_pooling pooling);
/* "cls" | "mean" | "max" -> pooling; false when unknown. */
bool bert_pooling_parse(const char *name, enum bert_pooling *out);

#endif

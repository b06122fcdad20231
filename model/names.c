#include "names.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *model_type;
    enum bert_family family;
    const char *class_prefix; /* architectures[0] before "ForMaskedLM", "Model", ... */
} model_types[] = {
    {"bert", BERT_FAMILY_BERT, "Bert"},
    {"distilbert", BERT_FAMILY_DISTILBERT, "DistilBert"},
    {"roberta", BERT_FAMILY_ROBERTA, "Roberta"},
    {"xlm-roberta", BERT_FAMILY_ROBERTA, "XLMRoberta"},
    {"camembert", BERT_FAMILY_ROBERTA, "Camembert"},
    {"electra", BERT_FAMILY_ELECTRA, "Electra"},
    {"modernbert", BERT_FAMILY_MODERNBERT, "ModernBert"},
    {"mpnet", BERT_FAMILY_MPNET, "MPNet"},
    {"nomic_bert", BERT_FAMILY_NOMIC_BERT, "NomicBert"},
    /* Real JinaBERT configs say model_type "bert" with position_embedding_type
     * "alibi" (config.c); this name is `bert init`'s. */
    {"jina_bert", BERT_FAMILY_JINA_BERT, "JinaBert"},
    {"deberta-v2", BERT_FAMILY_DEBERTA_V2, "DebertaV2"},
    /* GTE's remote code calls its model type and classes "new". */
    {"new", BERT_FAMILY_GTE, "New"},
};

static const char *const family_names[BERT_FAMILY_COUNT] = {
    [BERT_FAMILY_BERT] = "bert",
    [BERT_FAMILY_DISTILBERT] = "distilbert",
    [BERT_FAMILY_ROBERTA] = "roberta",
    [BERT_FAMILY_ELECTRA] = "electra",
    [BERT_FAMILY_MODERNBERT] = "modernbert",
    [BERT_FAMILY_MPNET] = "mpnet",
    [BERT_FAMILY_NOMIC_BERT] = "nomic_bert",
    [BERT_FAMILY_JINA_BERT] = "jina_bert",
    [BERT_FAMILY_DEBERTA_V2] = "deberta-v2",
    [BERT_FAMILY_GTE] = "gte",
};

/* transformers' base_model_prefix of each family: XLM-R and CamemBERT keep
 * "roberta". */
static const char *const prefixes[BERT_FAMILY_COUNT] = {
    [BERT_FAMILY_BERT] = "bert.",
    [BERT_FAMILY_DISTILBERT] = "distilbert.",
    [BERT_FAMILY_ROBERTA] = "roberta.",
    [BERT_FAMILY_ELECTRA] = "electra.",
    [BERT_FAMILY_MODERNBERT] = "model.",
    [BERT_FAMILY_MPNET] = "mpnet.",
    [BERT_FAMILY_NOMIC_BERT] = "bert.",
    [BERT_FAMILY_JINA_BERT] = "bert.",
    [BERT_FAMILY_DEBERTA_V2] = "deberta.",
    [BERT_FAMILY_GTE] = "new.",
};

bool bert_family_from_model_type(const char *model_type, enum bert_family *out)
{
    for (size_t i = 0; i < sizeof model_types / sizeof model_types[0]; i++) {
        if (strcmp(model_type, model_types[i].model_type) == 0) {
            *out = model_types[i].family;
            return true;
        }
    }
    return false;
}

const char *bert_family_supported_types(void)
{
    return "bert, distilbert, roberta, xlm-roberta, camembert, electra, modernbert, mpnet, "
           "nomic_bert, deberta-v2, new (GTE), and bert with position_embedding_type alibi "
           "(JinaBERT v2)";
}

const char *bert_family_name(enum bert_family family)
{
    return (size_t)family < BERT_FAMILY_COUNT ? family_names[family] : "?";
}

const char *bert_family_class_prefix(const char *model_type)
{
    for (size_t i = 0; i < sizeof model_types / sizeof model_types[0]; i++)
        if (strcmp(model_type, model_types[i].model_type) == 0)
            return model_types[i].class_prefix;
    return "Bert";
}

const char *bert_family_prefix(enum bert_family family)
{
    return (size_t)family < BERT_FAMILY_COUNT ? prefixes[family] : "";
}

/* A tensor's name in one family: `base` names live under the encoder
 * prefix; NULL: the family has no such tensor. */
struct tensor_name {
    const char *name;
    bool base;
};

/* BertEmbeddings without token types (MPNet's too) and BertIntermediate +
 * BertOutput (MPNet keeps them). */
#define BERT_EMBEDDING_NAMES                                                                \
    [BERT_TENSOR_WORD_EMB] = {"embeddings.word_embeddings.weight", true},                   \
    [BERT_TENSOR_POS_EMB] = {"embeddings.position_embeddings.weight", true},                \
    [BERT_TENSOR_EMB_LN_G] = {"embeddings.LayerNorm.weight", true},                         \
    [BERT_TENSOR_EMB_LN_B] = {"embeddings.LayerNorm.bias", true}
#define BERT_FFN_NAMES                                                                      \
    [BERT_TENSOR_LAYER_FFN_IN_W] = {"encoder.layer.%zu.intermediate.dense.weight", true},   \
    [BERT_TENSOR_LAYER_FFN_IN_B] = {"encoder.layer.%zu.intermediate.dense.bias", true},     \
    [BERT_TENSOR_LAYER_FFN_OUT_W] = {"encoder.layer.%zu.output.dense.weight", true},        \
    [BERT_TENSOR_LAYER_FFN_OUT_B] = {"encoder.layer.%zu.output.dense.bias", true},          \
    [BERT_TENSOR_LAYER_FFN_LN_G] = {"encoder.layer.%zu.output.LayerNorm.weight", true},     \
    [BERT_TENSOR_LAYER_FFN_LN_B] = {"encoder.layer.%zu.output.LayerNorm.bias", true}

/* BertAttention (JinaBERT keeps it). */
#define BERT_ATTENTION_NAMES                                                                \
    [BERT_TENSOR_LAYER_QUERY_W] = {"encoder.layer.%zu.attention.self.query.weight", true},  \
    [BERT_TENSOR_LAYER_QUERY_B] = {"encoder.layer.%zu.attention.self.query.bias", true},    \
    [BERT_TENSOR_LAYER_KEY_W] = {"encoder.layer.%zu.attention.self.key.weight", true},      \
    [BERT_TENSOR_LAYER_KEY_B] = {"encoder.layer.%zu.attention.self.key.bias", true},        \
    [BERT_TENSOR_LAYER_VALUE_W] = {"encoder.layer.%zu.attention.self.value.weight", true},  \
    [BERT_TENSOR_LAYER_VALUE_B] = {"encoder.layer.%zu.attention.self.value.bias", true},    \
    [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"encoder.layer.%zu.attention.output.dense.weight",    \
                                      true},                                                \
    [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"encoder.layer.%zu.attention.output.dense.bias", true}, \
    [BERT_TENSOR_LAYER_ATTN_LN_G] = {"encoder.layer.%zu.attention.output.LayerNorm.weight", \
                                     true},                                                 \
    [BERT_TENSOR_LAYER_ATTN_LN_B] = {"encoder.layer.%zu.attention.output.LayerNorm.bias",   \
                                     true}

/* BERT, RoBERTa and ELECTRA share the encoder layout (modeling_bert.py,
 * modeling_roberta.py, modeling_electra.py). */
#define BERT_ENCODER_NAMES                                                                  \
    BERT_EMBEDDING_NAMES,                                                                   \
    [BERT_TENSOR_TYPE_EMB] = {"embeddings.token_type_embeddings.weight", true},             \
    BERT_ATTENTION_NAMES,                                                                   \
    BERT_FFN_NAMES

/* The per-token Linear layers of ...ForTokenClassification and
 * ...ForQuestionAnswering, named alike in every family but ModernBERT. */
#define TOKEN_HEAD_NAMES                                                                    \
    [BERT_TENSOR_TOKEN_CLS_W] = {"classifier.weight", false},                               \
    [BERT_TENSOR_TOKEN_CLS_B] = {"classifier.bias", false},                                 \
    [BERT_TENSOR_QA_W] = {"qa_outputs.weight", false},                                      \
    [BERT_TENSOR_QA_B] = {"qa_outputs.bias", false}

/* RoBERTa's heads (RobertaLMHead "lm_head", RobertaClassificationHead
 * "classifier.dense" / "classifier.out_proj", the per-token Linear layers);
 * MPNet's have the same names. */
#define ROBERTA_HEAD_NAMES                                                                  \
    TOKEN_HEAD_NAMES,                                                                       \
    [BERT_TENSOR_POOLER_W] = {"classifier.dense.weight", false},                            \
    [BERT_TENSOR_POOLER_B] = {"classifier.dense.bias", false},                              \
    [BERT_TENSOR_CLASSIFIER_W] = {"classifier.out_proj.weight", false},                     \
    [BERT_TENSOR_CLASSIFIER_B] = {"classifier.out_proj.bias", false},                       \
    [BERT_TENSOR_MLM_DENSE_W] = {"lm_head.dense.weight", false},                            \
    [BERT_TENSOR_MLM_DENSE_B] = {"lm_head.dense.bias", false},                              \
    [BERT_TENSOR_MLM_LN_G] = {"lm_head.layer_norm.weight", false},                          \
    [BERT_TENSOR_MLM_LN_B] = {"lm_head.layer_norm.bias", false},                            \
    [BERT_TENSOR_MLM_DECODER_W] = {"lm_head.decoder.weight", false},                        \
    [BERT_TENSOR_MLM_DECODER_B] = {"lm_head.bias", false}

/* BertPooler, the classifier on it, and BertOnlyMLMHead (JinaBERT keeps
 * them). */
#define BERT_HEAD_NAMES                                                                     \
    [BERT_TENSOR_POOLER_W] = {"pooler.dense.weight", true},                                 \
    [BERT_TENSOR_POOLER_B] = {"pooler.dense.bias", true},                                   \
    [BERT_TENSOR_CLASSIFIER_W] = {"classifier.weight", false},                              \
    [BERT_TENSOR_CLASSIFIER_B] = {"classifier.bias", false},                                \
    [BERT_TENSOR_MLM_DENSE_W] = {"cls.predictions.transform.dense.weight", false},          \
    [BERT_TENSOR_MLM_DENSE_B] = {"cls.predictions.transform.dense.bias", false},            \
    [BERT_TENSOR_MLM_LN_G] = {"cls.predictions.transform.LayerNorm.weight", false},         \
    [BERT_TENSOR_MLM_LN_B] = {"cls.predictions.transform.LayerNorm.bias", false},           \
    [BERT_TENSOR_MLM_DECODER_W] = {"cls.predictions.decoder.weight", false},                \
    [BERT_TENSOR_MLM_DECODER_B] = {"cls.predictions.bias", false}

static const struct tensor_name names[BERT_FAMILY_COUNT][BERT_TENSOR_COUNT] = {
    [BERT_FAMILY_BERT] = {
        TOKEN_HEAD_NAMES,
        BERT_ENCODER_NAMES,
        BERT_HEAD_NAMES,
    },
    /* modeling_distilbert.py: Embeddings, TransformerBlock, the MLM's
     * vocab_* layers and the classifier's pre_classifier. */
    [BERT_FAMILY_DISTILBERT] = {
        TOKEN_HEAD_NAMES,
        [BERT_TENSOR_WORD_EMB] = {"embeddings.word_embeddings.weight", true},
        [BERT_TENSOR_POS_EMB] = {"embeddings.position_embeddings.weight", true},
        [BERT_TENSOR_EMB_LN_G] = {"embeddings.LayerNorm.weight", true},
        [BERT_TENSOR_EMB_LN_B] = {"embeddings.LayerNorm.bias", true},
        [BERT_TENSOR_LAYER_QUERY_W] = {"transformer.layer.%zu.attention.q_lin.weight", true},
        [BERT_TENSOR_LAYER_QUERY_B] = {"transformer.layer.%zu.attention.q_lin.bias", true},
        [BERT_TENSOR_LAYER_KEY_W] = {"transformer.layer.%zu.attention.k_lin.weight", true},
        [BERT_TENSOR_LAYER_KEY_B] = {"transformer.layer.%zu.attention.k_lin.bias", true},
        [BERT_TENSOR_LAYER_VALUE_W] = {"transformer.layer.%zu.attention.v_lin.weight", true},
        [BERT_TENSOR_LAYER_VALUE_B] = {"transformer.layer.%zu.attention.v_lin.bias", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"transformer.layer.%zu.attention.out_lin.weight", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"transformer.layer.%zu.attention.out_lin.bias", true},
        [BERT_TENSOR_LAYER_ATTN_LN_G] = {"transformer.layer.%zu.sa_layer_norm.weight", true},
        [BERT_TENSOR_LAYER_ATTN_LN_B] = {"transformer.layer.%zu.sa_layer_norm.bias", true},
        [BERT_TENSOR_LAYER_FFN_IN_W] = {"transformer.layer.%zu.ffn.lin1.weight", true},
        [BERT_TENSOR_LAYER_FFN_IN_B] = {"transformer.layer.%zu.ffn.lin1.bias", true},
        [BERT_TENSOR_LAYER_FFN_OUT_W] = {"transformer.layer.%zu.ffn.lin2.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_B] = {"transformer.layer.%zu.ffn.lin2.bias", true},
        [BERT_TENSOR_LAYER_FFN_LN_G] = {"transformer.layer.%zu.output_layer_norm.weight", true},
        [BERT_TENSOR_LAYER_FFN_LN_B] = {"transformer.layer.%zu.output_layer_norm.bias", true},
        [BERT_TENSOR_POOLER_W] = {"pre_classifier.weight", false},
        [BERT_TENSOR_POOLER_B] = {"pre_classifier.bias", false},
        [BERT_TENSOR_CLASSIFIER_W] = {"classifier.weight", false},
        [BERT_TENSOR_CLASSIFIER_B] = {"classifier.bias", false},
        [BERT_TENSOR_MLM_DENSE_W] = {"vocab_transform.weight", false},
        [BERT_TENSOR_MLM_DENSE_B] = {"vocab_transform.bias", false},
        [BERT_TENSOR_MLM_LN_G] = {"vocab_layer_norm.weight", false},
        [BERT_TENSOR_MLM_LN_B] = {"vocab_layer_norm.bias", false},
        [BERT_TENSOR_MLM_DECODER_W] = {"vocab_projector.weight", false},
        [BERT_TENSOR_MLM_DECODER_B] = {"vocab_projector.bias", false},
    },
    /* RobertaLMHead and RobertaClassificationHead. */
    [BERT_FAMILY_ROBERTA] = {
        BERT_ENCODER_NAMES,
        ROBERTA_HEAD_NAMES,
    },
    /* ElectraModel's embeddings_project, ElectraClassificationHead, the
     * generator's ElectraGeneratorPredictions + generator_lm_head, and
     * ElectraForPreTraining's ElectraDiscriminatorPredictions. */
    [BERT_FAMILY_ELECTRA] = {
        TOKEN_HEAD_NAMES,
        BERT_ENCODER_NAMES,
        [BERT_TENSOR_EMB_PROJ_W] = {"embeddings_project.weight", true},
        [BERT_TENSOR_EMB_PROJ_B] = {"embeddings_project.bias", true},
        [BERT_TENSOR_POOLER_W] = {"classifier.dense.weight", false},
        [BERT_TENSOR_POOLER_B] = {"classifier.dense.bias", false},
        [BERT_TENSOR_CLASSIFIER_W] = {"classifier.out_proj.weight", false},
        [BERT_TENSOR_CLASSIFIER_B] = {"classifier.out_proj.bias", false},
        [BERT_TENSOR_MLM_DENSE_W] = {"generator_predictions.dense.weight", false},
        [BERT_TENSOR_MLM_DENSE_B] = {"generator_predictions.dense.bias", false},
        [BERT_TENSOR_MLM_LN_G] = {"generator_predictions.LayerNorm.weight", false},
        [BERT_TENSOR_MLM_LN_B] = {"generator_predictions.LayerNorm.bias", false},
        [BERT_TENSOR_MLM_DECODER_W] = {"generator_lm_head.weight", false},
        [BERT_TENSOR_MLM_DECODER_B] = {"generator_lm_head.bias", false},
        [BERT_TENSOR_DISC_DENSE_W] = {"discriminator_predictions.dense.weight", false},
        [BERT_TENSOR_DISC_DENSE_B] = {"discriminator_predictions.dense.bias", false},
        [BERT_TENSOR_DISC_PRED_W] = {"discriminator_predictions.dense_prediction.weight", false},
        [BERT_TENSOR_DISC_PRED_B] = {"discriminator_predictions.dense_prediction.bias", false},
    },
    /* modeling_modernbert.py: ModernBertEmbeddings (no positions, no token
     * types), ModernBertEncoderLayer (attn_norm, fused Wqkv, Wo, mlp_norm,
     * GeGLU Wi / Wo), final_norm, and ModernBertPredictionHead ("head"),
     * which the MLM decoder and the classifier both read. Layer 0 has no
     * attn_norm (an Identity). Biases exist only when config.json turns
     * them on (attention_bias, mlp_bias, norm_bias, classifier_bias). */
    [BERT_FAMILY_MODERNBERT] = {
        [BERT_TENSOR_TOKEN_CLS_W] = {"classifier.weight", false},
        [BERT_TENSOR_TOKEN_CLS_B] = {"classifier.bias", false},
        [BERT_TENSOR_QA_W] = {"classifier.weight", false},
        [BERT_TENSOR_QA_B] = {"classifier.bias", false},
        [BERT_TENSOR_WORD_EMB] = {"embeddings.tok_embeddings.weight", true},
        [BERT_TENSOR_EMB_LN_G] = {"embeddings.norm.weight", true},
        [BERT_TENSOR_EMB_LN_B] = {"embeddings.norm.bias", true},
        [BERT_TENSOR_LAYER_QUERY_W] = {"layers.%zu.attn.Wqkv.weight", true},
        [BERT_TENSOR_LAYER_QUERY_B] = {"layers.%zu.attn.Wqkv.bias", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"layers.%zu.attn.Wo.weight", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"layers.%zu.attn.Wo.bias", true},
        [BERT_TENSOR_LAYER_ATTN_LN_G] = {"layers.%zu.attn_norm.weight", true},
        [BERT_TENSOR_LAYER_ATTN_LN_B] = {"layers.%zu.attn_norm.bias", true},
        [BERT_TENSOR_LAYER_FFN_IN_W] = {"layers.%zu.mlp.Wi.weight", true},
        [BERT_TENSOR_LAYER_FFN_IN_B] = {"layers.%zu.mlp.Wi.bias", true},
        [BERT_TENSOR_LAYER_FFN_OUT_W] = {"layers.%zu.mlp.Wo.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_B] = {"layers.%zu.mlp.Wo.bias", true},
        [BERT_TENSOR_LAYER_FFN_LN_G] = {"layers.%zu.mlp_norm.weight", true},
        [BERT_TENSOR_LAYER_FFN_LN_B] = {"layers.%zu.mlp_norm.bias", true},
        [BERT_TENSOR_FINAL_LN_G] = {"final_norm.weight", true},
        [BERT_TENSOR_FINAL_LN_B] = {"final_norm.bias", true},
        [BERT_TENSOR_POOLER_W] = {"head.dense.weight", false},
        [BERT_TENSOR_POOLER_B] = {"head.dense.bias", false},
        [BERT_TENSOR_POOLER_LN_G] = {"head.norm.weight", false},
        [BERT_TENSOR_POOLER_LN_B] = {"head.norm.bias", false},
        [BERT_TENSOR_CLASSIFIER_W] = {"classifier.weight", false},
        [BERT_TENSOR_CLASSIFIER_B] = {"classifier.bias", false},
        [BERT_TENSOR_MLM_DECODER_W] = {"decoder.weight", false},
        [BERT_TENSOR_MLM_DECODER_B] = {"decoder.bias", false},
    },
    /* modeling_mpnet.py: MPNetEmbeddings (no token types), MPNetLayer
     * (attention.attn.{q,k,v,o}, attention.LayerNorm, then BERT's
     * intermediate / output), the encoder's relative_attention_bias,
     * MPNetLMHead ("lm_head", as RoBERTa's) and MPNetClassificationHead
     * (classifier.dense + tanh + classifier.out_proj). */
    [BERT_FAMILY_MPNET] = {
        BERT_EMBEDDING_NAMES,
        [BERT_TENSOR_LAYER_QUERY_W] = {"encoder.layer.%zu.attention.attn.q.weight", true},
        [BERT_TENSOR_LAYER_QUERY_B] = {"encoder.layer.%zu.attention.attn.q.bias", true},
        [BERT_TENSOR_LAYER_KEY_W] = {"encoder.layer.%zu.attention.attn.k.weight", true},
        [BERT_TENSOR_LAYER_KEY_B] = {"encoder.layer.%zu.attention.attn.k.bias", true},
        [BERT_TENSOR_LAYER_VALUE_W] = {"encoder.layer.%zu.attention.attn.v.weight", true},
        [BERT_TENSOR_LAYER_VALUE_B] = {"encoder.layer.%zu.attention.attn.v.bias", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"encoder.layer.%zu.attention.attn.o.weight", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"encoder.layer.%zu.attention.attn.o.bias", true},
        [BERT_TENSOR_LAYER_ATTN_LN_G] = {"encoder.layer.%zu.attention.LayerNorm.weight", true},
        [BERT_TENSOR_LAYER_ATTN_LN_B] = {"encoder.layer.%zu.attention.LayerNorm.bias", true},
        BERT_FFN_NAMES,
        [BERT_TENSOR_REL_ATTN_BIAS] = {"encoder.relative_attention_bias.weight", true},
        ROBERTA_HEAD_NAMES,
    },
    /* modeling_hf_nomic_bert.py (remote code): NomicBertEmbeddings (word and
     * token type, no positions: RoPE), emb_ln, NomicBertBlock (attn.Wqkv,
     * attn.out_proj, norm1, mlp.fc11 / fc12 / fc2, norm2), NomicBertPooler,
     * NomicBertForSequenceClassification's classifier and
     * NomicBertForPreTraining's cls.predictions. Task models keep the
     * encoder under "bert.". Biases exist only where the config says. */
    [BERT_FAMILY_NOMIC_BERT] = {
        [BERT_TENSOR_WORD_EMB] = {"embeddings.word_embeddings.weight", true},
        [BERT_TENSOR_TYPE_EMB] = {"embeddings.token_type_embeddings.weight", true},
        [BERT_TENSOR_EMB_LN_G] = {"emb_ln.weight", true},
        [BERT_TENSOR_EMB_LN_B] = {"emb_ln.bias", true},
        [BERT_TENSOR_LAYER_QUERY_W] = {"encoder.layers.%zu.attn.Wqkv.weight", true},
        [BERT_TENSOR_LAYER_QUERY_B] = {"encoder.layers.%zu.attn.Wqkv.bias", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"encoder.layers.%zu.attn.out_proj.weight", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"encoder.layers.%zu.attn.out_proj.bias", true},
        [BERT_TENSOR_LAYER_ATTN_LN_G] = {"encoder.layers.%zu.norm1.weight", true},
        [BERT_TENSOR_LAYER_ATTN_LN_B] = {"encoder.layers.%zu.norm1.bias", true},
        [BERT_TENSOR_LAYER_FFN_IN_W] = {"encoder.layers.%zu.mlp.fc11.weight", true},
        [BERT_TENSOR_LAYER_FFN_IN_B] = {"encoder.layers.%zu.mlp.fc11.bias", true},
        [BERT_TENSOR_LAYER_FFN_GATE_W] = {"encoder.layers.%zu.mlp.fc12.weight", true},
        [BERT_TENSOR_LAYER_FFN_GATE_B] = {"encoder.layers.%zu.mlp.fc12.bias", true},
        [BERT_TENSOR_LAYER_FFN_OUT_W] = {"encoder.layers.%zu.mlp.fc2.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_B] = {"encoder.layers.%zu.mlp.fc2.bias", true},
        [BERT_TENSOR_LAYER_FFN_LN_G] = {"encoder.layers.%zu.norm2.weight", true},
        [BERT_TENSOR_LAYER_FFN_LN_B] = {"encoder.layers.%zu.norm2.bias", true},
        [BERT_TENSOR_POOLER_W] = {"pooler.dense.weight", true},
        [BERT_TENSOR_POOLER_B] = {"pooler.dense.bias", true},
        [BERT_TENSOR_CLASSIFIER_W] = {"classifier.weight", false},
        [BERT_TENSOR_CLASSIFIER_B] = {"classifier.bias", false},
        [BERT_TENSOR_MLM_DENSE_W] = {"cls.predictions.transform.dense.weight", false},
        [BERT_TENSOR_MLM_DENSE_B] = {"cls.predictions.transform.dense.bias", false},
        [BERT_TENSOR_MLM_LN_G] = {"cls.predictions.transform.layer_norm.weight", false},
        [BERT_TENSOR_MLM_LN_B] = {"cls.predictions.transform.layer_norm.bias", false},
        [BERT_TENSOR_MLM_DECODER_W] = {"cls.predictions.decoder.weight", false},
        [BERT_TENSOR_MLM_DECODER_B] = {"cls.predictions.decoder.bias", false},
    },
    /* JinaBERT v2 (jina-bert-implementation's modeling_bert.py, remote code):
     * BERT's names without position embeddings (ALiBi) and with
     * JinaBertGLUMLP (mlp.gated_layers (2I, H) without bias, mlp.wo,
     * mlp.layernorm) in place of intermediate / output; BERT's heads
     * (JinaBertFor{MaskedLM,SequenceClassification,TokenClassification,
     * QuestionAnswering}). */
    [BERT_FAMILY_JINA_BERT] = {
        [BERT_TENSOR_WORD_EMB] = {"embeddings.word_embeddings.weight", true},
        [BERT_TENSOR_EMB_LN_G] = {"embeddings.LayerNorm.weight", true},
        [BERT_TENSOR_EMB_LN_B] = {"embeddings.LayerNorm.bias", true},
        [BERT_TENSOR_TYPE_EMB] = {"embeddings.token_type_embeddings.weight", true},
        BERT_ATTENTION_NAMES,
        [BERT_TENSOR_LAYER_FFN_IN_W] = {"encoder.layer.%zu.mlp.gated_layers.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_W] = {"encoder.layer.%zu.mlp.wo.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_B] = {"encoder.layer.%zu.mlp.wo.bias", true},
        [BERT_TENSOR_LAYER_FFN_LN_G] = {"encoder.layer.%zu.mlp.layernorm.weight", true},
        [BERT_TENSOR_LAYER_FFN_LN_B] = {"encoder.layer.%zu.mlp.layernorm.bias", true},
        TOKEN_HEAD_NAMES,
        BERT_HEAD_NAMES,
    },
    /* modeling_deberta_v2.py: DebertaV2Embeddings without positions
     * (position_biased_input false) and with token types only when
     * type_vocab_size > 0, DisentangledSelfAttention's query_proj /
     * key_proj / value_proj (share_att_key: they also project the relative
     * embeddings), BERT's output / intermediate names, the encoder's
     * rel_embeddings and LayerNorm; ContextPooler ("pooler.dense", outside
     * the encoder) under the classifier, and the per-token Linear layers. */
    [BERT_FAMILY_DEBERTA_V2] = {
        [BERT_TENSOR_WORD_EMB] = {"embeddings.word_embeddings.weight", true},
        [BERT_TENSOR_TYPE_EMB] = {"embeddings.token_type_embeddings.weight", true},
        [BERT_TENSOR_EMB_LN_G] = {"embeddings.LayerNorm.weight", true},
        [BERT_TENSOR_EMB_LN_B] = {"embeddings.LayerNorm.bias", true},
        [BERT_TENSOR_LAYER_QUERY_W] = {"encoder.layer.%zu.attention.self.query_proj.weight", true},
        [BERT_TENSOR_LAYER_QUERY_B] = {"encoder.layer.%zu.attention.self.query_proj.bias", true},
        [BERT_TENSOR_LAYER_KEY_W] = {"encoder.layer.%zu.attention.self.key_proj.weight", true},
        [BERT_TENSOR_LAYER_KEY_B] = {"encoder.layer.%zu.attention.self.key_proj.bias", true},
        [BERT_TENSOR_LAYER_VALUE_W] = {"encoder.layer.%zu.attention.self.value_proj.weight", true},
        [BERT_TENSOR_LAYER_VALUE_B] = {"encoder.layer.%zu.attention.self.value_proj.bias", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"encoder.layer.%zu.attention.output.dense.weight", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"encoder.layer.%zu.attention.output.dense.bias", true},
        [BERT_TENSOR_LAYER_ATTN_LN_G] = {"encoder.layer.%zu.attention.output.LayerNorm.weight",
                                         true},
        [BERT_TENSOR_LAYER_ATTN_LN_B] = {"encoder.layer.%zu.attention.output.LayerNorm.bias",
                                         true},
        BERT_FFN_NAMES,
        [BERT_TENSOR_REL_EMB] = {"encoder.rel_embeddings.weight", true},
        [BERT_TENSOR_REL_LN_G] = {"encoder.LayerNorm.weight", true},
        [BERT_TENSOR_REL_LN_B] = {"encoder.LayerNorm.bias", true},
        [BERT_TENSOR_POOLER_W] = {"pooler.dense.weight", false},
        [BERT_TENSOR_POOLER_B] = {"pooler.dense.bias", false},
        [BERT_TENSOR_CLASSIFIER_W] = {"classifier.weight", false},
        [BERT_TENSOR_CLASSIFIER_B] = {"classifier.bias", false},
        TOKEN_HEAD_NAMES,
    },
    /* GTE "new" (Alibaba-NLP new-impl's modeling.py, remote code):
     * NewEmbeddings (word, token type, LayerNorm; RoPE, no positions),
     * NewLayer (attention.qkv_proj (3H, H), attention.o_proj, attn_ln,
     * mlp.up_gate_proj (2I, H) without bias, mlp.down_proj, mlp_ln), the
     * pooler under the encoder, and the task models' classifier,
     * qa_outputs and NewLMPredictionHead ("lm_head": dense, norm,
     * decoder). */
    [BERT_FAMILY_GTE] = {
        [BERT_TENSOR_WORD_EMB] = {"embeddings.word_embeddings.weight", true},
        [BERT_TENSOR_TYPE_EMB] = {"embeddings.token_type_embeddings.weight", true},
        [BERT_TENSOR_EMB_LN_G] = {"embeddings.LayerNorm.weight", true},
        [BERT_TENSOR_EMB_LN_B] = {"embeddings.LayerNorm.bias", true},
        [BERT_TENSOR_LAYER_QUERY_W] = {"encoder.layer.%zu.attention.qkv_proj.weight", true},
        [BERT_TENSOR_LAYER_QUERY_B] = {"encoder.layer.%zu.attention.qkv_proj.bias", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_W] = {"encoder.layer.%zu.attention.o_proj.weight", true},
        [BERT_TENSOR_LAYER_ATTN_OUT_B] = {"encoder.layer.%zu.attention.o_proj.bias", true},
        [BERT_TENSOR_LAYER_ATTN_LN_G] = {"encoder.layer.%zu.attn_ln.weight", true},
        [BERT_TENSOR_LAYER_ATTN_LN_B] = {"encoder.layer.%zu.attn_ln.bias", true},
        [BERT_TENSOR_LAYER_FFN_IN_W] = {"encoder.layer.%zu.mlp.up_gate_proj.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_W] = {"encoder.layer.%zu.mlp.down_proj.weight", true},
        [BERT_TENSOR_LAYER_FFN_OUT_B] = {"encoder.layer.%zu.mlp.down_proj.bias", true},
        [BERT_TENSOR_LAYER_FFN_LN_G] = {"encoder.layer.%zu.mlp_ln.weight", true},
        [BERT_TENSOR_LAYER_FFN_LN_B] = {"encoder.layer.%zu.mlp_ln.bias", true},
        [BERT_TENSOR_POOLER_W] = {"pooler.dense.weight", true},
        [BERT_TENSOR_POOLER_B] = {"pooler.dense.bias", true},
        [BERT_TENSOR_CLASSIFIER_W] = {"classifier.weight", false},
        [BERT_TENSOR_CLASSIFIER_B] = {"classifier.bias", false},
        TOKEN_HEAD_NAMES,
        [BERT_TENSOR_MLM_DENSE_W] = {"lm_head.dense.weight", false},
        [BERT_TENSOR_MLM_DENSE_B] = {"lm_head.dense.bias", false},
        [BERT_TENSOR_MLM_LN_G] = {"lm_head.norm.weight", false},
        [BERT_TENSOR_MLM_LN_B] = {"lm_head.norm.bias", false},
        [BERT_TENSOR_MLM_DECODER_W] = {"lm_head.decoder.weight", false},
        [BERT_TENSOR_MLM_DECODER_B] = {"lm_head.decoder.bias", false},
    },
};

static bool format_name(enum bert_family family, const char *pattern, bool base, size_t layer,
                        bool prefixed, char *buf, size_t size)
{
    const char *prefix = base && prefixed ? prefixes[family] : "";
    const char *slot = strstr(pattern, "%zu"); /* the layer number goes here */
    int n = slot == NULL ? snprintf(buf, size, "%s%s", prefix, pattern)
                         : snprintf(buf, size, "%s%.*s%zu%s", prefix, (int)(slot - pattern),
                                    pattern, layer, slot + 3);
    return n >= 0 && (size_t)n < size;
}

bool bert_tensor_name(enum bert_family family, enum bert_tensor tensor, size_t layer,
                      bool prefixed, char *buf, size_t size)
{
    if ((size_t)family >= BERT_FAMILY_COUNT || (size_t)tensor >= BERT_TENSOR_COUNT)
        return false;
    const struct tensor_name *t = &names[family][tensor];
    return t->name != NULL && format_name(family, t->name, t->base, layer, prefixed, buf, size);
}

bool bert_tensor_alt_name(enum bert_family family, enum bert_tensor tensor, size_t layer,
                          bool prefixed, char *buf, size_t size)
{
    char name[200];
    if (!bert_tensor_name(family, tensor, layer, prefixed, name, sizeof name))
        return false;
    if (tensor == BERT_TENSOR_MLM_DECODER_B &&
        (family == BERT_FAMILY_BERT || family == BERT_FAMILY_JINA_BERT))
        return snprintf(buf, size, "cls.predictions.decoder.bias") < (int)size;
    if (tensor == BERT_TENSOR_MLM_DECODER_B &&
        (family == BERT_FAMILY_ROBERTA || family == BERT_FAMILY_MPNET))
        return snprintf(buf, size, "lm_head.decoder.bias") < (int)size;
    /* TF-converted BERT checkpoints name LayerNorm parameters gamma/beta. */
    const char *ln = strstr(name, "LayerNorm.");
    if (ln == NULL)
        return false;
    bool is_weight = strcmp(ln, "LayerNorm.weight") == 0;
    int n = snprintf(buf, size, "%.*sLayerNorm.%s", (int)(ln - name), name,
                     is_weight ? "gamma" : "beta");
    return n >= 0 && (size_t)n < size;
}

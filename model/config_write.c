/* config.json from a struct bert_config (config.h): the Hugging Face keys
 * of each family, for `bert init` and the trainer's checkpoints. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "names.h"

/* ModernBertConfig's keys. */
static void write_modernbert(const struct bert_config *cfg, json_t *root)
{
    const struct bert_modernbert *m = &cfg->modern;
    json_object_set_new(root, "hidden_size", json_integer((json_int_t)cfg->hidden_size));
    json_object_set_new(root, "intermediate_size",
                        json_integer((json_int_t)cfg->intermediate_size));
    json_object_set_new(root, "num_hidden_layers", json_integer((json_int_t)cfg->num_layers));
    json_object_set_new(root, "num_attention_heads", json_integer((json_int_t)cfg->num_heads));
    json_object_set_new(root, "max_position_embeddings",
                        json_integer((json_int_t)cfg->max_position_embeddings));
    json_object_set_new(root, "norm_eps", json_real(cfg->layer_norm_eps));
    json_object_set_new(root, "hidden_activation",
                        json_string(bert_activation_name(cfg->activation)));
    json_object_set_new(root, "classifier_activation",
                        json_string(bert_activation_name(m->classifier_activation)));
    json_object_set_new(root, "classifier_pooling",
                        json_string(bert_pooling_name(m->classifier_pooling)));
    json_object_set_new(root, "global_rope_theta", json_real(m->global_rope_theta));
    json_object_set_new(root, "local_rope_theta", json_real(m->local_rope_theta));
    json_object_set_new(root, "global_attn_every_n_layers",
                        json_integer((json_int_t)m->global_attn_every));
    json_object_set_new(root, "local_attention", json_integer((json_int_t)m->local_window));
    json_object_set_new(root, "attention_bias", json_boolean(m->attention_bias));
    json_object_set_new(root, "mlp_bias", json_boolean(m->mlp_bias));
    json_object_set_new(root, "norm_bias", json_boolean(m->norm_bias));
    json_object_set_new(root, "classifier_bias", json_boolean(m->classifier_bias));
    json_object_set_new(root, "decoder_bias", json_true());
}

/* JinaBERT v2's keys beyond BERT's: model_type bert (the family's own name
 * is bert init's), ALiBi, the GLU kind, and hidden_act as the MLM
 * transform's activation. */
static void write_jina(const struct bert_config *cfg, json_t *root)
{
    json_object_set_new(root, "model_type", json_string("bert"));
    json_object_set_new(root, "position_embedding_type", json_string("alibi"));
    json_object_set_new(root, "feed_forward_type",
                        json_string(cfg->activation == BERT_ACTIVATION_RELU ? "reglu" : "geglu"));
    json_object_set_new(root, "hidden_act", json_string(bert_activation_name(cfg->mlm_activation)));
}

/* DebertaV2Config's disentangled-attention keys, as deberta-v3-base's
 * config.json has them. */
static void write_deberta(const struct bert_config *cfg, json_t *root)
{
    const struct bert_deberta *d = &cfg->deberta;
    json_object_set_new(root, "relative_attention", json_true());
    json_object_set_new(root, "max_relative_positions",
                        json_integer(d->max_relative_positions == cfg->max_position_embeddings
                                         ? -1
                                         : (json_int_t)d->max_relative_positions));
    json_object_set_new(root, "position_buckets",
                        json_integer(d->position_buckets ? (json_int_t)d->position_buckets : -1));
    json_t *types = json_array();
    if (d->p2c)
        json_array_append_new(types, json_string("p2c"));
    if (d->c2p)
        json_array_append_new(types, json_string("c2p"));
    json_object_set_new(root, "pos_att_type", types);
    json_object_set_new(root, "share_att_key", json_true());
    json_object_set_new(root, "position_biased_input", json_false());
    json_object_set_new(root, "norm_rel_ebd", json_string(d->rel_layer_norm ? "layer_norm" : "none"));
    json_object_set_new(root, "pooler_hidden_size", json_integer((json_int_t)cfg->hidden_size));
    json_object_set_new(root, "pooler_hidden_act",
                        json_string(bert_activation_name(cfg->pooler_activation)));
    json_object_set_new(root, "pooler_dropout", json_integer(0));
}

/* NewConfig's keys beyond BERT's, as gte-multilingual-base's config.json
 * has them: RoPE with rope_theta and, with a factor, NTK rope_scaling. */
static void write_gte(const struct bert_config *cfg, json_t *root)
{
    const struct bert_gte *g = &cfg->gte;
    json_object_set_new(root, "position_embedding_type", json_string("rope"));
    json_object_set_new(root, "layer_norm_type", json_string("layer_norm"));
    json_object_set_new(root, "rope_theta", json_real(g->rope_theta));
    json_object_set_new(root, "rope_scaling",
                        g->ntk_factor > 1.0
                            ? json_pack("{s:s, s:f}", "type", "ntk", "factor", g->ntk_factor)
                            : json_null());
    json_object_set_new(root, "pack_qkv", json_true());
}

/* NomicBertConfig's keys (GPT2Config names), as nomic-embed-text-v1.5's
 * config.json has them. */
static void write_nomic(const struct bert_config *cfg, json_t *root)
{
    const struct bert_nomic *n = &cfg->nomic;
    json_object_set_new(root, "n_embd", json_integer((json_int_t)cfg->hidden_size));
    json_object_set_new(root, "n_inner", json_integer((json_int_t)cfg->intermediate_size));
    json_object_set_new(root, "n_layer", json_integer((json_int_t)cfg->num_layers));
    json_object_set_new(root, "n_head", json_integer((json_int_t)cfg->num_heads));
    json_object_set_new(root, "n_positions",
                        json_integer((json_int_t)cfg->max_position_embeddings));
    json_object_set_new(root, "type_vocab_size", json_integer((json_int_t)cfg->type_vocab_size));
    json_object_set_new(root, "layer_norm_epsilon", json_real(cfg->layer_norm_eps));
    json_object_set_new(root, "activation_function",
                        json_string(cfg->activation == BERT_ACTIVATION_SILU ? "swiglu" : "geglu"));
    json_object_set_new(root, "rotary_emb_base", json_real(n->rotary_base));
    json_object_set_new(root, "rotary_emb_fraction", json_real(1.0));
    json_object_set_new(root, "rotary_emb_interleaved", json_false());
    json_object_set_new(root, "prenorm", json_false());
    json_object_set_new(root, "qkv_proj_bias", json_boolean(n->qkv_bias));
    json_object_set_new(root, "mlp_fc1_bias", json_boolean(n->fc1_bias));
    json_object_set_new(root, "mlp_fc2_bias", json_boolean(n->fc2_bias));
}

enum bert_status bert_config_write(const struct bert_config *cfg, const char *path,
                                   struct bert_error *err)
{
    json_t *root = json_object();
    json_t *id2label = json_object();
    json_t *label2id = json_object();
    for (size_t i = 0; i < cfg->num_labels; i++) {
        char key[32];
        snprintf(key, sizeof key, "%zu", i);
        json_object_set_new(id2label, key, json_string(cfg->id2label[i]));
        json_object_set_new(label2id, cfg->id2label[i], json_integer((json_int_t)i));
    }
    static const char *const problem_names[] = {
        [BERT_PROBLEM_SINGLE_LABEL] = "single_label_classification",
        [BERT_PROBLEM_MULTI_LABEL] = "multi_label_classification",
        [BERT_PROBLEM_REGRESSION] = "regression",
    };
    const char *model_type = cfg->model_type[0] ? cfg->model_type : "bert";
    char arch[96];
    snprintf(arch, sizeof arch, "%sModel", bert_family_class_prefix(model_type));
    json_object_set_new(root, "architectures",
                        json_pack("[s]", cfg->architecture[0] ? cfg->architecture : arch));
    json_object_set_new(root, "model_type", json_string(model_type));
    json_object_set_new(root, "vocab_size", json_integer((json_int_t)cfg->vocab_size));
    /* Keys in the order transformers writes them, so the same config gives
     * the same bytes. */
    if (cfg->family == BERT_FAMILY_DISTILBERT) {
        json_object_set_new(root, "dim", json_integer((json_int_t)cfg->hidden_size));
        json_object_set_new(root, "n_layers", json_integer((json_int_t)cfg->num_layers));
        json_object_set_new(root, "n_heads", json_integer((json_int_t)cfg->num_heads));
        json_object_set_new(root, "hidden_dim", json_integer((json_int_t)cfg->intermediate_size));
        json_object_set_new(root, "max_position_embeddings",
                            json_integer((json_int_t)cfg->max_position_embeddings));
        json_object_set_new(root, "activation", json_string(bert_activation_name(cfg->activation)));
        json_object_set_new(root, "sinusoidal_pos_embds", json_false());
        json_object_set_new(root, "dropout", json_real(0.1));
        json_object_set_new(root, "attention_dropout", json_real(0.1));
    } else if (cfg->family == BERT_FAMILY_MODERNBERT) {
        write_modernbert(cfg, root);
    } else if (cfg->family == BERT_FAMILY_NOMIC_BERT) {
        write_nomic(cfg, root);
    } else {
        json_object_set_new(root, "hidden_size", json_integer((json_int_t)cfg->hidden_size));
        if (cfg->family == BERT_FAMILY_ELECTRA)
            json_object_set_new(root, "embedding_size",
                                json_integer((json_int_t)cfg->embedding_size));
        json_object_set_new(root, "num_hidden_layers", json_integer((json_int_t)cfg->num_layers));
        json_object_set_new(root, "num_attention_heads", json_integer((json_int_t)cfg->num_heads));
        json_object_set_new(root, "intermediate_size",
                            json_integer((json_int_t)cfg->intermediate_size));
        json_object_set_new(root, "max_position_embeddings",
                            json_integer((json_int_t)cfg->max_position_embeddings));
        if (cfg->family != BERT_FAMILY_MPNET) /* MPNet has no token types */
            json_object_set_new(root, "type_vocab_size",
                                json_integer((json_int_t)cfg->type_vocab_size));
        json_object_set_new(root, "layer_norm_eps", json_real(cfg->layer_norm_eps));
        json_object_set_new(root, "hidden_act", json_string(bert_activation_name(cfg->activation)));
        json_object_set_new(root, "hidden_dropout_prob", json_real(0.1));
        json_object_set_new(root, "attention_probs_dropout_prob", json_real(0.1));
    }
    json_object_set_new(root, "initializer_range", json_real(0.02));
    json_object_set_new(root, "pad_token_id", json_integer(cfg->pad_token_id));
    if (cfg->family == BERT_FAMILY_MPNET)
        json_object_set_new(root, "relative_attention_num_buckets",
                            json_integer((json_int_t)cfg->relative_buckets));
    else if (cfg->family == BERT_FAMILY_JINA_BERT)
        write_jina(cfg, root);
    else if (cfg->family == BERT_FAMILY_DEBERTA_V2)
        write_deberta(cfg, root);
    else if (cfg->family == BERT_FAMILY_GTE)
        write_gte(cfg, root);
    else if (cfg->family != BERT_FAMILY_DISTILBERT && cfg->family != BERT_FAMILY_MODERNBERT &&
             cfg->family != BERT_FAMILY_NOMIC_BERT)
        json_object_set_new(root, "position_embedding_type", json_string("absolute"));
    json_object_set_new(root, "tie_word_embeddings", json_boolean(cfg->tie_word_embeddings));
    if (cfg->is_decoder)
        json_object_set_new(root, "is_decoder", json_true());
    json_object_set_new(root, "id2label", id2label);
    json_object_set_new(root, "label2id", label2id);
    if (cfg->problem_type != BERT_PROBLEM_UNSET)
        json_object_set_new(root, "problem_type", json_string(problem_names[cfg->problem_type]));
    json_object_set_new(root, "torch_dtype", json_string("float32"));
    enum bert_status st = BERT_OK;
    if (json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) != 0)
        st = bert_error_set(err, BERT_E_IO, "%s: cannot write", path);
    json_decref(root);
    return st;
}

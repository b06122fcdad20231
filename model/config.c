#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fileutil.h"
#include "names.h"

static const struct {
    const char *name;
    enum bert_activation act;
} activation_table[] = {
    {"gelu", BERT_ACTIVATION_GELU},
    {"gelu_new", BERT_ACTIVATION_GELU_TANH},
    {"gelu_pytorch_tanh", BERT_ACTIVATION_GELU_TANH},
    {"gelu_fast", BERT_ACTIVATION_GELU_TANH},
    {"relu", BERT_ACTIVATION_RELU},
    {"silu", BERT_ACTIVATION_SILU},
    {"swish", BERT_ACTIVATION_SILU},
    {"tanh", BERT_ACTIVATION_TANH},
};

static const char *const pooling_names[] = {
    [BERT_POOLING_CLS] = "cls",
    [BERT_POOLING_MEAN] = "mean",
    [BERT_POOLING_MAX] = "max",
};

const char *bert_pooling_name(enum bert_pooling pooling)
{
    return (size_t)pooling < sizeof pooling_names / sizeof pooling_names[0]
               ? pooling_names[pooling]
               : "?";
}

bool bert_pooling_parse(const char *name, enum bert_pooling *out)
{
    for (size_t i = 0; i < sizeof pooling_names / sizeof pooling_names[0]; i++) {
        if (strcmp(name, pooling_names[i]) == 0) {
            *out = (enum bert_pooling)i;
            return true;
        }
    }
    return false;
}

void bert_config_free(struct bert_config *cfg)
{
    if (cfg->id2label != NULL) {
        for (size_t i = 0; i < cfg->num_labels; i++)
            free(cfg->id2label[i]);
        free(cfg->id2label);
    }
    cfg->id2label = NULL;
    for (size_t i = 0; i < cfg->n_prompts; i++) {
        free(cfg->prompt_names[i]);
        free(cfg->prompt_texts[i]);
    }
    free(cfg->prompt_names);
    free(cfg->prompt_texts);
    cfg->prompt_names = cfg->prompt_texts = NULL;
    cfg->n_prompts = 0;
    cfg->default_prompt = -1;
}

/* Read a positive integer key; `def` 0 means the key is required. */
static enum bert_status get_size(const char *name, json_t *root, const char *key, size_t def,
                                 size_t *out, struct bert_error *err)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        if (def == 0)
            return bert_error_set(err, BERT_E_FORMAT, "%s: missing required key \"%s\"", name,
                                  key);
        *out = def;
        return BERT_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
        json_integer_value(v) > (json_int_t)INT32_MAX)
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"%s\" must be a positive integer", name,
                              key);
    *out = (size_t)json_integer_value(v);
    return BERT_OK;
}

static enum bert_status parse_labels(const char *name, json_t *root, struct bert_config *cfg,
                                     struct bert_error *err)
{
    json_t *id2label = json_object_get(root, "id2label");
    json_t *num = json_object_get(root, "num_labels");
    size_t n = 2; /* transformers' PretrainedConfig default */
    if (json_is_object(id2label) && json_object_size(id2label) > 0) {
        n = json_object_size(id2label);
    } else if (num != NULL && !json_is_null(num)) {
        if (!json_is_integer(num) || json_integer_value(num) <= 0 ||
            json_integer_value(num) > 100000)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: \"num_labels\" must be a positive integer", name);
        n = (size_t)json_integer_value(num);
    } else if (id2label != NULL && !json_is_null(id2label) && !json_is_object(id2label)) {
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"id2label\" must be an object", name);
    }
    cfg->id2label = calloc(n, sizeof *cfg->id2label);
    if (cfg->id2label == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    cfg->num_labels = n;
    if (json_is_object(id2label)) {
        const char *key;
        json_t *label;
        json_object_foreach(id2label, key, label) {
            char *end;
            long idx = strtol(key, &end, 10);
            if (*key == '\0' || *end != '\0' || idx < 0 || (size_t)idx >= n ||
                !json_is_string(label))
                return bert_error_set(err, BERT_E_FORMAT,
                                      "%s: id2label must map the ids 0..%zu to strings "
                                      "(bad entry \"%.32s\")",
                                      name, n - 1, key);
            if (cfg->id2label[idx] != NULL)
                return bert_error_set(err, BERT_E_FORMAT, "%s: id2label repeats id %ld", name,
                                      idx);
            cfg->id2label[idx] = strdup(json_string_value(label));
            if (cfg->id2label[idx] == NULL)
                return bert_error_set(err, BERT_E_NOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (cfg->id2label[i] != NULL)
            continue;
        char buf[32];
        snprintf(buf, sizeof buf, "LABEL_%zu", i);
        cfg->id2label[i] = strdup(buf);
        if (cfg->id2label[i] == NULL)
            return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    return BERT_OK;
}

static enum bert_status parse_activation(const char *name, json_t *root, const char *key,
                                         enum bert_activation *out, struct bert_error *err)
{
    json_t *act = json_object_get(root, key);
    const char *act_name = act == NULL || json_is_null(act) ? "gelu" : json_string_value(act);
    for (size_t i = 0; act_name && i < sizeof activation_table / sizeof activation_table[0]; i++) {
        if (strcmp(act_name, activation_table[i].name) == 0) {
            *out = activation_table[i].act;
            return BERT_OK;
        }
    }
    return bert_error_set(err, BERT_E_UNSUPPORTED,
                          "%s: %s \"%.40s\" is not supported (supported: gelu, "
                          "gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu, swish, tanh)",
                          name, key, act_name ? act_name : "(not a string)");
}

/* BertConfig keys, shared by RoBERTa and ELECTRA (which adds embedding_size). */
static enum bert_status parse_bert_geometry(const char *name, json_t *root,
                                            struct bert_config *cfg, struct bert_error *err)
{
    enum bert_status st;
    if ((st = get_size(name, root, "vocab_size", 0, &cfg->vocab_size, err)) ||
        (st = get_size(name, root, "hidden_size", 0, &cfg->hidden_size, err)) ||
        (st = get_size(name, root, "num_hidden_layers", 0, &cfg->num_layers, err)) ||
        (st = get_size(name, root, "num_attention_heads", 0, &cfg->num_heads, err)) ||
        (st = get_size(name, root, "intermediate_size", 0, &cfg->intermediate_size, err)) ||
        (st = get_size(name, root, "max_position_embeddings", 512,
                       &cfg->max_position_embeddings, err)) ||
        (cfg->family != BERT_FAMILY_DEBERTA_V2 && /* may be 0: config_deberta.c */
         (st = get_size(name, root, "type_vocab_size", 2, &cfg->type_vocab_size, err))))
        return st;
    /* ElectraConfig's embedding_size defaults to 128. */
    cfg->embedding_size = cfg->hidden_size;
    if (cfg->family == BERT_FAMILY_ELECTRA &&
        (st = get_size(name, root, "embedding_size", 128, &cfg->embedding_size, err)))
        return st;

    json_t *eps = json_object_get(root, "layer_norm_eps");
    cfg->layer_norm_eps = 1e-12f;
    if (eps != NULL && !json_is_null(eps)) {
        if (!json_is_number(eps) || json_number_value(eps) <= 0 || json_number_value(eps) > 1)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: \"layer_norm_eps\" must be a number in (0, 1]", name);
        cfg->layer_norm_eps = (float)json_number_value(eps);
    }
    return parse_activation(name, root, "hidden_act", &cfg->activation, err);
}

/* DistilBertConfig names its keys differently, has no token types, and
 * fixes every LayerNorm's eps at 1e-12. Sinusoidal position embeddings are
 * stored in the checkpoint like learned ones, so they need nothing here. */
static enum bert_status parse_distilbert_geometry(const char *name, json_t *root,
                                                  struct bert_config *cfg,
                                                  struct bert_error *err)
{
    enum bert_status st;
    if ((st = get_size(name, root, "vocab_size", 0, &cfg->vocab_size, err)) ||
        (st = get_size(name, root, "dim", 768, &cfg->hidden_size, err)) ||
        (st = get_size(name, root, "n_layers", 6, &cfg->num_layers, err)) ||
        (st = get_size(name, root, "n_heads", 12, &cfg->num_heads, err)) ||
        (st = get_size(name, root, "hidden_dim", 3072, &cfg->intermediate_size, err)) ||
        (st = get_size(name, root, "max_position_embeddings", 512,
                       &cfg->max_position_embeddings, err)))
        return st;
    cfg->embedding_size = cfg->hidden_size;
    cfg->type_vocab_size = 0;
    cfg->layer_norm_eps = 1e-12f;
    return parse_activation(name, root, "activation", &cfg->activation, err);
}

/* A positive number; `def` when the key is absent. */
static enum bert_status get_real(const char *name, json_t *root, const char *key, double def,
                                 double *out, struct bert_error *err)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return BERT_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0))
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"%s\" must be a positive number", name,
                              key);
    *out = json_number_value(v);
    return BERT_OK;
}

static bool get_flag(json_t *root, const char *key, bool def)
{
    json_t *v = json_object_get(root, key);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

/* Newer transformers write the thetas as rope_parameters per layer type. */
static enum bert_status modernbert_thetas(const char *name, json_t *root,
                                          struct bert_modernbert *m, struct bert_error *err)
{
    enum bert_status st;
    if ((st = get_real(name, root, "global_rope_theta", 160000.0, &m->global_rope_theta, err)) ||
        (st = get_real(name, root, "local_rope_theta", 10000.0, &m->local_rope_theta, err)))
        return st;
    json_t *rp = json_object_get(root, "rope_parameters");
    if (!json_is_object(rp))
        return BERT_OK;
    json_t *full = json_object_get(rp, "full_attention");
    json_t *sliding = json_object_get(rp, "sliding_attention");
    if ((json_is_object(full) &&
         (st = get_real(name, full, "rope_theta", m->global_rope_theta, &m->global_rope_theta,
                        err))) ||
        (json_is_object(sliding) &&
         (st = get_real(name, sliding, "rope_theta", m->local_rope_theta, &m->local_rope_theta,
                        err))))
        return st;
    return BERT_OK;
}

/* ModernBertConfig: its own key names and defaults (ModernBERT-base's), no
 * position embeddings (RoPE) and no token types. */
static enum bert_status parse_modernbert_geometry(const char *name, json_t *root,
                                                  struct bert_config *cfg,
                                                  struct bert_error *err)
{
    struct bert_modernbert *m = &cfg->modern;
    enum bert_status st;
    double eps = 1e-5;
    if ((st = get_size(name, root, "vocab_size", 50368, &cfg->vocab_size, err)) ||
        (st = get_size(name, root, "hidden_size", 768, &cfg->hidden_size, err)) ||
        (st = get_size(name, root, "num_hidden_layers", 22, &cfg->num_layers, err)) ||
        (st = get_size(name, root, "num_attention_heads", 12, &cfg->num_heads, err)) ||
        (st = get_size(name, root, "intermediate_size", 1152, &cfg->intermediate_size, err)) ||
        (st = get_size(name, root, "max_position_embeddings", 8192,
                       &cfg->max_position_embeddings, err)) ||
        (st = get_size(name, root, "global_attn_every_n_layers", 1, &m->global_attn_every,
                       err)) ||
        (st = get_size(name, root, "local_attention", 128, &m->local_window, err)) ||
        (st = get_real(name, root, "norm_eps", 1e-5, &eps, err)) ||
        (st = modernbert_thetas(name, root, m, err)))
        return st;
    cfg->embedding_size = cfg->hidden_size;
    cfg->type_vocab_size = 0;
    cfg->layer_norm_eps = (float)eps;
    m->attention_bias = get_flag(root, "attention_bias", false);
    m->mlp_bias = get_flag(root, "mlp_bias", false);
    m->norm_bias = get_flag(root, "norm_bias", false);
    m->classifier_bias = get_flag(root, "classifier_bias", false);
    json_t *pool = json_object_get(root, "classifier_pooling");
    const char *pool_name = json_is_string(pool) ? json_string_value(pool) : "cls";
    if (!bert_pooling_parse(pool_name, &m->classifier_pooling) ||
        m->classifier_pooling == BERT_POOLING_MAX)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: classifier_pooling \"%.40s\" is not supported (supported: "
                              "cls, mean)",
                              name, pool_name);
    if ((st = parse_activation(name, root, "classifier_activation", &m->classifier_activation,
                               err)))
        return st;
    return parse_activation(name, root, "hidden_activation", &cfg->activation, err);
}

/* A NomicBertConfig key that must keep the one value bertserve computes:
 * `want` true / false for a flag; a number key must be absent or null. */
static enum bert_status nomic_fixed(const char *name, json_t *root, const char *key, int want,
                                    struct bert_error *err)
{
    json_t *v = json_object_get(root, key);
    const bool ok = want < 0 ? v == NULL || json_is_null(v)
                             : get_flag(root, key, false) == (want == 1) &&
                                   (v == NULL || json_is_boolean(v));
    if (ok)
        return BERT_OK;
    return bert_error_set(err, BERT_E_UNSUPPORTED,
                          "%s: %s %s is not supported (bertserve runs NomicBERT with %s)", name,
                          key, want < 0 ? "set" : want ? "false" : "true",
                          want < 0 ? "it null" : want ? "it true" : "it false");
}

/* NomicBertConfig (GPT2Config keys, modeling_hf_nomic_bert.py): post-LN
 * blocks with a fused Wqkv, full-width non-interleaved RoPE, a gated MLP
 * (swiglu: fc11 * silu(fc12); geglu: fc11 * gelu(fc12)), token types, and
 * a vocabulary padded up to pad_vocab_size_multiple. Every other variant the
 * remote code has is refused here, naming the key. */
static enum bert_status parse_nomic_geometry(const char *name, json_t *root,
                                             struct bert_config *cfg, struct bert_error *err)
{
    struct bert_nomic *n = &cfg->nomic;
    enum bert_status st;
    size_t multiple = 1;
    double eps = 1e-5, fraction = 0.0;
    if ((st = get_size(name, root, "vocab_size", 0, &cfg->vocab_size, err)) ||
        (st = get_size(name, root, "n_embd", 768, &cfg->hidden_size, err)) ||
        (st = get_size(name, root, "n_layer", 12, &cfg->num_layers, err)) ||
        (st = get_size(name, root, "n_head", 12, &cfg->num_heads, err)) ||
        (st = get_size(name, root, "n_inner", 0, &cfg->intermediate_size, err)) ||
        (st = get_size(name, root, "n_positions", 1024, &cfg->max_position_embeddings, err)) ||
        (st = get_size(name, root, "type_vocab_size", 2, &cfg->type_vocab_size, err)) ||
        (st = get_size(name, root, "pad_vocab_size_multiple", 1, &multiple, err)) ||
        (st = get_real(name, root, "layer_norm_epsilon", 1e-5, &eps, err)) ||
        (st = get_real(name, root, "rotary_emb_base", 10000.0, &n->rotary_base, err)) ||
        (st = get_real(name, root, "rotary_emb_fraction", 1e-300, &fraction, err)))
        return st;
    static const struct {
        const char *key;
        int want;
    } fixed[] = {{"prenorm", 0},           {"parallel_block", 0},
                 {"use_rms_norm", 0},      {"rotary_emb_interleaved", 0},
                 {"causal", 0},            {"rotary_emb_scale_base", -1},
                 {"rotary_scaling_factor", -1}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if ((st = nomic_fixed(name, root, fixed[i].key, fixed[i].want, err)))
            return st;
    if (fraction != 1.0)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: rotary_emb_fraction %g is not supported (supported: 1.0, "
                              "RoPE over the whole head)",
                              name, fraction == 1e-300 ? 0.0 : fraction);
    json_t *act = json_object_get(root, "activation_function");
    const char *act_name = json_is_string(act) ? json_string_value(act) : "gelu_new";
    if (strcmp(act_name, "swiglu") != 0 && strcmp(act_name, "geglu") != 0)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: activation_function \"%.40s\" is not supported (supported: "
                              "swiglu, geglu)",
                              name, act_name);
    cfg->activation = act_name[0] == 's' ? BERT_ACTIVATION_SILU : BERT_ACTIVATION_GELU;
    /* NomicBertModel rounds the vocabulary up to the multiple; the rows past
     * the tokenizer's are padding. */
    if (cfg->vocab_size % multiple != 0)
        cfg->vocab_size += multiple - cfg->vocab_size % multiple;
    cfg->embedding_size = cfg->hidden_size;
    cfg->layer_norm_eps = (float)eps;
    n->qkv_bias = get_flag(root, "qkv_proj_bias", true);
    n->fc1_bias = get_flag(root, "mlp_fc1_bias", true);
    n->fc2_bias = get_flag(root, "mlp_fc2_bias", true);
    if (cfg->token_head != BERT_TOKEN_HEAD_NONE)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: architectures \"%.60s\" is not supported for nomic_bert "
                              "(supported: NomicBertModel, NomicBertForPreTraining, "
                              "NomicBertForSequenceClassification)",
                              name, cfg->architecture);
    return BERT_OK;
}

/* JinaBertConfig (jina-bert-implementation): BERT's keys, ALiBi instead of
 * position embeddings, and feed_forward_type: its JinaBertGLUMLP computes
 * act(first half) * second half of gated_layers with exact GELU (geglu) or
 * ReLU (reglu) whatever hidden_act says; hidden_act stays the MLM
 * transform's. */
static enum bert_status parse_jina_extras(const char *name, json_t *root,
                                          struct bert_config *cfg, struct bert_error *err)
{
    json_t *ff = json_object_get(root, "feed_forward_type");
    const char *ff_name = json_is_string(ff) ? json_string_value(ff) : "original";
    cfg->mlm_activation = cfg->activation;
    if (strcmp(ff_name, "geglu") == 0)
        cfg->activation = BERT_ACTIVATION_GELU;
    else if (strcmp(ff_name, "reglu") == 0)
        cfg->activation = BERT_ACTIVATION_RELU;
    else
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: feed_forward_type \"%.40s\" is not supported with "
                              "position_embedding_type alibi (supported: geglu, reglu)",
                              name, ff_name);
    return BERT_OK;
}

/* NewConfig (GTE's remote code configuration.py / modeling.py): BERT's
 * geometry keys with its defaults, RoPE with rope_theta and an optional NTK
 * rope_scaling, post-LN layer_norm layers, a fused qkv_proj. The variants
 * the remote code also has (absolute positions, rms_norm, separate q / k /
 * v, logn attention scaling, mixed NTK, other scalings) are refused naming
 * the key. position_embedding_type was checked by parse_root. */
static enum bert_status parse_gte_geometry(const char *name, json_t *root,
                                           struct bert_config *cfg, struct bert_error *err)
{
    struct bert_gte *g = &cfg->gte;
    enum bert_status st;
    double eps = 1e-12;
    json_t *types = json_object_get(root, "type_vocab_size");
    if ((st = get_size(name, root, "vocab_size", 30528, &cfg->vocab_size, err)) ||
        (st = get_size(name, root, "hidden_size", 768, &cfg->hidden_size, err)) ||
        (st = get_size(name, root, "num_hidden_layers", 12, &cfg->num_layers, err)) ||
        (st = get_size(name, root, "num_attention_heads", 12, &cfg->num_heads, err)) ||
        (st = get_size(name, root, "intermediate_size", 3072, &cfg->intermediate_size, err)) ||
        (st = get_size(name, root, "max_position_embeddings", 2048,
                       &cfg->max_position_embeddings, err)) ||
        /* 0 turns the token type embeddings off (NewEmbeddings). */
        (!(json_is_integer(types) && json_integer_value(types) == 0) &&
         (st = get_size(name, root, "type_vocab_size", 1, &cfg->type_vocab_size, err))) ||
        (st = get_real(name, root, "layer_norm_eps", 1e-12, &eps, err)) ||
        (st = get_real(name, root, "rope_theta", 10000.0, &g->rope_theta, err)))
        return st;
    json_t *ln = json_object_get(root, "layer_norm_type");
    const char *bad = json_is_string(ln) && strcmp(json_string_value(ln), "layer_norm") != 0
                          ? "layer_norm_type (supported: layer_norm)"
                      : !get_flag(root, "pack_qkv", true) ? "pack_qkv false (supported: true)"
                      : get_flag(root, "logn_attention_scale", false)
                          ? "logn_attention_scale true (supported: false)"
                          : NULL;
    g->ntk_factor = 1.0;
    json_t *rs = json_object_get(root, "rope_scaling");
    if (bad == NULL && rs != NULL && !json_is_null(rs)) {
        json_t *type = json_object_get(rs, "type");
        type = type != NULL ? type : json_object_get(rs, "rope_type");
        json_t *factor = json_object_get(rs, "factor");
        if (!json_is_object(rs) || !json_is_string(type) ||
            strcmp(json_string_value(type), "ntk") != 0 || json_object_get(rs, "mixed_b"))
            bad = "rope_scaling (supported: null, or {\"type\": \"ntk\", \"factor\": f} "
                  "without mixed_b)";
        else if (!json_is_number(factor) || !(json_number_value(factor) > 0))
            bad = "rope_scaling.factor (must be a positive number)";
        /* The remote code scales only when max_position_embeddings * factor
         * exceeds max_position_embeddings. */
        else if (json_number_value(factor) > 1.0)
            g->ntk_factor = json_number_value(factor);
    }
    if (bad != NULL)
        return bert_error_set(err, BERT_E_UNSUPPORTED, "%s: %s is not supported for GTE", name,
                              bad);
    cfg->embedding_size = cfg->hidden_size;
    cfg->layer_norm_eps = (float)eps;
    return parse_activation(name, root, "hidden_act", &cfg->activation, err);
}

/* MPNetConfig: BERT's keys without token types, and the buckets of the
 * relative position bias. modeling_mpnet.py sizes relative_attention_bias
 * by relative_attention_num_buckets but buckets distances with a fixed 32
 * (compute_position_bias' default), so any other count computes something
 * no checkpoint was trained with. */
static enum bert_status parse_mpnet_extras(const char *name, json_t *root,
                                           struct bert_config *cfg, struct bert_error *err)
{
    cfg->type_vocab_size = 0;
    enum bert_status st = get_size(name, root, "relative_attention_num_buckets", 32,
                                   &cfg->relative_buckets, err);
    if (st == BERT_OK && cfg->relative_buckets != 32)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: relative_attention_num_buckets %zu is not supported "
                              "(supported: 32, the buckets modeling_mpnet.py computes)",
                              name, cfg->relative_buckets);
    return st;
}

/* What differs between families beyond the geometry: where positions start
 * and the activations of the heads (modeling_*.py of each family). */
static enum bert_status set_family_details(const char *name, struct bert_config *cfg,
                                           struct bert_error *err)
{
    cfg->position_offset = 0;
    cfg->pooler_activation = BERT_ACTIVATION_TANH;
    cfg->mlm_activation = cfg->activation;
    switch (cfg->family) {
    case BERT_FAMILY_ROBERTA:
    case BERT_FAMILY_MPNET: {
        /* create_position_ids_from_input_ids: padding_idx + 1 onwards. MPNet's
         * padding_idx is 1 whatever pad_token_id says (MPNetEmbeddings). */
        const int32_t padding_idx = cfg->family == BERT_FAMILY_MPNET ? 1 : cfg->pad_token_id;
        if (padding_idx < 0 || (size_t)padding_idx + 2 > cfg->max_position_embeddings)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: pad_token_id %d leaves no position embeddings (positions "
                                  "start at padding_idx %d + 1; max_position_embeddings is %zu)",
                                  name, cfg->pad_token_id, padding_idx,
                                  cfg->max_position_embeddings);
        cfg->position_offset = (size_t)padding_idx + 1;
        /* RobertaLMHead and MPNetLMHead call gelu whatever hidden_act is. */
        cfg->mlm_activation = BERT_ACTIVATION_GELU;
        break;
    }
    case BERT_FAMILY_DISTILBERT:
        cfg->pooler_activation = BERT_ACTIVATION_RELU; /* pre_classifier + ReLU */
        break;
    case BERT_FAMILY_MODERNBERT:
        /* One ModernBertPredictionHead serves the MLM decoder and the
         * classifier, with classifier_activation (parsed with the geometry). */
        cfg->pooler_activation = cfg->modern.classifier_activation;
        cfg->mlm_activation = cfg->pooler_activation;
        break;
    case BERT_FAMILY_ELECTRA:
        /* ElectraClassificationHead and ElectraGeneratorPredictions use gelu. */
        cfg->pooler_activation = BERT_ACTIVATION_GELU;
        cfg->mlm_activation = BERT_ACTIVATION_GELU;
        break;
    default:
        break;
    }
    return BERT_OK;
}

/* The per-token head an architecture class name ends in, if any. */
static enum bert_token_head token_head_of(const char *architecture)
{
    static const char token_cls[] = "ForTokenClassification", qa[] = "ForQuestionAnswering";
    const size_t al = strlen(architecture);
    if (al > sizeof token_cls - 1 &&
        strcmp(architecture + al - (sizeof token_cls - 1), token_cls) == 0)
        return BERT_TOKEN_HEAD_CLASSIFICATION;
    if (al > sizeof qa - 1 && strcmp(architecture + al - (sizeof qa - 1), qa) == 0)
        return BERT_TOKEN_HEAD_QUESTION_ANSWERING;
    return BERT_TOKEN_HEAD_NONE;
}

/* The CrossEncoder activation, as sentence-transformers reads it: the newer
 * "sentence_transformers" object first. A torch module the engine does not
 * apply is refused: the scores would differ from sentence-transformers'. */
static enum bert_status parse_ce_activation(const char *name, json_t *root,
                                            struct bert_config *cfg, struct bert_error *err)
{
    static const struct {
        const char *module;
        enum bert_ce_activation act;
    } known[] = {{"torch.nn.modules.activation.Sigmoid", BERT_CE_SIGMOID},
                 {"torch.nn.modules.activation.Softmax", BERT_CE_SIGMOID}, /* one label */
                 {"torch.nn.modules.linear.Identity", BERT_CE_IDENTITY},
                 {"torch.nn.modules.activation.Tanh", BERT_CE_TANH}};
    json_t *st_obj = json_object_get(root, "sentence_transformers");
    json_t *v = json_object_get(st_obj, "activation_fn");
    const char *key = "sentence_transformers.activation_fn";
    if (v == NULL || json_is_null(v)) {
        v = json_object_get(root, "sbert_ce_default_activation_function");
        key = "sbert_ce_default_activation_function";
    }
    cfg->ce_activation = BERT_CE_SIGMOID;
    if (v == NULL || json_is_null(v))
        return BERT_OK;
    const char *fn = json_string_value(v);
    for (size_t i = 0; fn != NULL && i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(fn, known[i].module) == 0) {
            cfg->ce_activation = known[i].act;
            return BERT_OK;
        }
    }
    return bert_error_set(err, BERT_E_UNSUPPORTED,
                          "%s: %s \"%.100s\" is not supported (Sigmoid, Softmax, Identity and "
                          "Tanh are)",
                          name, key, fn ? fn : "(not a string)");
}

static enum bert_status parse_root(const char *name, json_t *root, struct bert_config *cfg,
                                   struct bert_error *err)
{
    if (!json_is_object(root))
        return bert_error_set(err, BERT_E_FORMAT, "%s: not a JSON object", name);

    json_t *archs = json_object_get(root, "architectures");
    if (json_is_array(archs) && json_is_string(json_array_get(archs, 0)))
        snprintf(cfg->architecture, sizeof cfg->architecture, "%s",
                 json_string_value(json_array_get(archs, 0)));
    cfg->token_head = token_head_of(cfg->architecture);
    for (size_t i = 1; json_is_array(archs) && i < json_array_size(archs) &&
                       cfg->token_head == BERT_TOKEN_HEAD_NONE &&
                       cfg->listed_token_head == BERT_TOKEN_HEAD_NONE;
         i++)
        if (json_is_string(json_array_get(archs, i)))
            cfg->listed_token_head = token_head_of(json_string_value(json_array_get(archs, i)));

    /* Old configs lack model_type; transformers then goes by the architecture. */
    json_t *mt = json_object_get(root, "model_type");
    const char *model_type = json_is_string(mt) ? json_string_value(mt)
                             : strncmp(cfg->architecture, "Bert", 4) == 0 ? "bert"
                                                                         : NULL;
    if (model_type == NULL)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: no \"model_type\" (supported: %s)", name,
                              bert_family_supported_types());
    if (!bert_family_from_model_type(model_type, &cfg->family))
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: model_type \"%.40s\" is not supported (supported: %s)", name,
                              model_type, bert_family_supported_types());
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", model_type);

    /* ModernBERT's positions are RoPE whatever this key says. JinaBERT v2
     * is a BERT config whose positions are ALiBi. */
    json_t *pet = cfg->family == BERT_FAMILY_MODERNBERT
                      ? NULL
                      : json_object_get(root, "position_embedding_type");
    if (cfg->family == BERT_FAMILY_BERT && json_is_string(pet) &&
        strcmp(json_string_value(pet), "alibi") == 0)
        cfg->family = BERT_FAMILY_JINA_BERT;
    const char *positions = cfg->family == BERT_FAMILY_JINA_BERT ? "alibi"
                            : cfg->family == BERT_FAMILY_GTE      ? "rope"
                                                                  : "absolute";
    if (pet != NULL && !json_is_null(pet) &&
        (!json_is_string(pet) || strcmp(json_string_value(pet), positions) != 0))
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: position_embedding_type \"%.40s\" is not supported "
                              "(supported: absolute; alibi for model_type bert; rope for new)",
                              name, json_is_string(pet) ? json_string_value(pet) : "?");
    /* A causal BERT is the trainer's (cli/train.c --objective clm): it parses
     * here and the engine refuses to run it (model/encoder.c). */
    if ((cfg->family != BERT_FAMILY_BERT && json_is_true(json_object_get(root, "is_decoder"))) ||
        json_is_true(json_object_get(root, "add_cross_attention")))
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: decoder configurations (is_decoder, add_cross_attention) are "
                              "not supported; bertserve runs encoders",
                              name);

    enum bert_status st = cfg->family == BERT_FAMILY_DISTILBERT
                              ? parse_distilbert_geometry(name, root, cfg, err)
                          : cfg->family == BERT_FAMILY_MODERNBERT
                              ? parse_modernbert_geometry(name, root, cfg, err)
                          : cfg->family == BERT_FAMILY_NOMIC_BERT
                              ? parse_nomic_geometry(name, root, cfg, err)
                          : cfg->family == BERT_FAMILY_GTE
                              ? parse_gte_geometry(name, root, cfg, err)
                              : parse_bert_geometry(name, root, cfg, err);
    if (st != BERT_OK || (cfg->family == BERT_FAMILY_MPNET &&
                          (st = parse_mpnet_extras(name, root, cfg, err)) != BERT_OK))
        return st;
    if (cfg->family == BERT_FAMILY_DEBERTA_V2 &&
        ((st = bert_config_parse_deberta(name, root, cfg, err)) != BERT_OK))
        return st;
    if (cfg->hidden_size % cfg->num_heads != 0)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: hidden_size %zu is not a multiple of num_attention_heads %zu",
                              name, cfg->hidden_size, cfg->num_heads);
    if ((cfg->family == BERT_FAMILY_MODERNBERT || cfg->family == BERT_FAMILY_NOMIC_BERT ||
         cfg->family == BERT_FAMILY_GTE) &&
        (cfg->hidden_size / cfg->num_heads) % 2 != 0)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: the head size %zu must be even (RoPE rotates pairs of halves)",
                              name, cfg->hidden_size / cfg->num_heads);

    json_t *pad = json_object_get(root, "pad_token_id");
    /* RobertaConfig's and MPNetConfig's default pad_token_id is 1. */
    int32_t pad_default =
        cfg->family == BERT_FAMILY_ROBERTA || cfg->family == BERT_FAMILY_MPNET ? 1 : 0;
    cfg->pad_token_id = json_is_integer(pad) ? (int32_t)json_integer_value(pad) : pad_default;
    if ((st = set_family_details(name, cfg, err)) != BERT_OK ||
        (cfg->family == BERT_FAMILY_JINA_BERT && (st = parse_jina_extras(name, root, cfg, err))) ||
        (cfg->family == BERT_FAMILY_DEBERTA_V2 && /* ContextPooler's activation */
         (st = parse_activation(name, root, "pooler_hidden_act", &cfg->pooler_activation, err))))
        return st;

    json_t *tie = json_object_get(root, "tie_word_embeddings");
    cfg->tie_word_embeddings = tie == NULL || json_is_null(tie) || json_is_true(tie);
    cfg->is_decoder = get_flag(root, "is_decoder", false);

    json_t *pt = json_object_get(root, "problem_type");
    cfg->problem_type = BERT_PROBLEM_UNSET;
    if (json_is_string(pt)) {
        const char *p = json_string_value(pt);
        if (strcmp(p, "single_label_classification") == 0)
            cfg->problem_type = BERT_PROBLEM_SINGLE_LABEL;
        else if (strcmp(p, "multi_label_classification") == 0)
            cfg->problem_type = BERT_PROBLEM_MULTI_LABEL;
        else if (strcmp(p, "regression") == 0)
            cfg->problem_type = BERT_PROBLEM_REGRESSION;
        else
            return bert_error_set(err, BERT_E_FORMAT, "%s: unknown problem_type \"%.40s\"", name,
                                  p);
    }
    if ((st = parse_ce_activation(name, root, cfg, err)) != BERT_OK)
        return st;
    return parse_labels(name, root, cfg, err);
}

enum bert_status bert_config_parse(const char *name, const char *json, size_t len,
                                   struct bert_config *cfg, struct bert_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->pooling = BERT_POOLING_MEAN;
    cfg->default_prompt = -1;
    json_error_t jerr;
    json_t *root = file_parse_json(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s:%d:%d: invalid JSON: %s", name, jerr.line,
                              jerr.column, jerr.text);
    enum bert_status st = parse_root(name, root, cfg, err);
    json_decref(root);
    if (st != BERT_OK)
        bert_config_free(cfg);
    return st;
}

/* sentence-transformers Pooling config: exactly one of the modes we run. */
static enum bert_status read_pooling(const char *path, struct bert_config *cfg,
                                     struct bert_error *err)
{
    json_t *root;
    enum bert_status st = file_load_json(path, &root, err);
    if (st != BERT_OK)
        return st;
    static const struct {
        const char *key;
        enum bert_pooling mode;
        bool supported;
    } modes[] = {
        {"pooling_mode_cls_token", BERT_POOLING_CLS, true},
        {"pooling_mode_mean_tokens", BERT_POOLING_MEAN, true},
        {"pooling_mode_max_tokens", BERT_POOLING_MAX, true},
        {"pooling_mode_mean_sqrt_len_tokens", BERT_POOLING_MEAN, false},
        {"pooling_mode_weightedmean_tokens", BERT_POOLING_MEAN, false},
        {"pooling_mode_lasttoken", BERT_POOLING_MEAN, false},
    };
    int chosen = -1, n_on = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (json_is_true(json_object_get(root, modes[i].key))) {
            n_on++;
            chosen = (int)i;
        }
    }
    json_decref(root);
    if (n_on != 1)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: %d pooling modes are enabled; exactly one of cls, mean or max "
                              "is supported",
                              path, n_on);
    if (!modes[chosen].supported)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: %s is not supported (supported: cls, mean, max)", path,
                              modes[chosen].key);
    cfg->pooling = modes[chosen].mode;
    cfg->pooling_from_model = true;
    return BERT_OK;
}

/* A module folder of modules.json: one plain name inside the checkpoint. */
static bool module_folder_ok(const char *path)
{
    return path != NULL && path[0] != '\0' && strchr(path, '/') == NULL &&
           strcmp(path, "..") != 0 && strcmp(path, ".") != 0 && strlen(path) < 64;
}

/* One module of modules.json into cfg: the pooling folder, a Normalize, a
 * Dense folder (before any Normalize). Any other module would change the
 * embeddings in a way this engine does not reproduce: refused. */
static enum bert_status read_module(const char *path, const char *type, const char *folder,
                                    bool *normalized, char *pooling_dir, size_t pooling_cap,
                                    struct bert_config *cfg, struct bert_error *err)
{
    const char *dot = strrchr(type, '.');
    const char *kind = dot ? dot + 1 : type;
    if (strcmp(kind, "Transformer") == 0)
        return BERT_OK;
    if (strcmp(kind, "Normalize") == 0) {
        cfg->normalize = *normalized = true;
        return BERT_OK;
    }
    if (strcmp(kind, "Pooling") == 0) {
        if (module_folder_ok(folder))
            snprintf(pooling_dir, pooling_cap, "%s", folder);
        return BERT_OK;
    }
    if (strcmp(kind, "Dense") == 0) {
        if (*normalized)
            return bert_error_set(err, BERT_E_UNSUPPORTED,
                                  "%s: a Dense module after Normalize is not supported", path);
        if (!module_folder_ok(folder))
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: the Dense module's \"path\" must name a folder of the "
                                  "checkpoint",
                                  path);
        if (cfg->n_st_dense == BERT_MAX_ST_DENSE)
            return bert_error_set(err, BERT_E_UNSUPPORTED,
                                  "%s: more than %d Dense modules are not supported", path,
                                  BERT_MAX_ST_DENSE);
        snprintf(cfg->st_dense[cfg->n_st_dense++], sizeof cfg->st_dense[0], "%s", folder);
        return BERT_OK;
    }
    return bert_error_set(err, BERT_E_UNSUPPORTED,
                          "%s: module type \"%.100s\" is not supported (Transformer, Pooling, "
                          "Dense and Normalize are): its embeddings would differ from "
                          "sentence-transformers'",
                          path, type);
}

/* modules.json names the pooling folder, the Dense modules and whether a
 * Normalize module follows; without it, a 1_Pooling folder alone still
 * counts. */
static enum bert_status read_sentence_transformers(const char *dir, struct bert_config *cfg,
                                                   struct bert_error *err)
{
    char path[PATH_MAX];
    char pooling_dir[256] = "1_Pooling";
    snprintf(path, sizeof path, "%s/modules.json", dir);
    if (file_exists(path)) {
        json_t *modules;
        enum bert_status st = file_load_json(path, &modules, err);
        if (st != BERT_OK)
            return st;
        if (!json_is_array(modules)) {
            json_decref(modules);
            return bert_error_set(err, BERT_E_FORMAT, "%s: not a JSON array", path);
        }
        size_t i;
        json_t *m;
        bool normalized = false;
        json_array_foreach(modules, i, m) {
            const char *type = json_string_value(json_object_get(m, "type"));
            if (type != NULL)
                st = read_module(path, type, json_string_value(json_object_get(m, "path")),
                                 &normalized, pooling_dir, sizeof pooling_dir, cfg, err);
            if (st != BERT_OK)
                break;
        }
        json_decref(modules);
        if (st != BERT_OK)
            return st;
    }
    snprintf(path, sizeof path, "%s/%s/config.json", dir, pooling_dir);
    if (file_exists(path)) {
        enum bert_status st = read_pooling(path, cfg, err);
        if (st != BERT_OK)
            return st;
    }
    snprintf(path, sizeof path, "%s/sentence_bert_config.json", dir);
    if (file_exists(path)) {
        json_t *sb;
        enum bert_status st = file_load_json(path, &sb, err);
        if (st != BERT_OK)
            return st;
        json_t *msl = json_object_get(sb, "max_seq_length");
        if (json_is_integer(msl) && json_integer_value(msl) > 0)
            cfg->st_max_seq_length = (size_t)json_integer_value(msl);
        json_decref(sb);
    }
    return BERT_OK;
}

/* config_sentence_transformers.json: "prompts" (an object of strings) and
 * "default_prompt_name" (null or one of them). */
static enum bert_status read_prompts(const char *path, struct bert_config *cfg,
                                     struct bert_error *err)
{
    json_t *root;
    enum bert_status st = file_load_json(path, &root, err);
    if (st != BERT_OK)
        return st;
    json_t *prompts = json_object_get(root, "prompts");
    json_t *def = json_object_get(root, "default_prompt_name");
    size_t n = json_is_object(prompts) ? json_object_size(prompts) : 0;
    if (prompts != NULL && !json_is_object(prompts) && !json_is_null(prompts))
        st = bert_error_set(err, BERT_E_FORMAT, "%s: \"prompts\" must be an object of strings",
                            path);
    if (st == BERT_OK && n > 0) {
        cfg->prompt_names = calloc(n, sizeof *cfg->prompt_names);
        cfg->prompt_texts = calloc(n, sizeof *cfg->prompt_texts);
        if (cfg->prompt_names == NULL || cfg->prompt_texts == NULL)
            st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
    }
    const char *key;
    json_t *v;
    if (st == BERT_OK && n > 0) {
        json_object_foreach(prompts, key, v) {
            if (!json_is_string(v)) {
                st = bert_error_set(err, BERT_E_FORMAT, "%s: prompt '%.64s' must be a string",
                                    path, key);
                break;
            }
            size_t i = cfg->n_prompts++;
            cfg->prompt_names[i] = strdup(key);
            cfg->prompt_texts[i] = strdup(json_string_value(v));
            if (cfg->prompt_names[i] == NULL || cfg->prompt_texts[i] == NULL) {
                st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
                break;
            }
        }
    }
    if (st == BERT_OK && json_is_string(def)) {
        for (size_t i = 0; i < cfg->n_prompts; i++)
            if (strcmp(cfg->prompt_names[i], json_string_value(def)) == 0)
                cfg->default_prompt = (long)i;
        if (cfg->default_prompt < 0)
            st = bert_error_set(err, BERT_E_FORMAT,
                                "%s: default_prompt_name '%.64s' is not one of its prompts",
                                path, json_string_value(def));
    }
    json_decref(root);
    return st;
}

enum bert_status bert_config_load(const char *dir, struct bert_config *cfg,
                                  struct bert_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    st = bert_config_parse(path, text, len, cfg, err);
    free(text);
    if (st != BERT_OK)
        return st;
    st = read_sentence_transformers(dir, cfg, err);
    snprintf(path, sizeof path, "%s/config_sentence_transformers.json", dir);
    if (st == BERT_OK && file_exists(path))
        st = read_prompts(path, cfg, err);
    if (st != BERT_OK)
        bert_config_free(cfg);
    return st;
}

const char *bert_activation_name(enum bert_activation act)
{
    for (size_t i = 0; i < sizeof activation_table / sizeof activation_table[0]; i++)
        if (activation_table[i].act == act)
            return activation_table[i].name;
    return "gelu";
}

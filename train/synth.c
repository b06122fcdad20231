#include "synth.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "fileutil.h"
#include "names.h"
#include "safetensors.h"
#include "tokenizer.h"

struct bert_synth_options bert_synth_options_default(void)
{
    struct bert_synth_options o = {0};
    o.weight_std = 0.02;
    o.dtype = BERT_DTYPE_F32;
    return o;
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The splitmix64 finaliser (Steele et al. 2014). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element i of the stream keyed by h = seed ^ fnv1a64(name). */
static float synth_uniform(uint64_t h, uint64_t i, double center, double range)
{
    uint64_t z = mix64(h + (i + 1) * 0x9e3779b97f4a7c15ull);
    double u = (double)(z >> 11) * 0x1.0p-53;
    return (float)(center + (2.0 * u - 1.0) * range);
}

float bert_synth_value(uint64_t seed, const char *name, uint64_t i, double center, double range)
{
    return synth_uniform(seed ^ fnv1a64(name), i, center, range);
}

enum param_kind { PARAM_WEIGHT, PARAM_BIAS, PARAM_LN_GAMMA, PARAM_LN_BETA };

struct synth_list {
    struct safetensors_out *t;
    float **data;
    char **names;
    size_t n, cap;
};

static bool synth_add(struct synth_list *l, const struct bert_synth_options *o, const char *name,
                      enum param_kind kind, size_t d0, size_t d1)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct safetensors_out *t = realloc(l->t, cap * sizeof *t);
        float **data = t ? realloc(l->data, cap * sizeof *data) : NULL;
        char **names = data ? realloc(l->names, cap * sizeof *names) : NULL;
        if (t)
            l->t = t;
        if (data)
            l->data = data;
        if (names == NULL)
            return false;
        l->names = names;
        l->cap = cap;
    }
    size_t count = d1 ? d0 * d1 : d0;
    float *data = malloc(count * sizeof *data);
    char *copy = strdup(name);
    if (data == NULL || copy == NULL) {
        free(data);
        free(copy);
        return false;
    }
    double center = kind == PARAM_LN_GAMMA ? 1.0 : 0.0;
    double range = kind == PARAM_WEIGHT ? o->weight_std * sqrt(3.0)
                   : kind == PARAM_BIAS ? o->bias_range
                                        : o->ln_range;
    uint64_t h = o->seed ^ fnv1a64(name);
    for (size_t i = 0; i < count; i++)
        data[i] = synth_uniform(h, i, center, range);
    l->data[l->n] = data;
    l->names[l->n] = copy;
    l->t[l->n] = (struct safetensors_out){
        .name = copy, .dtype = o->dtype, .ndim = d1 ? 2 : 1, .shape = {d0, d1}, .data = data};
    l->n++;
    return true;
}

static void synth_list_free(struct synth_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->data[i]);
        free(l->names[i]);
    }
    free(l->t);
    free(l->data);
    free(l->names);
}

/* Add tensor `t` (of layer `layer`) under the family's name; families
 * without that tensor skip it. */
static bool synth_add_named(struct synth_list *l, const struct bert_synth_options *o,
                            const struct bert_config *c, enum bert_tensor t, size_t layer,
                            enum param_kind kind, size_t d0, size_t d1)
{
    char name[200];
    if (!bert_tensor_name(c->family, t, layer, o->prefix, name, sizeof name))
        return true;
    return synth_add(l, o, name, kind, d0, d1);
}

/* One named tensor of a plan: what it is and whether the options want it. */
struct synth_item {
    enum bert_tensor t;
    enum param_kind kind;
    size_t d0, d1;
    bool want;
};

static bool synth_add_items(struct synth_list *l, const struct bert_synth_options *o,
                            const struct bert_config *c, const struct synth_item *items,
                            size_t n, size_t layer)
{
    for (size_t k = 0; k < n; k++)
        if (items[k].want && !synth_add_named(l, o, c, items[k].t, layer, items[k].kind,
                                              items[k].d0, items[k].d1))
            return false;
    return true;
}

/* The per-token heads, last in every family's checkpoint: token
 * classification, then question answering (start and end logits). */
static bool synth_add_token_heads(struct synth_list *l, const struct bert_synth_options *o,
                                  const struct bert_config *c)
{
    const size_t H = c->hidden_size;
    const struct synth_item heads[] = {
        {BERT_TENSOR_TOKEN_CLS_W, PARAM_WEIGHT, c->num_labels, H, o->token_classification},
        {BERT_TENSOR_TOKEN_CLS_B, PARAM_BIAS, c->num_labels, 0, o->token_classification},
        {BERT_TENSOR_QA_W, PARAM_WEIGHT, 2, H, o->question_answering},
        {BERT_TENSOR_QA_B, PARAM_BIAS, 2, 0, o->question_answering},
    };
    return synth_add_items(l, o, c, heads, sizeof heads / sizeof heads[0], 0);
}

/* ModernBertForMaskedLM / ForSequenceClassification / Model, in the order
 * transformers writes them; biases only where the config turns them on. */
static bool build_modernbert(struct synth_list *l, const struct bert_synth_options *o,
                             const struct bert_config *c)
{
    const size_t H = c->hidden_size, I = c->intermediate_size, V = c->vocab_size;
    const struct bert_modernbert *m = &c->modern;
    const bool head = o->mlm || o->classifier || o->token_classification || o->question_answering;
    const struct synth_item top[] = {
        {BERT_TENSOR_WORD_EMB, PARAM_WEIGHT, V, H, true},
        {BERT_TENSOR_EMB_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_EMB_LN_B, PARAM_LN_BETA, H, 0, m->norm_bias},
    }, bottom[] = {
        {BERT_TENSOR_FINAL_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_FINAL_LN_B, PARAM_LN_BETA, H, 0, m->norm_bias},
        {BERT_TENSOR_POOLER_W, PARAM_WEIGHT, H, H, head},
        {BERT_TENSOR_POOLER_B, PARAM_BIAS, H, 0, head && m->classifier_bias},
        {BERT_TENSOR_POOLER_LN_G, PARAM_LN_GAMMA, H, 0, head},
        {BERT_TENSOR_POOLER_LN_B, PARAM_LN_BETA, H, 0, head && m->norm_bias},
        {BERT_TENSOR_MLM_DECODER_W, PARAM_WEIGHT, V, H, o->mlm && o->untied_decoder},
        {BERT_TENSOR_MLM_DECODER_B, PARAM_BIAS, V, 0, o->mlm},
        {BERT_TENSOR_CLASSIFIER_W, PARAM_WEIGHT, c->num_labels, H, o->classifier},
        {BERT_TENSOR_CLASSIFIER_B, PARAM_BIAS, c->num_labels, 0, o->classifier},
    };
    if (!synth_add_items(l, o, c, top, sizeof top / sizeof top[0], 0))
        return false;
    for (size_t i = 0; i < c->num_layers; i++) {
        const struct synth_item layer[] = {
            {BERT_TENSOR_LAYER_ATTN_LN_G, PARAM_LN_GAMMA, H, 0, i > 0},
            {BERT_TENSOR_LAYER_ATTN_LN_B, PARAM_LN_BETA, H, 0, i > 0 && m->norm_bias},
            {BERT_TENSOR_LAYER_QUERY_W, PARAM_WEIGHT, 3 * H, H, true},
            {BERT_TENSOR_LAYER_QUERY_B, PARAM_BIAS, 3 * H, 0, m->attention_bias},
            {BERT_TENSOR_LAYER_ATTN_OUT_W, PARAM_WEIGHT, H, H, true},
            {BERT_TENSOR_LAYER_ATTN_OUT_B, PARAM_BIAS, H, 0, m->attention_bias},
            {BERT_TENSOR_LAYER_FFN_LN_G, PARAM_LN_GAMMA, H, 0, true},
            {BERT_TENSOR_LAYER_FFN_LN_B, PARAM_LN_BETA, H, 0, m->norm_bias},
            {BERT_TENSOR_LAYER_FFN_IN_W, PARAM_WEIGHT, 2 * I, H, true},
            {BERT_TENSOR_LAYER_FFN_IN_B, PARAM_BIAS, 2 * I, 0, m->mlp_bias},
            {BERT_TENSOR_LAYER_FFN_OUT_W, PARAM_WEIGHT, H, I, true},
            {BERT_TENSOR_LAYER_FFN_OUT_B, PARAM_BIAS, H, 0, m->mlp_bias},
        };
        if (!synth_add_items(l, o, c, layer, sizeof layer / sizeof layer[0], i))
            return false;
    }
    return synth_add_items(l, o, c, bottom, sizeof bottom / sizeof bottom[0], 0) &&
           synth_add_token_heads(l, o, c);
}

/* NomicBertModel / ForPreTraining / ForSequenceClassification
 * (modeling_hf_nomic_bert.py): no position embeddings (RoPE), fused Wqkv,
 * fc11 / fc12 / fc2, biases only where the config turns them on. */
static bool build_nomic(struct synth_list *l, const struct bert_synth_options *o,
                        const struct bert_config *c)
{
    const size_t H = c->hidden_size, I = c->intermediate_size, V = c->vocab_size;
    const struct bert_nomic *n = &c->nomic;
    const struct synth_item top[] = {
        {BERT_TENSOR_WORD_EMB, PARAM_WEIGHT, V, H, true},
        {BERT_TENSOR_TYPE_EMB, PARAM_WEIGHT, c->type_vocab_size, H, c->type_vocab_size > 0},
        {BERT_TENSOR_EMB_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_EMB_LN_B, PARAM_LN_BETA, H, 0, true},
    }, layer[] = {
        {BERT_TENSOR_LAYER_QUERY_W, PARAM_WEIGHT, 3 * H, H, true},
        {BERT_TENSOR_LAYER_QUERY_B, PARAM_BIAS, 3 * H, 0, n->qkv_bias},
        {BERT_TENSOR_LAYER_ATTN_OUT_W, PARAM_WEIGHT, H, H, true},
        {BERT_TENSOR_LAYER_ATTN_OUT_B, PARAM_BIAS, H, 0, n->qkv_bias},
        {BERT_TENSOR_LAYER_ATTN_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_LAYER_ATTN_LN_B, PARAM_LN_BETA, H, 0, true},
        {BERT_TENSOR_LAYER_FFN_IN_W, PARAM_WEIGHT, I, H, true},
        {BERT_TENSOR_LAYER_FFN_IN_B, PARAM_BIAS, I, 0, n->fc1_bias},
        {BERT_TENSOR_LAYER_FFN_GATE_W, PARAM_WEIGHT, I, H, true},
        {BERT_TENSOR_LAYER_FFN_GATE_B, PARAM_BIAS, I, 0, n->fc1_bias},
        {BERT_TENSOR_LAYER_FFN_OUT_W, PARAM_WEIGHT, H, I, true},
        {BERT_TENSOR_LAYER_FFN_OUT_B, PARAM_BIAS, H, 0, n->fc2_bias},
        {BERT_TENSOR_LAYER_FFN_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_LAYER_FFN_LN_B, PARAM_LN_BETA, H, 0, true},
    }, heads[] = {
        {BERT_TENSOR_POOLER_W, PARAM_WEIGHT, H, H, o->pooler || o->classifier},
        {BERT_TENSOR_POOLER_B, PARAM_BIAS, H, 0, o->pooler || o->classifier},
        {BERT_TENSOR_CLASSIFIER_W, PARAM_WEIGHT, c->num_labels, H, o->classifier},
        {BERT_TENSOR_CLASSIFIER_B, PARAM_BIAS, c->num_labels, 0, o->classifier},
        {BERT_TENSOR_MLM_DENSE_W, PARAM_WEIGHT, H, H, o->mlm},
        {BERT_TENSOR_MLM_DENSE_B, PARAM_BIAS, H, 0, o->mlm && n->fc1_bias},
        {BERT_TENSOR_MLM_LN_G, PARAM_LN_GAMMA, H, 0, o->mlm},
        {BERT_TENSOR_MLM_LN_B, PARAM_LN_BETA, H, 0, o->mlm},
        {BERT_TENSOR_MLM_DECODER_W, PARAM_WEIGHT, V, H, o->mlm && o->untied_decoder},
        {BERT_TENSOR_MLM_DECODER_B, PARAM_BIAS, V, 0, o->mlm && n->fc1_bias},
    };
    if (!synth_add_items(l, o, c, top, sizeof top / sizeof top[0], 0))
        return false;
    for (size_t i = 0; i < c->num_layers; i++)
        if (!synth_add_items(l, o, c, layer, sizeof layer / sizeof layer[0], i))
            return false;
    return synth_add_items(l, o, c, heads, sizeof heads / sizeof heads[0], 0);
}

/* GTE's NewModel / NewFor* (Alibaba-NLP new-impl modeling.py): word and
 * token type embeddings with their LayerNorm, fused qkv_proj, o_proj,
 * attn_ln, up_gate_proj (2I, H, no bias), down_proj, mlp_ln, then the
 * pooler and the task heads. */
static bool build_gte(struct synth_list *l, const struct bert_synth_options *o,
                      const struct bert_config *c)
{
    const size_t H = c->hidden_size, I = c->intermediate_size, V = c->vocab_size;
    const struct synth_item top[] = {
        {BERT_TENSOR_WORD_EMB, PARAM_WEIGHT, V, H, true},
        {BERT_TENSOR_TYPE_EMB, PARAM_WEIGHT, c->type_vocab_size, H, c->type_vocab_size > 0},
        {BERT_TENSOR_EMB_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_EMB_LN_B, PARAM_LN_BETA, H, 0, true},
    }, layer[] = {
        {BERT_TENSOR_LAYER_QUERY_W, PARAM_WEIGHT, 3 * H, H, true},
        {BERT_TENSOR_LAYER_QUERY_B, PARAM_BIAS, 3 * H, 0, true},
        {BERT_TENSOR_LAYER_ATTN_OUT_W, PARAM_WEIGHT, H, H, true},
        {BERT_TENSOR_LAYER_ATTN_OUT_B, PARAM_BIAS, H, 0, true},
        {BERT_TENSOR_LAYER_ATTN_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_LAYER_ATTN_LN_B, PARAM_LN_BETA, H, 0, true},
        {BERT_TENSOR_LAYER_FFN_IN_W, PARAM_WEIGHT, 2 * I, H, true},
        {BERT_TENSOR_LAYER_FFN_OUT_W, PARAM_WEIGHT, H, I, true},
        {BERT_TENSOR_LAYER_FFN_OUT_B, PARAM_BIAS, H, 0, true},
        {BERT_TENSOR_LAYER_FFN_LN_G, PARAM_LN_GAMMA, H, 0, true},
        {BERT_TENSOR_LAYER_FFN_LN_B, PARAM_LN_BETA, H, 0, true},
    }, heads[] = {
        {BERT_TENSOR_POOLER_W, PARAM_WEIGHT, H, H, o->pooler || o->classifier},
        {BERT_TENSOR_POOLER_B, PARAM_BIAS, H, 0, o->pooler || o->classifier},
        {BERT_TENSOR_MLM_DENSE_W, PARAM_WEIGHT, H, H, o->mlm},
        {BERT_TENSOR_MLM_DENSE_B, PARAM_BIAS, H, 0, o->mlm},
        {BERT_TENSOR_MLM_LN_G, PARAM_LN_GAMMA, H, 0, o->mlm},
        {BERT_TENSOR_MLM_LN_B, PARAM_LN_BETA, H, 0, o->mlm},
        {BERT_TENSOR_MLM_DECODER_W, PARAM_WEIGHT, V, H, o->mlm && o->untied_decoder},
        {BERT_TENSOR_MLM_DECODER_B, PARAM_BIAS, V, 0, o->mlm},
        {BERT_TENSOR_CLASSIFIER_W, PARAM_WEIGHT, c->num_labels, H, o->classifier},
        {BERT_TENSOR_CLASSIFIER_B, PARAM_BIAS, c->num_labels, 0, o->classifier},
    };
    if (!synth_add_items(l, o, c, top, sizeof top / sizeof top[0], 0))
        return false;
    for (size_t i = 0; i < c->num_layers; i++)
        if (!synth_add_items(l, o, c, layer, sizeof layer / sizeof layer[0], i))
            return false;
    return synth_add_items(l, o, c, heads, sizeof heads / sizeof heads[0], 0) &&
           synth_add_token_heads(l, o, c);
}

static bool build_tensors(struct synth_list *l, const struct bert_synth_options *o,
                          const struct bert_config *c)
{
    if (c->family == BERT_FAMILY_MODERNBERT)
        return build_modernbert(l, o, c);
    if (c->family == BERT_FAMILY_NOMIC_BERT)
        return build_nomic(l, o, c);
    if (c->family == BERT_FAMILY_GTE)
        return build_gte(l, o, c);
    const size_t H = c->hidden_size, E = c->embedding_size, FF = c->intermediate_size;
    const size_t V = c->vocab_size;
    const struct {
        enum bert_tensor t;
        enum param_kind kind;
        size_t d0, d1;
        bool per_layer;
        bool want;
    } plan[] = {
        {BERT_TENSOR_WORD_EMB, PARAM_WEIGHT, V, E, false, true},
        {BERT_TENSOR_POS_EMB, PARAM_WEIGHT, c->max_position_embeddings, E, false, true},
        {BERT_TENSOR_TYPE_EMB, PARAM_WEIGHT, c->type_vocab_size, E, false,
         c->type_vocab_size > 0},
        {BERT_TENSOR_EMB_LN_G, PARAM_LN_GAMMA, E, 0, false, true},
        {BERT_TENSOR_EMB_LN_B, PARAM_LN_BETA, E, 0, false, true},
        {BERT_TENSOR_EMB_PROJ_W, PARAM_WEIGHT, H, E, false, E != H},
        {BERT_TENSOR_EMB_PROJ_B, PARAM_BIAS, H, 0, false, E != H},
        {BERT_TENSOR_LAYER_QUERY_W, PARAM_WEIGHT, H, H, true, true},
        {BERT_TENSOR_LAYER_QUERY_B, PARAM_BIAS, H, 0, true, true},
        {BERT_TENSOR_LAYER_KEY_W, PARAM_WEIGHT, H, H, true, true},
        {BERT_TENSOR_LAYER_KEY_B, PARAM_BIAS, H, 0, true, true},
        {BERT_TENSOR_LAYER_VALUE_W, PARAM_WEIGHT, H, H, true, true},
        {BERT_TENSOR_LAYER_VALUE_B, PARAM_BIAS, H, 0, true, true},
        {BERT_TENSOR_LAYER_ATTN_OUT_W, PARAM_WEIGHT, H, H, true, true},
        {BERT_TENSOR_LAYER_ATTN_OUT_B, PARAM_BIAS, H, 0, true, true},
        {BERT_TENSOR_LAYER_ATTN_LN_G, PARAM_LN_GAMMA, H, 0, true, true},
        {BERT_TENSOR_LAYER_ATTN_LN_B, PARAM_LN_BETA, H, 0, true, true},
        /* JinaBERT's gated_layers hold both halves of its GLU. */
        {BERT_TENSOR_LAYER_FFN_IN_W, PARAM_WEIGHT,
         c->family == BERT_FAMILY_JINA_BERT ? 2 * FF : FF, H, true, true},
        {BERT_TENSOR_LAYER_FFN_IN_B, PARAM_BIAS, FF, 0, true, true},
        {BERT_TENSOR_LAYER_FFN_OUT_W, PARAM_WEIGHT, H, FF, true, true},
        {BERT_TENSOR_LAYER_FFN_OUT_B, PARAM_BIAS, H, 0, true, true},
        {BERT_TENSOR_LAYER_FFN_LN_G, PARAM_LN_GAMMA, H, 0, true, true},
        {BERT_TENSOR_LAYER_FFN_LN_B, PARAM_LN_BETA, H, 0, true, true},
        {BERT_TENSOR_REL_ATTN_BIAS, PARAM_WEIGHT, c->relative_buckets, c->num_heads, false,
         c->family == BERT_FAMILY_MPNET},
        {BERT_TENSOR_REL_EMB, PARAM_WEIGHT, 2 * c->deberta.att_span, H, false,
         c->family == BERT_FAMILY_DEBERTA_V2},
        {BERT_TENSOR_REL_LN_G, PARAM_LN_GAMMA, H, 0, false, c->deberta.rel_layer_norm},
        {BERT_TENSOR_REL_LN_B, PARAM_LN_BETA, H, 0, false, c->deberta.rel_layer_norm},
        {BERT_TENSOR_POOLER_W, PARAM_WEIGHT, H, H, false, o->pooler || o->classifier},
        {BERT_TENSOR_POOLER_B, PARAM_BIAS, H, 0, false, o->pooler || o->classifier},
        {BERT_TENSOR_MLM_DENSE_W, PARAM_WEIGHT, E, H, false, o->mlm},
        {BERT_TENSOR_MLM_DENSE_B, PARAM_BIAS, E, 0, false, o->mlm},
        {BERT_TENSOR_MLM_LN_G, PARAM_LN_GAMMA, E, 0, false, o->mlm},
        {BERT_TENSOR_MLM_LN_B, PARAM_LN_BETA, E, 0, false, o->mlm},
        {BERT_TENSOR_MLM_DECODER_B, PARAM_BIAS, V, 0, false, o->mlm},
        {BERT_TENSOR_MLM_DECODER_W, PARAM_WEIGHT, V, E, false, o->mlm && o->untied_decoder},
        {BERT_TENSOR_CLASSIFIER_W, PARAM_WEIGHT, c->num_labels, H, false, o->classifier},
        {BERT_TENSOR_CLASSIFIER_B, PARAM_BIAS, c->num_labels, 0, false, o->classifier},
        {BERT_TENSOR_DISC_DENSE_W, PARAM_WEIGHT, H, H, false, o->discriminator},
        {BERT_TENSOR_DISC_DENSE_B, PARAM_BIAS, H, 0, false, o->discriminator},
        {BERT_TENSOR_DISC_PRED_W, PARAM_WEIGHT, 1, H, false, o->discriminator},
        {BERT_TENSOR_DISC_PRED_B, PARAM_BIAS, 1, 0, false, o->discriminator},
    };
    /* The order Hugging Face writes: embeddings, the layers, then the heads
     * (plan order), so the same options give the same bytes. */
    const size_t n = sizeof plan / sizeof plan[0];
    size_t first_layer = 0;
    while (first_layer < n && !plan[first_layer].per_layer)
        first_layer++;
    for (size_t k = 0; k < first_layer; k++)
        if (plan[k].want &&
            !synth_add_named(l, o, c, plan[k].t, 0, plan[k].kind, plan[k].d0, plan[k].d1))
            return false;
    for (size_t i = 0; i < c->num_layers; i++)
        for (size_t k = first_layer; k < n; k++)
            if (plan[k].per_layer &&
                !synth_add_named(l, o, c, plan[k].t, i, plan[k].kind, plan[k].d0, plan[k].d1))
                return false;
    for (size_t k = first_layer; k < n; k++)
        if (plan[k].want && !plan[k].per_layer &&
            !synth_add_named(l, o, c, plan[k].t, 0, plan[k].kind, plan[k].d0, plan[k].d1))
            return false;
    return synth_add_token_heads(l, o, c);
}

static enum bert_status make_dir(const char *path, struct bert_error *err)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return bert_error_set(err, BERT_E_IO, "%s: cannot create: %s", path, strerror(errno));
    return BERT_OK;
}

static enum bert_status write_text(const char *path, const char *text, struct bert_error *err)
{
    FILE *fp = fopen(path, "w");
    if (fp == NULL)
        return bert_error_set(err, BERT_E_IO, "%s: cannot create: %s", path, strerror(errno));
    bool ok = fputs(text, fp) >= 0;
    ok = fclose(fp) == 0 && ok;
    return ok ? BERT_OK : bert_error_set(err, BERT_E_IO, "%s: cannot write", path);
}

enum bert_status bert_copy_tokenizer_files(const char *from, const char *dir,
                                          struct bert_error *err)
{
    static const char *const files[] = {"tokenizer.json", "vocab.txt", "tokenizer_config.json",
                                        "special_tokens_map.json"};
    bool any = false;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char src[PATH_MAX], dst[PATH_MAX];
        snprintf(src, sizeof src, "%s/%s", from, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        if (!file_exists(src))
            continue;
        enum bert_status st = file_copy(src, dst, err);
        if (st != BERT_OK)
            return st;
        any = true;
    }
    return any ? BERT_OK
               : bert_error_set(err, BERT_E_IO, "%s: no tokenizer.json or vocab.txt to copy",
                                from);
}

static enum bert_status write_sentence_transformers(const struct bert_synth_options *o,
                                                    const char *dir, struct bert_error *err)
{
    char path[PATH_MAX], text[1024];
    enum bert_status st;
    snprintf(text, sizeof text,
             "[\n  {\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
             "\"sentence_transformers.models.Transformer\"},\n"
             "  {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
             "\"sentence_transformers.models.Pooling\"}%s\n]\n",
             o->st_normalize ? ",\n  {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", "
                               "\"type\": \"sentence_transformers.models.Normalize\"}"
                             : "");
    snprintf(path, sizeof path, "%s/modules.json", dir);
    if ((st = write_text(path, text, err)) != BERT_OK)
        return st;
    snprintf(path, sizeof path, "%s/1_Pooling", dir);
    if ((st = make_dir(path, err)) != BERT_OK)
        return st;
    enum bert_pooling pool = o->config.pooling;
    snprintf(text, sizeof text,
             "{\n  \"word_embedding_dimension\": %zu,\n  \"pooling_mode_cls_token\": %s,\n"
             "  \"pooling_mode_mean_tokens\": %s,\n  \"pooling_mode_max_tokens\": %s,\n"
             "  \"pooling_mode_mean_sqrt_len_tokens\": false\n}\n",
             o->config.hidden_size, pool == BERT_POOLING_CLS ? "true" : "false",
             pool == BERT_POOLING_MEAN ? "true" : "false",
             pool == BERT_POOLING_MAX ? "true" : "false");
    snprintf(path, sizeof path, "%s/1_Pooling/config.json", dir);
    if ((st = write_text(path, text, err)) != BERT_OK)
        return st;
    if (o->st_normalize) {
        snprintf(path, sizeof path, "%s/2_Normalize", dir);
        if ((st = make_dir(path, err)) != BERT_OK)
            return st;
    }
    if (o->st_max_seq_length > 0) {
        snprintf(text, sizeof text, "{\n  \"max_seq_length\": %zu,\n  \"do_lower_case\": false\n}\n",
                 o->st_max_seq_length);
        snprintf(path, sizeof path, "%s/sentence_bert_config.json", dir);
        if ((st = write_text(path, text, err)) != BERT_OK)
            return st;
    }
    return BERT_OK;
}

/* The config a real config.json describes, with the options' labels when
 * they ask for a classifier. `c` is what the file says; its id2label is
 * freed by the caller. */
static enum bert_status config_from_file(const struct bert_synth_options *o,
                                         struct bert_config *c, struct bert_error *err)
{
    char *text;
    size_t len;
    enum bert_status st = file_read_all(o->config_file, &text, &len, err);
    if (st != BERT_OK)
        return st;
    st = bert_config_parse(o->config_file, text, len, c, err);
    free(text);
    return st;
}

/* Why `bert init` cannot write this geometry and these heads (the flags
 * named), or NULL when it can. */
static const char *synth_refusal(const struct bert_config *c, const struct bert_synth_options *o)
{
    const bool rotary = c->family == BERT_FAMILY_NOMIC_BERT || c->family == BERT_FAMILY_GTE ||
                        c->family == BERT_FAMILY_MODERNBERT;
    if (c->hidden_size == 0 || c->num_heads == 0 || c->hidden_size % c->num_heads != 0)
        return "--hidden must be a positive multiple of --heads";
    if (c->num_layers == 0 || c->intermediate_size == 0)
        return "--layers and --intermediate must be positive";
    if (c->max_position_embeddings <= (size_t)c->pad_token_id + 1)
        return "--max-position must leave room past the padding position";
    if ((o->classifier || o->token_classification) && c->num_labels == 0)
        return "a classifier or --token-classification needs --labels";
    if (o->token_classification + o->question_answering + o->classifier > 1)
        return "one task head at most: --labels (a classifier), --token-classification or "
               "--question-answering";
    if (o->discriminator && c->family != BERT_FAMILY_ELECTRA)
        return "--discriminator is ELECTRA's head";
    if (c->family == BERT_FAMILY_DEBERTA_V2 && o->mlm)
        return "no masked-LM head for DeBERTa-v2 (--mlm)";
    if (c->family == BERT_FAMILY_JINA_BERT && c->activation != BERT_ACTIVATION_GELU &&
        c->activation != BERT_ACTIVATION_RELU)
        return "JinaBERT's --act is gelu (GEGLU) or relu (ReGLU)";
    if (rotary && (c->hidden_size / c->num_heads) % 2 != 0)
        return "rotary embeddings need an even head size (--hidden / --heads)";
    if (c->family == BERT_FAMILY_NOMIC_BERT) {
        if (!(c->nomic.rotary_base > 0))
            return "--rotary-base must be positive";
        if (c->activation != BERT_ACTIVATION_SILU && c->activation != BERT_ACTIVATION_GELU)
            return "NomicBERT's --act is silu (SwiGLU) or gelu (GeGLU)";
        if (o->token_classification || o->question_answering)
            return "no per-token heads for NomicBERT (--token-classification, "
                   "--question-answering)";
    }
    if (c->family == BERT_FAMILY_GTE && !(c->gte.rope_theta > 0 && c->gte.ntk_factor >= 1.0))
        return "--rope-theta must be positive and --ntk-factor at least 1";
    if (c->family == BERT_FAMILY_MODERNBERT &&
        (c->modern.global_attn_every == 0 || c->modern.local_window == 0 ||
         !(c->modern.global_rope_theta > 0) || !(c->modern.local_rope_theta > 0)))
        return "--global-every, --local-window, --global-theta and --local-theta must be "
               "positive";
    return NULL;
}

enum bert_status bert_synth_write(const struct bert_synth_options *o, const char *dir,
                                  struct bert_error *err)
{
    struct bert_config from_file = {0};
    if (o->config_file != NULL) {
        enum bert_status st = config_from_file(o, &from_file, err);
        if (st != BERT_OK)
            return st;
        struct bert_synth_options copy = *o;
        copy.config_file = NULL;
        copy.config = from_file;
        /* A JinaBERT config says model_type bert; the family has its own name. */
        if (from_file.family == BERT_FAMILY_JINA_BERT)
            snprintf(copy.config.model_type, sizeof copy.config.model_type, "jina_bert");
        if (o->classifier || o->token_classification) { /* the options' labels */
            copy.config.num_labels = o->config.num_labels;
            copy.config.id2label = o->config.id2label;
        }
        if ((st = bert_synth_write(&copy, dir, err)) == BERT_OK) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/config.json", dir);
            st = file_copy(o->config_file, path, err);
        }
        bert_config_free(&from_file);
        return st;
    }
    struct bert_config c = o->config;
    if (c.vocab_size == 0) {
        struct bert_tokenizer *tok;
        enum bert_status st = bert_tokenizer_load(o->tokenizer_dir, &tok, err);
        if (st != BERT_OK)
            return st;
        c.vocab_size = bert_tokenizer_vocab_size(tok);
        bert_tokenizer_free(tok);
    }
    if (c.model_type[0] == '\0')
        snprintf(c.model_type, sizeof c.model_type, "bert");
    if (!bert_family_from_model_type(c.model_type, &c.family))
        return bert_error_set(err, BERT_E_INVALID, "model type '%s' is not one of %s",
                              c.model_type, bert_family_supported_types());
    if (c.family == BERT_FAMILY_DISTILBERT || c.family == BERT_FAMILY_MODERNBERT ||
        c.family == BERT_FAMILY_MPNET)
        c.type_vocab_size = 0;
    else if (c.type_vocab_size == 0 && c.family != BERT_FAMILY_DEBERTA_V2)
        return bert_error_set(err, BERT_E_INVALID, "%s needs at least one token type",
                              c.model_type);
    if (c.family != BERT_FAMILY_ELECTRA || c.embedding_size == 0)
        c.embedding_size = c.hidden_size;
    /* RoBERTa and MPNet tokenizers put <pad> at 1; positions start after it. */
    if (c.family == BERT_FAMILY_ROBERTA || c.family == BERT_FAMILY_MPNET)
        c.pad_token_id = 1;
    c.relative_buckets = c.family == BERT_FAMILY_MPNET ? 32 : 0;
    /* JinaBERT: --act picks the GLU (gelu: geglu, relu: reglu); hidden_act,
     * the MLM transform's, is gelu. */
    if (c.family == BERT_FAMILY_JINA_BERT)
        c.mlm_activation = BERT_ACTIVATION_GELU;
    /* DeBERTa-v3's attention (deberta-v3-base's config) and ContextPooler. */
    if (c.family == BERT_FAMILY_DEBERTA_V2 && c.deberta.att_span == 0) {
        c.deberta = (struct bert_deberta){.position_buckets = 256,
                                          .max_relative_positions = c.max_position_embeddings,
                                          .att_span = 256, .c2p = true, .p2c = true,
                                          .rel_layer_norm = true};
        c.pooler_activation = BERT_ACTIVATION_GELU;
        c.type_vocab_size = 0;
    }
    const char *refusal = synth_refusal(&c, o);
    if (refusal != NULL)
        return bert_error_set(err, BERT_E_INVALID, "%s: %s", c.model_type, refusal);
    c.tie_word_embeddings = !o->untied_decoder;
    c.token_head = o->token_classification ? BERT_TOKEN_HEAD_CLASSIFICATION
                   : o->question_answering ? BERT_TOKEN_HEAD_QUESTION_ANSWERING
                                           : BERT_TOKEN_HEAD_NONE;
    if (c.architecture[0] == '\0')
        snprintf(c.architecture, sizeof c.architecture, "%s%s",
                 bert_family_class_prefix(c.model_type),
                 o->token_classification ? "ForTokenClassification"
                 : o->question_answering ? "ForQuestionAnswering"
                 : o->classifier      ? "ForSequenceClassification"
                 : o->mlm           ? "ForMaskedLM"
                 : o->discriminator ? "ForPreTraining"
                                    : "Model");

    enum bert_status st = file_mkdirs(dir, err);
    if (st != BERT_OK)
        return st;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((st = bert_config_write(&c, path, err)) != BERT_OK)
        return st;
    if ((st = bert_copy_tokenizer_files(o->tokenizer_dir, dir, err)) != BERT_OK)
        return st;
    if (o->sentence_transformers && (st = write_sentence_transformers(o, dir, err)) != BERT_OK)
        return st;

    struct synth_list list = {0};
    if (!build_tensors(&list, o, &c)) {
        synth_list_free(&list);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory generating weights");
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st = safetensors_write(path, list.t, list.n, err);
    synth_list_free(&list);
    return st;
}

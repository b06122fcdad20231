#include "train_model.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "config.h"
#include "engine.h"
#include "fileutil.h"
#include "safetensors.h"
#include "synth.h"

/* The layout as a list of (pointer slot, name, kind, shape), in
 * train/synth.c's order so `bert init` and the trainer agree. */
struct layout_builder {
    struct train_model *m;
    float **slots[512];
    size_t n_slots;
    bool ok;
};

__attribute__((format(printf, 7, 8))) static void add(struct layout_builder *b, float **slot,
                                                       enum train_param_kind kind,
                                                       enum train_part part, size_t d0, size_t d1,
                                                       const char *fmt, ...)
{
    struct train_model *m = b->m;
    if (!b->ok)
        return;
    if (b->n_slots == sizeof b->slots / sizeof b->slots[0]) {
        b->ok = false;
        return;
    }
    struct train_tensor *t = &m->tensors[m->n_tensors++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->kind = kind;
    t->part = part;
    t->offset = m->n_params;
    t->count = d1 ? d0 * d1 : d0;
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    /* Keep every tensor 64-byte aligned for the GEMMs. */
    m->n_params += (t->count + 15) & ~(size_t)15;
    b->slots[b->n_slots++] = slot;
}

static void build_layout(struct layout_builder *b, struct train_view *v)
{
    const struct bert_config *c = &b->m->config;
    const size_t H = c->hidden_size, FF = c->intermediate_size, V = c->vocab_size;
    add(b, &v->word_emb, TRAIN_WEIGHT, TRAIN_PART_ENCODER, V, H,
        "bert.embeddings.word_embeddings.weight");
    add(b, &v->pos_emb, TRAIN_WEIGHT, TRAIN_PART_ENCODER, c->max_position_embeddings, H,
        "bert.embeddings.position_embeddings.weight");
    add(b, &v->type_emb, TRAIN_WEIGHT, TRAIN_PART_ENCODER, c->type_vocab_size, H,
        "bert.embeddings.token_type_embeddings.weight");
    add(b, &v->emb_ln_g, TRAIN_LN_GAMMA, TRAIN_PART_ENCODER, H, 0,
        "bert.embeddings.LayerNorm.weight");
    add(b, &v->emb_ln_b, TRAIN_LN_BETA, TRAIN_PART_ENCODER, H, 0, "bert.embeddings.LayerNorm.bias");
    for (size_t i = 0; i < c->num_layers; i++) {
        struct train_layer *l = &v->layers[i];
        const char *pre = "bert.encoder.layer";
        add(b, &l->query_w, TRAIN_WEIGHT, TRAIN_PART_ENCODER, H, H,
            "%s.%zu.attention.self.query.weight", pre, i);
        add(b, &l->query_b, TRAIN_BIAS, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.attention.self.query.bias", pre, i);
        add(b, &l->key_w, TRAIN_WEIGHT, TRAIN_PART_ENCODER, H, H,
            "%s.%zu.attention.self.key.weight", pre, i);
        add(b, &l->key_b, TRAIN_BIAS, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.attention.self.key.bias", pre, i);
        add(b, &l->value_w, TRAIN_WEIGHT, TRAIN_PART_ENCODER, H, H,
            "%s.%zu.attention.self.value.weight", pre, i);
        add(b, &l->value_b, TRAIN_BIAS, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.attention.self.value.bias", pre, i);
        add(b, &l->attn_out_w, TRAIN_WEIGHT, TRAIN_PART_ENCODER, H, H,
            "%s.%zu.attention.output.dense.weight", pre, i);
        add(b, &l->attn_out_b, TRAIN_BIAS, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.attention.output.dense.bias", pre, i);
        add(b, &l->attn_ln_g, TRAIN_LN_GAMMA, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.attention.output.LayerNorm.weight", pre, i);
        add(b, &l->attn_ln_b, TRAIN_LN_BETA, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.attention.output.LayerNorm.bias", pre, i);
        add(b, &l->ffn_in_w, TRAIN_WEIGHT, TRAIN_PART_ENCODER, FF, H,
            "%s.%zu.intermediate.dense.weight", pre, i);
        add(b, &l->ffn_in_b, TRAIN_BIAS, TRAIN_PART_ENCODER, FF, 0,
            "%s.%zu.intermediate.dense.bias", pre, i);
        add(b, &l->ffn_out_w, TRAIN_WEIGHT, TRAIN_PART_ENCODER, H, FF,
            "%s.%zu.output.dense.weight", pre, i);
        add(b, &l->ffn_out_b, TRAIN_BIAS, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.output.dense.bias", pre, i);
        add(b, &l->ffn_ln_g, TRAIN_LN_GAMMA, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.output.LayerNorm.weight", pre, i);
        add(b, &l->ffn_ln_b, TRAIN_LN_BETA, TRAIN_PART_ENCODER, H, 0,
            "%s.%zu.output.LayerNorm.bias", pre, i);
    }
    /* BertForTokenClassification has no pooler: its classifier reads every token. */
    if (b->m->classifier && c->token_head == BERT_TOKEN_HEAD_NONE) {
        add(b, &v->pooler_w, TRAIN_WEIGHT, TRAIN_PART_CLASSIFIER, H, H, "bert.pooler.dense.weight");
        add(b, &v->pooler_b, TRAIN_BIAS, TRAIN_PART_CLASSIFIER, H, 0, "bert.pooler.dense.bias");
    }
    if (b->m->mlm) {
        add(b, &v->mlm_dense_w, TRAIN_WEIGHT, TRAIN_PART_MLM, H, H,
            "cls.predictions.transform.dense.weight");
        add(b, &v->mlm_dense_b, TRAIN_BIAS, TRAIN_PART_MLM, H, 0,
            "cls.predictions.transform.dense.bias");
        add(b, &v->mlm_ln_g, TRAIN_LN_GAMMA, TRAIN_PART_MLM, H, 0,
            "cls.predictions.transform.LayerNorm.weight");
        add(b, &v->mlm_ln_b, TRAIN_LN_BETA, TRAIN_PART_MLM, H, 0,
            "cls.predictions.transform.LayerNorm.bias");
        add(b, &v->mlm_bias, TRAIN_BIAS, TRAIN_PART_MLM, V, 0, "cls.predictions.bias");
    }
    if (b->m->classifier) {
        add(b, &v->classifier_w, TRAIN_WEIGHT, TRAIN_PART_CLASSIFIER, c->num_labels, H, "classifier.weight");
        add(b, &v->classifier_b, TRAIN_BIAS, TRAIN_PART_CLASSIFIER, c->num_labels, 0, "classifier.bias");
    }
}

/* Point a view's slots into `arena` (the slots recorded while building). */
static void bind_view(struct layout_builder *b, float *arena)
{
    for (size_t i = 0; i < b->n_slots; i++)
        *b->slots[i] = arena + b->m->tensors[i].offset;
}

static enum bert_status copy_config(struct bert_config *dst, const struct bert_config *src,
                                    struct bert_error *err)
{
    *dst = *src;
    dst->id2label = calloc(src->num_labels ? src->num_labels : 1, sizeof *dst->id2label);
    if (dst->id2label == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    /* config.json always gets names: the given ones or transformers' LABEL_i. */
    for (size_t i = 0; i < src->num_labels; i++) {
        char name[32];
        snprintf(name, sizeof name, "LABEL_%zu", i);
        if ((dst->id2label[i] = strdup(src->id2label ? src->id2label[i] : name)) == NULL) {
            bert_config_free(dst);
            return bert_error_set(err, BERT_E_NOMEM, "out of memory");
        }
    }
    return BERT_OK;
}

void train_small_geometry(struct bert_config *c)
{
    c->num_layers = 2;
    c->hidden_size = 128;
    c->num_heads = 2;
    c->intermediate_size = 512;
    c->max_position_embeddings = 512;
    c->type_vocab_size = 2;
    c->layer_norm_eps = 1e-12f;
}

enum bert_status train_model_init(struct train_model *m, const struct bert_config *cfg,
                                  bool mlm, bool classifier, struct bert_error *err)
{
    memset(m, 0, sizeof *m);
    const struct bert_config *c = cfg;
    /* The trainer's layers, names and saved config are BERT's (post-LN,
     * absolute positions): any other family would be trained as something
     * it is not and saved under names its loader rejects. */
    if (c->family != BERT_FAMILY_BERT)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "the trainer trains BERT checkpoints only; this one is %s "
                              "(model_type in config.json)",
                              bert_family_name(c->family));
    if (c->hidden_size == 0 || c->num_heads == 0 || c->hidden_size % c->num_heads != 0 ||
        c->num_layers == 0 || c->num_layers > 24 || c->intermediate_size == 0 ||
        c->vocab_size == 0 || c->max_position_embeddings == 0 || c->type_vocab_size == 0 ||
        (classifier && c->num_labels == 0))
        return bert_error_set(err, BERT_E_INVALID,
                              "invalid geometry: hidden %zu, heads %zu, layers %zu (1..24), "
                              "intermediate %zu, vocab %zu, labels %zu",
                              c->hidden_size, c->num_heads, c->num_layers, c->intermediate_size,
                              c->vocab_size, c->num_labels);
    enum bert_status st = copy_config(&m->config, cfg, err);
    if (st != BERT_OK)
        return st;
    m->mlm = mlm;
    m->classifier = classifier;
    m->config.tie_word_embeddings = true;
    m->tensors = calloc(5 + 16 * c->num_layers + 9, sizeof *m->tensors);
    m->p.layers = calloc(c->num_layers, sizeof *m->p.layers);
    m->g.layers = calloc(c->num_layers, sizeof *m->g.layers);
    struct layout_builder pb = {.m = m, .ok = true};
    if (m->tensors != NULL && m->p.layers != NULL && m->g.layers != NULL) {
        build_layout(&pb, &m->p);
        size_t n = m->n_tensors, floats = m->n_params;
        struct layout_builder gb = {.m = m, .ok = true};
        m->n_tensors = 0;
        m->n_params = 0;
        build_layout(&gb, &m->g);
        m->params = aligned_alloc(64, floats * sizeof(float));
        m->grads = aligned_alloc(64, floats * sizeof(float));
        if (pb.ok && gb.ok && m->params && m->grads && n == m->n_tensors) {
            memset(m->params, 0, floats * sizeof(float));
            memset(m->grads, 0, floats * sizeof(float));
            bind_view(&pb, m->params);
            bind_view(&gb, m->grads);
            return BERT_OK;
        }
    }
    train_model_free(m);
    return bert_error_set(err, BERT_E_NOMEM, "out of memory laying out the model");
}

void train_model_synth(struct train_model *m, uint64_t seed, double weight_std,
                       double bias_range, double ln_range)
{
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct train_tensor *t = &m->tensors[i];
        double center = t->kind == TRAIN_LN_GAMMA ? 1.0 : 0.0;
        double range = t->kind == TRAIN_WEIGHT  ? weight_std * 1.7320508075688772
                       : t->kind == TRAIN_BIAS ? bias_range
                                               : ln_range;
        float *dst = m->params + t->offset;
        for (size_t k = 0; k < t->count; k++)
            dst[k] = bert_synth_value(seed, t->name, k, center, range);
    }
}

/* The checkpoint's tensor for one of ours, matched by the view slot. */
static const float *source_of(const struct train_model *m, const struct bert_weights *w,
                              const float *slot)
{
    const struct train_view *v = &m->p;
    const float *const pairs[][2] = {
        {v->word_emb, w->word_emb},         {v->pos_emb, w->pos_emb},
        {v->type_emb, w->type_emb},         {v->emb_ln_g, w->emb_ln_g},
        {v->emb_ln_b, w->emb_ln_b},         {v->pooler_w, w->pooler_w},
        {v->pooler_b, w->pooler_b},         {v->mlm_dense_w, w->mlm_dense_w},
        {v->mlm_dense_b, w->mlm_dense_b},   {v->mlm_ln_g, w->mlm_ln_g},
        {v->mlm_ln_b, w->mlm_ln_b},         {v->mlm_bias, w->mlm_decoder_b},
        /* A token-classification checkpoint keeps its classifier as the token head. */
        {v->classifier_w, m->config.token_head ? w->token_w : w->classifier_w},
        {v->classifier_b, m->config.token_head ? w->token_b : w->classifier_b},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i][0] == slot)
            return pairs[i][1];
    for (size_t l = 0; l < m->config.num_layers; l++) {
        const struct train_layer *a = &v->layers[l];
        const struct bert_layer_weights *b = &w->layers[l];
        const float *const lp[][2] = {
            {a->query_w, b->query.w},       {a->query_b, b->query_b},
            {a->key_w, b->key.w},           {a->key_b, b->key_b},
            {a->value_w, b->value.w},       {a->value_b, b->value_b},
            {a->attn_out_w, b->attn_out.w}, {a->attn_out_b, b->attn_out_b},
            {a->attn_ln_g, b->attn_ln_g},   {a->attn_ln_b, b->attn_ln_b},
            {a->ffn_in_w, b->ffn_in.w},     {a->ffn_in_b, b->ffn_in_b},
            {a->ffn_out_w, b->ffn_out.w},   {a->ffn_out_b, b->ffn_out_b},
            {a->ffn_ln_g, b->ffn_ln_g},     {a->ffn_ln_b, b->ffn_ln_b},
        };
        for (size_t i = 0; i < sizeof lp / sizeof lp[0]; i++)
            if (lp[i][0] == slot)
                return lp[i][1];
    }
    return NULL;
}

enum bert_status train_model_copy_weights(struct train_model *m, const struct bert_weights *w,
                                          struct bert_error *err)
{
    if (w->mlm_decoder_w != NULL && w->mlm_decoder_w != w->word_emb)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "the checkpoint's MLM decoder is not tied to the word embeddings; "
                              "the trainer ties them");
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct train_tensor *t = &m->tensors[i];
        float *dst = m->params + t->offset;
        const float *src = source_of(m, w, dst);
        if (src != NULL)
            memcpy(dst, src, t->count * sizeof *dst);
    }
    return BERT_OK;
}

enum bert_status train_model_load(struct train_model *m, const char *dir, bool mlm,
                                  bool classifier, struct bert_error *err)
{
    struct bert_model *loaded;
    enum bert_status st = bert_model_load(dir, &loaded, err);
    if (st != BERT_OK)
        return st;
    st = train_model_init(m, &loaded->config, mlm, classifier, err);
    if (st == BERT_OK)
        st = train_model_copy_weights(m, &loaded->engine->weights, err);
    bert_model_free(loaded);
    if (st != BERT_OK)
        train_model_free(m);
    return st;
}

enum bert_status train_model_save(const struct train_model *m, const char *dir,
                                  const char *tokenizer_dir, enum bert_dtype dtype,
                                  struct bert_error *err)
{
    enum bert_status st = file_mkdirs(dir, err);
    if (st != BERT_OK)
        return st;
    struct bert_config c = m->config;
    snprintf(c.architecture, sizeof c.architecture, "%s",
             m->classifier && c.token_head ? "BertForTokenClassification"
             : m->classifier ? "BertForSequenceClassification"
             : m->mlm      ? "BertForMaskedLM"
                           : "BertModel");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((st = bert_config_write(&c, path, err)) != BERT_OK)
        return st;
    if ((st = bert_copy_tokenizer_files(tokenizer_dir, dir, err)) != BERT_OK)
        return st;
    struct safetensors_out *out = calloc(m->n_tensors, sizeof *out);
    if (out == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct train_tensor *t = &m->tensors[i];
        out[i] = (struct safetensors_out){.name = t->name, .dtype = dtype, .ndim = t->ndim,
                                          .shape = {t->shape[0], t->shape[1]},
                                          .data = m->params + t->offset};
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st = safetensors_write(path, out, m->n_tensors, err);
    free(out);
    return st;
}

void train_model_free(struct train_model *m)
{
    bert_config_free(&m->config);
    free(m->tensors);
    free(m->p.layers);
    free(m->g.layers);
    free(m->params);
    free(m->grads);
    memset(m, 0, sizeof *m);
}

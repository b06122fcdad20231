#include "synth.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileutil.h"
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

static bool build_tensors(struct synth_list *l, const struct bert_synth_options *o,
                          const struct bert_config *c)
{
    const char *p = o->prefix ? "bert." : "";
    const size_t H = c->hidden_size, FF = c->intermediate_size;
    char n[160];
#define ADD(kind, d0, d1, ...)                                                 \
    do {                                                                       \
        snprintf(n, sizeof n, __VA_ARGS__);                                    \
        if (!synth_add(l, o, n, kind, d0, d1))                                 \
            return false;                                                      \
    } while (0)
    ADD(PARAM_WEIGHT, c->vocab_size, H, "%sembeddings.word_embeddings.weight", p);
    ADD(PARAM_WEIGHT, c->max_position_embeddings, H, "%sembeddings.position_embeddings.weight", p);
    ADD(PARAM_WEIGHT, c->type_vocab_size, H, "%sembeddings.token_type_embeddings.weight", p);
    ADD(PARAM_LN_GAMMA, H, 0, "%sembeddings.LayerNorm.weight", p);
    ADD(PARAM_LN_BETA, H, 0, "%sembeddings.LayerNorm.bias", p);
    for (size_t i = 0; i < c->num_layers; i++) {
        static const char *const qkv[] = {"query", "key", "value"};
        for (int k = 0; k < 3; k++) {
            ADD(PARAM_WEIGHT, H, H, "%sencoder.layer.%zu.attention.self.%s.weight", p, i, qkv[k]);
            ADD(PARAM_BIAS, H, 0, "%sencoder.layer.%zu.attention.self.%s.bias", p, i, qkv[k]);
        }
        ADD(PARAM_WEIGHT, H, H, "%sencoder.layer.%zu.attention.output.dense.weight", p, i);
        ADD(PARAM_BIAS, H, 0, "%sencoder.layer.%zu.attention.output.dense.bias", p, i);
        ADD(PARAM_LN_GAMMA, H, 0, "%sencoder.layer.%zu.attention.output.LayerNorm.weight", p, i);
        ADD(PARAM_LN_BETA, H, 0, "%sencoder.layer.%zu.attention.output.LayerNorm.bias", p, i);
        ADD(PARAM_WEIGHT, FF, H, "%sencoder.layer.%zu.intermediate.dense.weight", p, i);
        ADD(PARAM_BIAS, FF, 0, "%sencoder.layer.%zu.intermediate.dense.bias", p, i);
        ADD(PARAM_WEIGHT, H, FF, "%sencoder.layer.%zu.output.dense.weight", p, i);
        ADD(PARAM_BIAS, H, 0, "%sencoder.layer.%zu.output.dense.bias", p, i);
        ADD(PARAM_LN_GAMMA, H, 0, "%sencoder.layer.%zu.output.LayerNorm.weight", p, i);
        ADD(PARAM_LN_BETA, H, 0, "%sencoder.layer.%zu.output.LayerNorm.bias", p, i);
    }
    if (o->pooler || o->classifier) {
        ADD(PARAM_WEIGHT, H, H, "%spooler.dense.weight", p);
        ADD(PARAM_BIAS, H, 0, "%spooler.dense.bias", p);
    }
    if (o->mlm) {
        ADD(PARAM_WEIGHT, H, H, "cls.predictions.transform.dense.weight");
        ADD(PARAM_BIAS, H, 0, "cls.predictions.transform.dense.bias");
        ADD(PARAM_LN_GAMMA, H, 0, "cls.predictions.transform.LayerNorm.weight");
        ADD(PARAM_LN_BETA, H, 0, "cls.predictions.transform.LayerNorm.bias");
        ADD(PARAM_BIAS, c->vocab_size, 0, "cls.predictions.bias");
        if (o->untied_decoder)
            ADD(PARAM_WEIGHT, c->vocab_size, H, "cls.predictions.decoder.weight");
    }
    if (o->classifier) {
        ADD(PARAM_WEIGHT, c->num_labels, H, "classifier.weight");
        ADD(PARAM_BIAS, c->num_labels, 0, "classifier.bias");
    }
#undef ADD
    return true;
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

enum bert_status bert_synth_write(const struct bert_synth_options *o, const char *dir,
                                  struct bert_error *err)
{
    struct bert_config c = o->config;
    if (c.vocab_size == 0) {
        struct bert_tokenizer *tok;
        enum bert_status st = bert_tokenizer_load(o->tokenizer_dir, &tok, err);
        if (st != BERT_OK)
            return st;
        c.vocab_size = bert_tokenizer_vocab_size(tok);
        bert_tokenizer_free(tok);
    }
    if (c.hidden_size == 0 || c.num_heads == 0 || c.hidden_size % c.num_heads != 0 ||
        c.num_layers == 0 || c.intermediate_size == 0 || c.max_position_embeddings == 0 ||
        c.type_vocab_size == 0 || (o->classifier && c.num_labels == 0))
        return bert_error_set(err, BERT_E_INVALID,
                              "invalid geometry: hidden %zu, heads %zu, layers %zu, "
                              "intermediate %zu, positions %zu, types %zu, labels %zu",
                              c.hidden_size, c.num_heads, c.num_layers, c.intermediate_size,
                              c.max_position_embeddings, c.type_vocab_size, c.num_labels);
    c.tie_word_embeddings = !o->untied_decoder;
    if (c.architecture[0] == '\0')
        snprintf(c.architecture, sizeof c.architecture, "%s",
                 o->classifier ? "BertForSequenceClassification"
                 : o->mlm      ? "BertForMaskedLM"
                               : "BertModel");

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

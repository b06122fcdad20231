#include "weights.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One parameter to bind: where the pointer goes and the shape it must have. */
struct binding {
    const struct safetensors_tensor *tensor;
    const float **dst;
    bool convert; /* not usable in place: F16/BF16, or F32 misaligned */
};

struct binder {
    const struct safetensors_file *file;
    const char *prefix; /* "bert." or "" */
    struct binding *list;
    size_t n, cap;
    size_t arena_floats;
    struct bert_error *err;
};

static enum bert_status add_binding(struct binder *b, const struct safetensors_tensor *t,
                                    const float **dst, size_t ndim, const size_t *shape)
{
    bool same = t->ndim == ndim;
    for (size_t d = 0; same && d < ndim; d++)
        same = t->shape[d] == shape[d];
    if (!same) {
        char want[64], got[64];
        int w = 0, g = 0;
        for (size_t d = 0; d < ndim; d++)
            w += snprintf(want + w, sizeof want - (size_t)w, "%s%zu", d ? ", " : "", shape[d]);
        for (size_t d = 0; d < t->ndim && g < (int)sizeof got - 16; d++)
            g += snprintf(got + g, sizeof got - (size_t)g, "%s%zu", d ? ", " : "", t->shape[d]);
        return bert_error_set(b->err, BERT_E_FORMAT,
                              "%s: tensor '%s' has shape [%s], config.json implies [%s]",
                              b->file->path ? b->file->path : "model.safetensors", t->name, got,
                              want);
    }
    if (t->dtype != BERT_DTYPE_F32 && t->dtype != BERT_DTYPE_F16 && t->dtype != BERT_DTYPE_BF16)
        return bert_error_set(b->err, BERT_E_UNSUPPORTED,
                              "%s: tensor '%s' has dtype %s (supported: F32, F16, BF16)",
                              b->file->path ? b->file->path : "model.safetensors", t->name,
                              bert_dtype_name(t->dtype));
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        struct binding *list = realloc(b->list, cap * sizeof *list);
        if (list == NULL)
            return bert_error_set(b->err, BERT_E_NOMEM, "out of memory");
        b->list = list;
        b->cap = cap;
    }
    bool aligned = ((uintptr_t)t->data % sizeof(float)) == 0;
    bool convert = t->dtype != BERT_DTYPE_F32 || !aligned;
    b->list[b->n++] = (struct binding){t, dst, convert};
    if (convert)
        b->arena_floats += t->nbytes / bert_dtype_size(t->dtype);
    return BERT_OK;
}

static const struct safetensors_tensor *lookup(const struct binder *b, const char *name,
                                               bool prefixed)
{
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefixed ? b->prefix : "", name);
    return safetensors_find(b->file, full);
}

/* Bind a required tensor; `name` is relative to the encoder prefix when
 * `prefixed`. LayerNorm parameters may use the old gamma/beta names. */
static enum bert_status need(struct binder *b, const char *name, bool prefixed,
                             const float **dst, size_t ndim, size_t d0, size_t d1)
{
    const struct safetensors_tensor *t = lookup(b, name, prefixed);
    if (t == NULL) {
        const char *ln = strstr(name, "LayerNorm.");
        if (ln != NULL) {
            char alt[256];
            bool is_weight = strcmp(ln, "LayerNorm.weight") == 0;
            snprintf(alt, sizeof alt, "%.*sLayerNorm.%s", (int)(ln - name), name,
                     is_weight ? "gamma" : "beta");
            t = lookup(b, alt, prefixed);
        }
    }
    if (t == NULL)
        return bert_error_set(b->err, BERT_E_FORMAT, "%s: missing tensor '%s%s'",
                              b->file->path ? b->file->path : "model.safetensors",
                              prefixed ? b->prefix : "", name);
    size_t shape[2] = {d0, d1};
    return add_binding(b, t, dst, ndim, shape);
}

static bool has(const struct binder *b, const char *name, bool prefixed)
{
    return lookup(b, name, prefixed) != NULL;
}

static enum bert_status bind_layer(struct binder *b, const struct bert_config *c, size_t i,
                                   struct bert_layer_weights *l)
{
    const size_t H = c->hidden_size, I = c->intermediate_size;
    char n[128];
    enum bert_status st = BERT_OK;
#define NEED(suffix, dst, ndim, d0, d1)                                             \
    do {                                                                            \
        snprintf(n, sizeof n, "encoder.layer.%zu.%s", i, suffix);                   \
        if ((st = need(b, n, true, &(dst), ndim, d0, d1)) != BERT_OK)               \
            return st;                                                              \
    } while (0)
    NEED("attention.self.query.weight", l->query_w, 2, H, H);
    NEED("attention.self.query.bias", l->query_b, 1, H, 0);
    NEED("attention.self.key.weight", l->key_w, 2, H, H);
    NEED("attention.self.key.bias", l->key_b, 1, H, 0);
    NEED("attention.self.value.weight", l->value_w, 2, H, H);
    NEED("attention.self.value.bias", l->value_b, 1, H, 0);
    NEED("attention.output.dense.weight", l->attn_out_w, 2, H, H);
    NEED("attention.output.dense.bias", l->attn_out_b, 1, H, 0);
    NEED("attention.output.LayerNorm.weight", l->attn_ln_g, 1, H, 0);
    NEED("attention.output.LayerNorm.bias", l->attn_ln_b, 1, H, 0);
    NEED("intermediate.dense.weight", l->ffn_in_w, 2, I, H);
    NEED("intermediate.dense.bias", l->ffn_in_b, 1, I, 0);
    NEED("output.dense.weight", l->ffn_out_w, 2, H, I);
    NEED("output.dense.bias", l->ffn_out_b, 1, H, 0);
    NEED("output.LayerNorm.weight", l->ffn_ln_g, 1, H, 0);
    NEED("output.LayerNorm.bias", l->ffn_ln_b, 1, H, 0);
#undef NEED
    return st;
}

static enum bert_status bind_all(struct binder *b, const struct bert_config *c,
                                 struct bert_weights *w)
{
    const size_t H = c->hidden_size, V = c->vocab_size;
    enum bert_status st;
    if ((st = need(b, "embeddings.word_embeddings.weight", true, &w->word_emb, 2, V, H)) ||
        (st = need(b, "embeddings.position_embeddings.weight", true, &w->pos_emb, 2,
                   c->max_position_embeddings, H)) ||
        (st = need(b, "embeddings.token_type_embeddings.weight", true, &w->type_emb, 2,
                   c->type_vocab_size, H)) ||
        (st = need(b, "embeddings.LayerNorm.weight", true, &w->emb_ln_g, 1, H, 0)) ||
        (st = need(b, "embeddings.LayerNorm.bias", true, &w->emb_ln_b, 1, H, 0)))
        return st;
    for (size_t i = 0; i < c->num_layers; i++)
        if ((st = bind_layer(b, c, i, &w->layers[i])) != BERT_OK)
            return st;
    char extra[96];
    snprintf(extra, sizeof extra, "encoder.layer.%zu.output.dense.weight", c->num_layers);
    if (has(b, extra, true))
        return bert_error_set(b->err, BERT_E_FORMAT,
                              "%s: has tensors for more than the %zu layers config.json declares "
                              "(found '%s%s')",
                              b->file->path, c->num_layers, b->prefix, extra);

    if (has(b, "pooler.dense.weight", true) &&
        ((st = need(b, "pooler.dense.weight", true, &w->pooler_w, 2, H, H)) ||
         (st = need(b, "pooler.dense.bias", true, &w->pooler_b, 1, H, 0))))
        return st;

    if (has(b, "cls.predictions.transform.dense.weight", false)) {
        if ((st = need(b, "cls.predictions.transform.dense.weight", false, &w->mlm_dense_w, 2, H,
                       H)) ||
            (st = need(b, "cls.predictions.transform.dense.bias", false, &w->mlm_dense_b, 1, H,
                       0)) ||
            (st = need(b, "cls.predictions.transform.LayerNorm.weight", false, &w->mlm_ln_g, 1, H,
                       0)) ||
            (st = need(b, "cls.predictions.transform.LayerNorm.bias", false, &w->mlm_ln_b, 1, H,
                       0)))
            return st;
        /* HF drops the decoder weight from the file when it is tied. */
        if (has(b, "cls.predictions.decoder.weight", false)) {
            if ((st = need(b, "cls.predictions.decoder.weight", false, &w->mlm_decoder_w, 2, V,
                           H)))
                return st;
        } else if (!c->tie_word_embeddings) {
            return bert_error_set(b->err, BERT_E_FORMAT,
                                  "%s: missing tensor 'cls.predictions.decoder.weight' "
                                  "(config.json sets tie_word_embeddings false)",
                                  b->file->path);
        }
        const char *bias = has(b, "cls.predictions.bias", false) ? "cls.predictions.bias"
                                                                  : "cls.predictions.decoder.bias";
        if ((st = need(b, bias, false, &w->mlm_decoder_b, 1, V, 0)))
            return st;
    }

    if (has(b, "classifier.weight", false)) {
        /* Pointers are only set by materialise(), so ask the file. */
        if (!has(b, "pooler.dense.weight", true))
            return bert_error_set(b->err, BERT_E_FORMAT,
                                  "%s: has 'classifier.weight' but no '%spooler.dense.weight' "
                                  "(BertForSequenceClassification needs both)",
                                  b->file->path, b->prefix);
        if ((st = need(b, "classifier.weight", false, &w->classifier_w, 2, c->num_labels, H)) ||
            (st = need(b, "classifier.bias", false, &w->classifier_b, 1, c->num_labels, 0)))
            return st;
    }
    return BERT_OK;
}

/* Second pass: point F32 tensors into the mapping, convert the rest into
 * the arena. */
static void materialise(struct binder *b, struct bert_weights *w)
{
    float *next = w->arena;
    for (size_t i = 0; i < b->n; i++) {
        const struct binding *bd = &b->list[i];
        const struct safetensors_tensor *t = bd->tensor;
        if (!bd->convert) {
            *bd->dst = t->data;
            continue;
        }
        size_t count = t->nbytes / bert_dtype_size(t->dtype);
        const uint8_t *src = t->data;
        for (size_t k = 0; k < count; k++) {
            if (t->dtype == BERT_DTYPE_F32) {
                memcpy(&next[k], src + 4 * k, 4);
            } else {
                uint16_t h;
                memcpy(&h, src + 2 * k, 2);
                next[k] = t->dtype == BERT_DTYPE_F16 ? bert_f16_to_f32(h) : bert_bf16_to_f32(h);
            }
        }
        *bd->dst = next;
        next += count;
    }
}

enum bert_status bert_weights_bind(const struct bert_config *cfg,
                                   const struct safetensors_file *file,
                                   struct bert_weights *w, struct bert_error *err)
{
    memset(w, 0, sizeof *w);
    struct binder b = {.file = file, .err = err};
    w->prefixed = safetensors_find(file, "bert.embeddings.word_embeddings.weight") != NULL;
    b.prefix = w->prefixed ? "bert." : "";
    w->layers = calloc(cfg->num_layers, sizeof *w->layers);
    if (w->layers == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    enum bert_status st = bind_all(&b, cfg, w);
    if (st == BERT_OK && b.arena_floats > 0) {
        w->arena = malloc(b.arena_floats * sizeof(float));
        if (w->arena == NULL)
            st = bert_error_set(err, BERT_E_NOMEM,
                                "out of memory converting %zu weights to float32",
                                b.arena_floats);
        w->arena_floats = b.arena_floats;
    }
    if (st == BERT_OK) {
        materialise(&b, w);
        if (w->mlm_dense_w != NULL && w->mlm_decoder_w == NULL)
            w->mlm_decoder_w = w->word_emb;
    }
    free(b.list);
    if (st != BERT_OK)
        bert_weights_free(w);
    return st;
}

void bert_weights_free(struct bert_weights *w)
{
    free(w->layers);
    free(w->arena);
    memset(w, 0, sizeof *w);
}

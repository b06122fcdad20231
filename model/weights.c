#include "weights.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "linear_bf16.h"
#include "linear_f32.h"
#include "linear_int8.h"

/* One parameter to bind: where the pointer goes and the shape it must have. */
struct binding {
    const struct safetensors_tensor *tensor;
    const float **dst;
    bool convert; /* not usable in place: F16/BF16, or F32 misaligned */
};

struct binder {
    const struct safetensors_file *file;
    bool prefixed; /* encoder names carry the family prefix */
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

static const struct safetensors_tensor *find_tensor(const struct binder *b,
                                                    enum bert_family family, bool prefixed,
                                                    enum bert_tensor tensor, size_t layer,
                                                    char *name, size_t size)
{
    if (!bert_tensor_name(family, tensor, layer, prefixed, name, size))
        return NULL;
    const struct safetensors_tensor *t = safetensors_find(b->file, name);
    char alt[256];
    if (t == NULL && bert_tensor_alt_name(family, tensor, layer, prefixed, alt, sizeof alt))
        t = safetensors_find(b->file, alt);
    return t;
}

static bool has(const struct binder *b, const struct bert_config *c, enum bert_tensor tensor)
{
    char name[256];
    return find_tensor(b, c->family, b->prefixed, tensor, 0, name, sizeof name) != NULL;
}

/* Bind a required tensor of layer `layer` (ignored for the others). */
static enum bert_status need(struct binder *b, const struct bert_config *c,
                             enum bert_tensor tensor, size_t layer, const float **dst,
                             size_t ndim, size_t d0, size_t d1)
{
    char name[256];
    const struct safetensors_tensor *t =
        find_tensor(b, c->family, b->prefixed, tensor, layer, name, sizeof name);
    if (t == NULL)
        return bert_error_set(b->err, BERT_E_FORMAT, "%s: missing tensor '%s'",
                              b->file->path ? b->file->path : "model.safetensors", name);
    size_t shape[2] = {d0, d1};
    return add_binding(b, t, dst, ndim, shape);
}

/* A tensor the config may turn off (ModernBERT's, NomicBERT's, JinaBERT's):
 * bound when `on`, else the zeros (a bias or a LayerNorm beta). */
static enum bert_status maybe(struct binder *b, const struct bert_config *c, bool on,
                              enum bert_tensor tensor, size_t layer, const float **dst,
                              size_t n, const float *zeros)
{
    if (!on) {
        *dst = zeros;
        return BERT_OK;
    }
    return need(b, c, tensor, layer, dst, 1, n, 0);
}

static enum bert_status bind_layer(struct binder *b, const struct bert_config *c, size_t i,
                                   struct bert_layer_weights *l, const float *zeros)
{
    const size_t H = c->hidden_size, I = c->intermediate_size;
    /* JinaBertGLUMLP: gated_layers (2I, H), no bias. */
    const bool glu = c->family == BERT_FAMILY_JINA_BERT;
    const struct {
        enum bert_tensor tensor;
        const float **dst;
        size_t ndim, d0, d1;
    } params[] = {
        {BERT_TENSOR_LAYER_QUERY_W, &l->query.w, 2, H, H},
        {BERT_TENSOR_LAYER_QUERY_B, &l->query_b, 1, H, 0},
        {BERT_TENSOR_LAYER_KEY_W, &l->key.w, 2, H, H},
        {BERT_TENSOR_LAYER_KEY_B, &l->key_b, 1, H, 0},
        {BERT_TENSOR_LAYER_VALUE_W, &l->value.w, 2, H, H},
        {BERT_TENSOR_LAYER_VALUE_B, &l->value_b, 1, H, 0},
        {BERT_TENSOR_LAYER_ATTN_OUT_W, &l->attn_out.w, 2, H, H},
        {BERT_TENSOR_LAYER_ATTN_OUT_B, &l->attn_out_b, 1, H, 0},
        {BERT_TENSOR_LAYER_ATTN_LN_G, &l->attn_ln_g, 1, H, 0},
        {BERT_TENSOR_LAYER_ATTN_LN_B, &l->attn_ln_b, 1, H, 0},
        {BERT_TENSOR_LAYER_FFN_IN_W, &l->ffn_in.w, 2, glu ? 2 * I : I, H},
        {BERT_TENSOR_LAYER_FFN_IN_B, &l->ffn_in_b, 1, I, 0},
        {BERT_TENSOR_LAYER_FFN_OUT_W, &l->ffn_out.w, 2, H, I},
        {BERT_TENSOR_LAYER_FFN_OUT_B, &l->ffn_out_b, 1, H, 0},
        {BERT_TENSOR_LAYER_FFN_LN_G, &l->ffn_ln_g, 1, H, 0},
        {BERT_TENSOR_LAYER_FFN_LN_B, &l->ffn_ln_b, 1, H, 0},
    };
    enum bert_status st = BERT_OK;
    for (size_t k = 0; k < sizeof params / sizeof params[0] && st == BERT_OK; k++)
        st = glu && params[k].tensor == BERT_TENSOR_LAYER_FFN_IN_B
                 ? maybe(b, c, false, params[k].tensor, i, params[k].dst, I, zeros)
                 : need(b, c, params[k].tensor, i, params[k].dst, params[k].ndim, params[k].d0,
                        params[k].d1);
    return st;
}

static enum bert_status bind_embeddings(struct binder *b, const struct bert_config *c,
                                        struct bert_weights *w)
{
    const size_t E = c->embedding_size, H = c->hidden_size;
    enum bert_status st;
    char pos[256];
    const bool positions = bert_tensor_name(c->family, BERT_TENSOR_POS_EMB, 0, false, pos,
                                            sizeof pos); /* JinaBERT's are ALiBi */
    if ((st = need(b, c, BERT_TENSOR_WORD_EMB, 0, &w->word_emb, 2, c->vocab_size, E)) ||
        (positions && (st = need(b, c, BERT_TENSOR_POS_EMB, 0, &w->pos_emb, 2,
                                 c->max_position_embeddings, E))) ||
        (st = need(b, c, BERT_TENSOR_EMB_LN_G, 0, &w->emb_ln_g, 1, E, 0)) ||
        (st = need(b, c, BERT_TENSOR_EMB_LN_B, 0, &w->emb_ln_b, 1, E, 0)))
        return st;
    if (c->type_vocab_size > 0 &&
        (st = need(b, c, BERT_TENSOR_TYPE_EMB, 0, &w->type_emb, 2, c->type_vocab_size, E)))
        return st;
    /* ElectraEmbeddings project only when the widths differ. */
    if (E != H && ((st = need(b, c, BERT_TENSOR_EMB_PROJ_W, 0, &w->emb_proj.w, 2, H, E)) ||
                   (st = need(b, c, BERT_TENSOR_EMB_PROJ_B, 0, &w->emb_proj_b, 1, H, 0))))
        return st;
    return BERT_OK;
}

static enum bert_status bind_mlm(struct binder *b, const struct bert_config *c,
                                 struct bert_weights *w)
{
    const size_t E = c->embedding_size, H = c->hidden_size, V = c->vocab_size;
    enum bert_status st;
    if ((st = need(b, c, BERT_TENSOR_MLM_DENSE_W, 0, &w->mlm_dense_w, 2, E, H)) ||
        (st = need(b, c, BERT_TENSOR_MLM_DENSE_B, 0, &w->mlm_dense_b, 1, E, 0)) ||
        (st = need(b, c, BERT_TENSOR_MLM_LN_G, 0, &w->mlm_ln_g, 1, E, 0)) ||
        (st = need(b, c, BERT_TENSOR_MLM_LN_B, 0, &w->mlm_ln_b, 1, E, 0)))
        return st;
    /* HF drops the decoder weight from the file when it is tied. */
    if (has(b, c, BERT_TENSOR_MLM_DECODER_W)) {
        if ((st = need(b, c, BERT_TENSOR_MLM_DECODER_W, 0, &w->mlm_decoder_w, 2, V, E)))
            return st;
    } else if (!c->tie_word_embeddings) {
        char name[256];
        bert_tensor_name(c->family, BERT_TENSOR_MLM_DECODER_W, 0, false, name, sizeof name);
        return bert_error_set(b->err, BERT_E_FORMAT,
                              "%s: missing tensor '%s' (config.json sets tie_word_embeddings "
                              "false)",
                              b->file->path, name);
    }
    return need(b, c, BERT_TENSOR_MLM_DECODER_B, 0, &w->mlm_decoder_b, 1, V, 0);
}

static enum bert_status bind_modernbert_layer(struct binder *b, const struct bert_config *c,
                                              size_t i, struct bert_layer_weights *l,
                                              const float *zeros)
{
    const size_t H = c->hidden_size, I = c->intermediate_size;
    const struct bert_modernbert *m = &c->modern;
    enum bert_status st;
    if ((st = need(b, c, BERT_TENSOR_LAYER_QUERY_W, i, &l->query.w, 2, 3 * H, H)) ||
        (st = maybe(b, c, m->attention_bias, BERT_TENSOR_LAYER_QUERY_B, i, &l->query_b, 3 * H,
                    zeros)) ||
        (st = need(b, c, BERT_TENSOR_LAYER_ATTN_OUT_W, i, &l->attn_out.w, 2, H, H)) ||
        (st = maybe(b, c, m->attention_bias, BERT_TENSOR_LAYER_ATTN_OUT_B, i, &l->attn_out_b, H,
                    zeros)) ||
        (st = need(b, c, BERT_TENSOR_LAYER_FFN_LN_G, i, &l->ffn_ln_g, 1, H, 0)) ||
        (st = maybe(b, c, m->norm_bias, BERT_TENSOR_LAYER_FFN_LN_B, i, &l->ffn_ln_b, H,
                    zeros)) ||
        (st = need(b, c, BERT_TENSOR_LAYER_FFN_IN_W, i, &l->ffn_in.w, 2, 2 * I, H)) ||
        (st = maybe(b, c, m->mlp_bias, BERT_TENSOR_LAYER_FFN_IN_B, i, &l->ffn_in_b, 2 * I,
                    zeros)) ||
        (st = need(b, c, BERT_TENSOR_LAYER_FFN_OUT_W, i, &l->ffn_out.w, 2, H, I)) ||
        (st = maybe(b, c, m->mlp_bias, BERT_TENSOR_LAYER_FFN_OUT_B, i, &l->ffn_out_b, H,
                    zeros)))
        return st;
    /* Layer 0's attn_norm is an Identity: no tensor. */
    if (i == 0)
        return BERT_OK;
    if ((st = need(b, c, BERT_TENSOR_LAYER_ATTN_LN_G, i, &l->attn_ln_g, 1, H, 0)))
        return st;
    return maybe(b, c, m->norm_bias, BERT_TENSOR_LAYER_ATTN_LN_B, i, &l->attn_ln_b, H, zeros);
}

/* The per-token head config.json's architecture names: every family's
 * Linear(H, width) on each token (ModernBERT's head before it is bound
 * with the encoder). */
static enum bert_status bind_token_head(struct binder *b, const struct bert_config *c,
                                        struct bert_weights *w)
{
    const bool qa = c->token_head == BERT_TOKEN_HEAD_QUESTION_ANSWERING;
    const size_t width = qa ? 2 : c->num_labels;
    enum bert_status st;
    if ((st = need(b, c, qa ? BERT_TENSOR_QA_W : BERT_TENSOR_TOKEN_CLS_W, 0, &w->token_w, 2,
                   width, c->hidden_size)))
        return st;
    return need(b, c, qa ? BERT_TENSOR_QA_B : BERT_TENSOR_TOKEN_CLS_B, 0, &w->token_b, 1, width,
                0);
}

/* ModernBertModel, and the ModernBertPredictionHead ("head") that its
 * MaskedLM and SequenceClassification models put on top. */
static enum bert_status bind_modernbert(struct binder *b, const struct bert_config *c,
                                        struct bert_weights *w)
{
    const size_t H = c->hidden_size, V = c->vocab_size;
    const bool norm_bias = c->modern.norm_bias;
    enum bert_status st;
    if ((st = need(b, c, BERT_TENSOR_WORD_EMB, 0, &w->word_emb, 2, V, H)) ||
        (st = need(b, c, BERT_TENSOR_EMB_LN_G, 0, &w->emb_ln_g, 1, H, 0)) ||
        (st = maybe(b, c, norm_bias, BERT_TENSOR_EMB_LN_B, 0, &w->emb_ln_b, H, w->zeros)))
        return st;
    for (size_t i = 0; i < c->num_layers; i++)
        if ((st = bind_modernbert_layer(b, c, i, &w->layers[i], w->zeros)) != BERT_OK)
            return st;
    if ((st = need(b, c, BERT_TENSOR_FINAL_LN_G, 0, &w->final_ln_g, 1, H, 0)) ||
        (st = maybe(b, c, norm_bias, BERT_TENSOR_FINAL_LN_B, 0, &w->final_ln_b, H, w->zeros)))
        return st;
    const bool token = c->token_head != BERT_TOKEN_HEAD_NONE;
    const bool mlm = !token &&
                     (has(b, c, BERT_TENSOR_MLM_DECODER_B) || has(b, c, BERT_TENSOR_MLM_DECODER_W));
    const bool classifier = !token && has(b, c, BERT_TENSOR_CLASSIFIER_W);
    if (!mlm && !classifier && !token)
        return BERT_OK; /* a bare ModernBertModel (any head tensors are ignored) */
    if ((st = need(b, c, BERT_TENSOR_POOLER_W, 0, &w->pooler_w, 2, H, H)) ||
        (st = maybe(b, c, c->modern.classifier_bias, BERT_TENSOR_POOLER_B, 0, &w->pooler_b, H,
                    w->zeros)) ||
        (st = need(b, c, BERT_TENSOR_POOLER_LN_G, 0, &w->pooler_ln_g, 1, H, 0)) ||
        (st = maybe(b, c, norm_bias, BERT_TENSOR_POOLER_LN_B, 0, &w->pooler_ln_b, H,
                    w->zeros)))
        return st;
    if (token)
        return bind_token_head(b, c, w);
    if (classifier &&
        ((st = need(b, c, BERT_TENSOR_CLASSIFIER_W, 0, &w->classifier_w, 2, c->num_labels, H)) ||
         (st = need(b, c, BERT_TENSOR_CLASSIFIER_B, 0, &w->classifier_b, 1, c->num_labels, 0))))
        return st;
    if (!mlm)
        return BERT_OK;
    /* decoder_bias false leaves decoder.bias out. */
    if ((st = maybe(b, c, has(b, c, BERT_TENSOR_MLM_DECODER_B), BERT_TENSOR_MLM_DECODER_B, 0,
                    &w->mlm_decoder_b, V, w->zeros)))
        return st;
    if (has(b, c, BERT_TENSOR_MLM_DECODER_W))
        return need(b, c, BERT_TENSOR_MLM_DECODER_W, 0, &w->mlm_decoder_w, 2, V, H);
    if (!c->tie_word_embeddings)
        return bert_error_set(b->err, BERT_E_FORMAT,
                              "%s: missing tensor 'decoder.weight' (config.json sets "
                              "tie_word_embeddings false)",
                              b->file->path);
    return BERT_OK;
}

/* NomicBertModel: embeddings (word, token type) and emb_ln, post-LN
 * blocks with a fused Wqkv and the gated MLP fc11 / fc12 / fc2, biases
 * where the config turns them on. */
static enum bert_status bind_nomic_encoder(struct binder *b, const struct bert_config *c,
                                           struct bert_weights *w)
{
    const size_t H = c->hidden_size, I = c->intermediate_size;
    const struct bert_nomic *n = &c->nomic;
    enum bert_status st;
    if ((st = need(b, c, BERT_TENSOR_WORD_EMB, 0, &w->word_emb, 2, c->vocab_size, H)) ||
        (st = need(b, c, BERT_TENSOR_EMB_LN_G, 0, &w->emb_ln_g, 1, H, 0)) ||
        (st = need(b, c, BERT_TENSOR_EMB_LN_B, 0, &w->emb_ln_b, 1, H, 0)) ||
        (c->type_vocab_size > 0 &&
         (st = need(b, c, BERT_TENSOR_TYPE_EMB, 0, &w->type_emb, 2, c->type_vocab_size, H))))
        return st;
    for (size_t i = 0; i < c->num_layers; i++) {
        struct bert_layer_weights *l = &w->layers[i];
        if ((st = need(b, c, BERT_TENSOR_LAYER_QUERY_W, i, &l->query.w, 2, 3 * H, H)) ||
            (st = maybe(b, c, n->qkv_bias, BERT_TENSOR_LAYER_QUERY_B, i, &l->query_b, 3 * H,
                        w->zeros)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_OUT_W, i, &l->attn_out.w, 2, H, H)) ||
            (st = maybe(b, c, n->qkv_bias, BERT_TENSOR_LAYER_ATTN_OUT_B, i, &l->attn_out_b, H,
                        w->zeros)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_LN_G, i, &l->attn_ln_g, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_LN_B, i, &l->attn_ln_b, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_IN_W, i, &l->ffn_in.w, 2, I, H)) ||
            (st = maybe(b, c, n->fc1_bias, BERT_TENSOR_LAYER_FFN_IN_B, i, &l->ffn_in_b, I,
                        w->zeros)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_GATE_W, i, &l->ffn_gate.w, 2, I, H)) ||
            (st = maybe(b, c, n->fc1_bias, BERT_TENSOR_LAYER_FFN_GATE_B, i, &l->ffn_gate_b, I,
                        w->zeros)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_OUT_W, i, &l->ffn_out.w, 2, H, I)) ||
            (st = maybe(b, c, n->fc2_bias, BERT_TENSOR_LAYER_FFN_OUT_B, i, &l->ffn_out_b, H,
                        w->zeros)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_LN_G, i, &l->ffn_ln_g, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_LN_B, i, &l->ffn_ln_b, 1, H, 0)))
            return st;
    }
    return BERT_OK;
}

/* GTE's NewModel: word (and token type) embeddings with their LayerNorm,
 * post-LN layers with the fused qkv_proj, o_proj, attn_ln, the GLU's
 * up_gate_proj (2I, H) without bias, down_proj and mlp_ln. */
static enum bert_status bind_gte_encoder(struct binder *b, const struct bert_config *c,
                                         struct bert_weights *w)
{
    const size_t H = c->hidden_size, I = c->intermediate_size;
    /* BERT's embeddings without positions (GTE has no such name). */
    enum bert_status st = bind_embeddings(b, c, w);
    if (st != BERT_OK)
        return st;
    for (size_t i = 0; i < c->num_layers; i++) {
        struct bert_layer_weights *l = &w->layers[i];
        l->ffn_in_b = w->zeros;
        if ((st = need(b, c, BERT_TENSOR_LAYER_QUERY_W, i, &l->query.w, 2, 3 * H, H)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_QUERY_B, i, &l->query_b, 1, 3 * H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_OUT_W, i, &l->attn_out.w, 2, H, H)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_OUT_B, i, &l->attn_out_b, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_LN_G, i, &l->attn_ln_g, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_ATTN_LN_B, i, &l->attn_ln_b, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_IN_W, i, &l->ffn_in.w, 2, 2 * I, H)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_OUT_W, i, &l->ffn_out.w, 2, H, I)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_OUT_B, i, &l->ffn_out_b, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_LN_G, i, &l->ffn_ln_g, 1, H, 0)) ||
            (st = need(b, c, BERT_TENSOR_LAYER_FFN_LN_B, i, &l->ffn_ln_b, 1, H, 0)))
            return st;
    }
    return BERT_OK;
}

/* NomicBertForPreTraining's cls.predictions: the transform's dense (bias
 * with mlp_fc1_bias), activation and layer_norm, and the decoder (tied to
 * the word embeddings unless stored; bias with mlp_fc1_bias). */
static enum bert_status bind_nomic_mlm(struct binder *b, const struct bert_config *c,
                                       struct bert_weights *w)
{
    const size_t H = c->hidden_size, V = c->vocab_size;
    const bool bias = c->nomic.fc1_bias;
    enum bert_status st;
    if ((st = need(b, c, BERT_TENSOR_MLM_DENSE_W, 0, &w->mlm_dense_w, 2, H, H)) ||
        (st = maybe(b, c, bias, BERT_TENSOR_MLM_DENSE_B, 0, &w->mlm_dense_b, H, w->zeros)) ||
        (st = need(b, c, BERT_TENSOR_MLM_LN_G, 0, &w->mlm_ln_g, 1, H, 0)) ||
        (st = need(b, c, BERT_TENSOR_MLM_LN_B, 0, &w->mlm_ln_b, 1, H, 0)) ||
        (st = maybe(b, c, bias, BERT_TENSOR_MLM_DECODER_B, 0, &w->mlm_decoder_b, V, w->zeros)))
        return st;
    return has(b, c, BERT_TENSOR_MLM_DECODER_W)
               ? need(b, c, BERT_TENSOR_MLM_DECODER_W, 0, &w->mlm_decoder_w, 2, V, H)
               : BERT_OK;
}

/* DebertaV2Encoder's rel_embeddings and the LayerNorm norm_rel_ebd puts
 * on them. */
static enum bert_status bind_deberta_relative(struct binder *b, const struct bert_config *c,
                                              struct bert_weights *w)
{
    const size_t H = c->hidden_size;
    enum bert_status st;
    if ((st = need(b, c, BERT_TENSOR_REL_EMB, 0, &w->rel_emb, 2, 2 * c->deberta.att_span, H)) ||
        !c->deberta.rel_layer_norm)
        return st;
    if ((st = need(b, c, BERT_TENSOR_REL_LN_G, 0, &w->rel_ln_g, 1, H, 0)))
        return st;
    return need(b, c, BERT_TENSOR_REL_LN_B, 0, &w->rel_ln_b, 1, H, 0);
}

static enum bert_status bind_all(struct binder *b, const struct bert_config *c,
                                 struct bert_weights *w)
{
    const size_t H = c->hidden_size;
    enum bert_status st;
    if (c->family == BERT_FAMILY_MODERNBERT) {
        st = bind_modernbert(b, c, w);
    } else if (c->family == BERT_FAMILY_NOMIC_BERT) {
        st = bind_nomic_encoder(b, c, w);
    } else if (c->family == BERT_FAMILY_GTE) {
        st = bind_gte_encoder(b, c, w);
    } else {
        st = bind_embeddings(b, c, w);
        for (size_t i = 0; i < c->num_layers && st == BERT_OK; i++)
            st = bind_layer(b, c, i, &w->layers[i], w->zeros);
        if (st == BERT_OK && c->family == BERT_FAMILY_MPNET)
            st = need(b, c, BERT_TENSOR_REL_ATTN_BIAS, 0, &w->rel_attn_bias, 2,
                      c->relative_buckets, c->num_heads);
        if (st == BERT_OK && c->family == BERT_FAMILY_DEBERTA_V2)
            st = bind_deberta_relative(b, c, w);
    }
    if (st != BERT_OK)
        return st;
    char extra[256];
    bert_tensor_name(c->family, BERT_TENSOR_LAYER_FFN_OUT_W, c->num_layers, b->prefixed, extra,
                     sizeof extra);
    if (safetensors_find(b->file, extra) != NULL)
        return bert_error_set(b->err, BERT_E_FORMAT,
                              "%s: has tensors for more than the %zu layers config.json declares "
                              "(found '%s')",
                              b->file->path, c->num_layers, extra);
    if (c->family == BERT_FAMILY_MODERNBERT)
        return BERT_OK;
    if (c->token_head != BERT_TOKEN_HEAD_NONE)
        return bind_token_head(b, c, w);

    if (has(b, c, BERT_TENSOR_POOLER_W) &&
        ((st = need(b, c, BERT_TENSOR_POOLER_W, 0, &w->pooler_w, 2, H, H)) ||
         (st = need(b, c, BERT_TENSOR_POOLER_B, 0, &w->pooler_b, 1, H, 0))))
        return st;
    if (has(b, c, BERT_TENSOR_MLM_DENSE_W) &&
        (st = c->family == BERT_FAMILY_NOMIC_BERT ? bind_nomic_mlm(b, c, w)
                                                  : bind_mlm(b, c, w)) != BERT_OK)
        return st;
    if (has(b, c, BERT_TENSOR_DISC_DENSE_W) &&
        ((st = need(b, c, BERT_TENSOR_DISC_DENSE_W, 0, &w->disc_dense_w, 2, H, H)) ||
         (st = need(b, c, BERT_TENSOR_DISC_DENSE_B, 0, &w->disc_dense_b, 1, H, 0)) ||
         (st = need(b, c, BERT_TENSOR_DISC_PRED_W, 0, &w->disc_pred_w, 2, 1, H)) ||
         (st = need(b, c, BERT_TENSOR_DISC_PRED_B, 0, &w->disc_pred_b, 1, 1, 0))))
        return st;
    if (has(b, c, BERT_TENSOR_CLASSIFIER_W)) {
        /* Pointers are only set by materialise(), so ask the file. */
        if (!has(b, c, BERT_TENSOR_POOLER_W)) {
            char cls[256], pool[256];
            bert_tensor_name(c->family, BERT_TENSOR_CLASSIFIER_W, 0, b->prefixed, cls,
                             sizeof cls);
            bert_tensor_name(c->family, BERT_TENSOR_POOLER_W, 0, b->prefixed, pool,
                             sizeof pool);
            return bert_error_set(b->err, BERT_E_FORMAT,
                                  "%s: has '%s' but no '%s' (the classification head needs "
                                  "both)",
                                  b->file->path, cls, pool);
        }
        if ((st = need(b, c, BERT_TENSOR_CLASSIFIER_W, 0, &w->classifier_w, 2, c->num_labels,
                       H)) ||
            (st = need(b, c, BERT_TENSOR_CLASSIFIER_B, 0, &w->classifier_b, 1, c->num_labels,
                       0)))
            return st;
    }
    return BERT_OK;
}

/* Index of the first NaN or infinity among v[0, n), or n. One pass over
 * memory the load touches anyway; the exponent test vectorises where
 * isfinite() would not. */
static size_t first_non_finite(const float *v, size_t n)
{
    const size_t block = 4096;
    for (size_t i0 = 0; i0 < n; i0 += block) {
        const size_t i1 = n - i0 < block ? n : i0 + block;
        uint32_t any = 0;
        for (size_t i = i0; i < i1; i++) {
            uint32_t bits;
            memcpy(&bits, &v[i], sizeof bits);
            any |= (bits & 0x7f800000u) == 0x7f800000u;
        }
        if (any)
            for (size_t i = i0; i < i1; i++)
                if (!isfinite(v[i]))
                    return i;
    }
    return n;
}

/* A NaN or infinity in a weight poisons every answer it reaches, and the
 * clamps inside tanh and GELU can turn it back into confident finite
 * nonsense: refuse the checkpoint, naming the tensor and the element. */
static enum bert_status check_finite(const struct binder *b, const struct safetensors_tensor *t,
                                     const float *v)
{
    const size_t n = t->nbytes / bert_dtype_size(t->dtype);
    const size_t i = first_non_finite(v, n);
    if (i == n)
        return BERT_OK;
    const size_t cols = t->ndim == 2 ? t->shape[1] : n;
    char where[64];
    if (t->ndim == 2)
        snprintf(where, sizeof where, "[%zu, %zu]", i / cols, i % cols);
    else
        snprintf(where, sizeof where, "[%zu]", i);
    return bert_error_set(b->err, BERT_E_FORMAT, "%s: tensor '%s' holds %s at %s",
                          b->file->path ? b->file->path : "model.safetensors", t->name,
                          isnan(v[i]) ? "NaN" : v[i] > 0 ? "+Inf" : "-Inf", where);
}

/* Second pass: point F32 tensors into the mapping, convert the rest into
 * the arena; either way check that every value is finite. */
static enum bert_status materialise(struct binder *b, struct bert_weights *w)
{
    float *next = w->arena;
    for (size_t i = 0; i < b->n; i++) {
        const struct binding *bd = &b->list[i];
        const struct safetensors_tensor *t = bd->tensor;
        if (!bd->convert) {
            *bd->dst = t->data;
        } else {
            size_t count = t->nbytes / bert_dtype_size(t->dtype);
            const uint8_t *src = t->data;
            for (size_t k = 0; k < count; k++) {
                if (t->dtype == BERT_DTYPE_F32) {
                    memcpy(&next[k], src + 4 * k, 4);
                } else {
                    uint16_t h;
                    memcpy(&h, src + 2 * k, 2);
                    next[k] = t->dtype == BERT_DTYPE_F16 ? bert_f16_to_f32(h)
                                                         : bert_bf16_to_f32(h);
                }
            }
            *bd->dst = next;
            next += count;
        }
        enum bert_status st = check_finite(b, t, *bd->dst);
        if (st != BERT_OK)
            return st;
    }
    return BERT_OK;
}

enum bert_token_head bert_weights_token_head(const struct bert_config *cfg,
                                             const struct safetensors_file *file)
{
    const enum bert_token_head listed = cfg->listed_token_head;
    if (cfg->token_head != BERT_TOKEN_HEAD_NONE || listed == BERT_TOKEN_HEAD_NONE)
        return cfg->token_head;
    const struct binder b = {.file = file};
    char name[256];
    const enum bert_tensor head = listed == BERT_TOKEN_HEAD_QUESTION_ANSWERING
                                      ? BERT_TENSOR_QA_W
                                      : BERT_TENSOR_TOKEN_CLS_W;
    const bool pooler =
        find_tensor(&b, cfg->family, true, BERT_TENSOR_POOLER_W, 0, name, sizeof name) ||
        find_tensor(&b, cfg->family, false, BERT_TENSOR_POOLER_W, 0, name, sizeof name);
    return !pooler && find_tensor(&b, cfg->family, false, head, 0, name, sizeof name)
               ? listed
               : BERT_TOKEN_HEAD_NONE;
}

enum bert_status bert_weights_bind(const struct bert_config *cfg,
                                   const struct safetensors_file *file,
                                   struct bert_weights *w, struct bert_error *err)
{
    memset(w, 0, sizeof *w);
    struct binder b = {.file = file, .err = err};
    char word[256];
    bert_tensor_name(cfg->family, BERT_TENSOR_WORD_EMB, 0, true, word, sizeof word);
    w->prefixed = b.prefixed = safetensors_find(file, word) != NULL;
    w->layers = calloc(cfg->num_layers, sizeof *w->layers);
    w->n_layers = w->layers ? cfg->num_layers : 0;
    /* Long enough for any bias: 3H (Wqkv), 2I (Wi), V (decoder). */
    size_t longest = 3 * cfg->hidden_size;
    longest = 2 * cfg->intermediate_size > longest ? 2 * cfg->intermediate_size : longest;
    longest = cfg->vocab_size > longest ? cfg->vocab_size : longest;
    const bool optional_biases = cfg->family == BERT_FAMILY_MODERNBERT ||
                                 cfg->family == BERT_FAMILY_NOMIC_BERT ||
                                 cfg->family == BERT_FAMILY_JINA_BERT ||
                                 cfg->family == BERT_FAMILY_GTE;
    if (optional_biases)
        w->zeros = calloc(longest, sizeof *w->zeros);
    if (w->layers == NULL || (optional_biases && w->zeros == NULL)) {
        bert_weights_free(w);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    enum bert_status st = bind_all(&b, cfg, w);
    if (st == BERT_OK && b.arena_floats > 0) {
        w->arena = malloc(b.arena_floats * sizeof(float));
        if (w->arena == NULL)
            st = bert_error_set(err, BERT_E_NOMEM,
                                "out of memory converting %zu weights to float32",
                                b.arena_floats);
        w->arena_floats = b.arena_floats;
    }
    if (st == BERT_OK)
        st = materialise(&b, w);
    if (st == BERT_OK) {
        if (cfg->family == BERT_FAMILY_MODERNBERT && w->mlm_decoder_b != NULL) {
            /* The MLM decoder reads the same head as the classifier. */
            w->mlm_dense_w = w->pooler_w;
            w->mlm_dense_b = w->pooler_b;
            w->mlm_ln_g = w->pooler_ln_g;
            w->mlm_ln_b = w->pooler_ln_b;
        }
        if (w->mlm_dense_w != NULL && w->mlm_decoder_w == NULL)
            w->mlm_decoder_w = w->word_emb;
    }
    free(b.list);
    if (st != BERT_OK)
        bert_weights_free(w);
    return st;
}

/* Every dense layer the encoder runs, with its shape. */
struct dense_ref {
    struct bert_dense *d;
    size_t out, in;
    struct bert_layer_weights *qkv_of; /* Q, K or V of this layer, packed stacked */
};

/* Lists them into `refs` (room for 1 + 7 per layer); returns how many. */
static size_t dense_layers(struct bert_weights *w, const struct bert_config *c,
                           struct dense_ref *refs)
{
    const size_t H = c->hidden_size, I = c->intermediate_size, E = c->embedding_size;
    /* ModernBERT fuses Q, K and V into one (3H, H) and its GeGLU input is
     * (2I, H); it has no key and value weights of its own. */
    const bool modern = c->family == BERT_FAMILY_MODERNBERT;
    const bool fused_qkv =
        modern || c->family == BERT_FAMILY_NOMIC_BERT || c->family == BERT_FAMILY_GTE;
    /* ModernBERT's, JinaBERT's and GTE's gated feed-forward input is one
     * (2I, H); NomicBERT's is two (I, H), the second in ffn_gate. */
    const bool gated_in =
        modern || c->family == BERT_FAMILY_JINA_BERT || c->family == BERT_FAMILY_GTE;
    size_t n = 0;
    refs[n++] = (struct dense_ref){&w->emb_proj, H, E, NULL};
    for (size_t i = 0; i < w->n_layers; i++) {
        struct bert_layer_weights *l = &w->layers[i];
        struct bert_layer_weights *qkv_of = fused_qkv ? NULL : l;
        refs[n++] = (struct dense_ref){&l->query, fused_qkv ? 3 * H : H, H, qkv_of};
        refs[n++] = (struct dense_ref){&l->key, H, H, qkv_of};
        refs[n++] = (struct dense_ref){&l->value, H, H, qkv_of};
        refs[n++] = (struct dense_ref){&l->attn_out, H, H, NULL};
        refs[n++] = (struct dense_ref){&l->ffn_in, gated_in ? 2 * I : I, H, NULL};
        refs[n++] = (struct dense_ref){&l->ffn_gate, I, H, NULL};
        refs[n++] = (struct dense_ref){&l->ffn_out, H, I, NULL};
    }
    return n;
}

/* Tell the kernel this process no longer needs the pages wholly inside
 * [p, p + bytes) of a read-only file mapping: they leave its resident set
 * and are read again from the file should anything touch them. */
static bool in_mapping(const struct safetensors_file *file, const void *p, size_t bytes)
{
    const uintptr_t map = (uintptr_t)file->map, start = (uintptr_t)p;
    return file->map != NULL && start >= map && start + bytes <= map + file->map_len;
}

static bool release_mapped(const struct safetensors_file *file, const void *p, size_t bytes)
{
    const uintptr_t start = (uintptr_t)p;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!in_mapping(file, p, bytes))
        return false;
    const uintptr_t first = (start + page - 1) & ~(page - 1), end = (start + bytes) & ~(page - 1);
    return end <= first || madvise((void *)first, end - first, MADV_DONTNEED) == 0;
}

/* Whether the f32 kernel takes this weight: only where its original can
 * leave the resident set (it lies in the file's mapping); an arena-held
 * (converted) weight stays on OpenBLAS rather than be held twice. */
static bool f32_packable(const struct dense_ref *r, const struct safetensors_file *file)
{
    return r->d->w != NULL && r->d->f32 == NULL && file != NULL &&
           in_mapping(file, r->d->w, r->out * r->in * sizeof(float));
}

/* The f32 kernel's copies, in one arena (w->f32_arena), each replacing its
 * mapped original in the resident set. */
static void pack_f32(struct bert_weights *w, const struct dense_ref *refs, size_t n,
                     const struct safetensors_file *file, struct bert_pack_counts *counts)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += f32_packable(&refs[i], file) ? linear_f32_floats(refs[i].out, refs[i].in) : 0;
    if (w->f32_arena != NULL || total == 0 || !linear_f32_available() ||
        (w->f32_arena = linear_f32_alloc(total)) == NULL)
        return;
    float *next = w->f32_arena;
    for (size_t i = 0; i < n; i++) {
        struct bert_dense *d = refs[i].d;
        const size_t bytes = refs[i].out * refs[i].in * sizeof(float);
        if (!f32_packable(&refs[i], file) ||
            (d->f32 = linear_f32_pack(d->w, refs[i].out, refs[i].in, next)) == NULL)
            continue;
        next += linear_f32_floats(refs[i].out, refs[i].in);
        counts->packed_bytes += linear_f32_floats(refs[i].out, refs[i].in) * sizeof(float);
        if (release_mapped(file, d->w, bytes))
            counts->released_bytes += bytes;
    }
}

/* Drop the f32 kernel's copies (their mapped originals come back from the
 * file as products read them). */
static void drop_f32(struct bert_weights *w, const struct dense_ref *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        linear_f32_weight_free(refs[i].d->f32);
        refs[i].d->f32 = NULL;
    }
    free(w->f32_arena);
    w->f32_arena = NULL;
}

/* Layer l's Q, K and V weights stacked in one bf16 or int8 weight
 * (l->qkv), their biases side by side (l->qkv_b): one conversion of the
 * layer's input and one product, into a dense output, instead of three
 * strided ones. False when any is missing or it cannot be packed. */
static bool pack_stacked_qkv(struct bert_layer_weights *l, size_t H, enum bert_pack_kind kind)
{
    struct bert_dense *d = &l->qkv;
    if (kind == BERT_PACK_BF16 ? d->bf16 != NULL : d->int8 != NULL)
        return true;
    const float *parts[3] = {l->query.w, l->key.w, l->value.w};
    const float *bias[3] = {l->query_b, l->key_b, l->value_b};
    if (parts[0] == NULL || parts[1] == NULL || parts[2] == NULL)
        return false;
    if (l->qkv_b == NULL) {
        if ((l->qkv_b = malloc(3 * H * sizeof *l->qkv_b)) == NULL)
            return false;
        for (size_t k = 0; k < 3; k++) {
            if (bias[k] != NULL)
                memcpy(l->qkv_b + k * H, bias[k], H * sizeof *l->qkv_b);
            else
                memset(l->qkv_b + k * H, 0, H * sizeof *l->qkv_b);
        }
    }
    if (kind == BERT_PACK_BF16)
        d->bf16 = linear_bf16_pack_stacked(parts, 3, H, H);
    else
        d->int8 = linear_int8_pack_stacked(parts, 3, H, H);
    return kind == BERT_PACK_BF16 ? d->bf16 != NULL : d->int8 != NULL;
}

struct bert_pack_counts bert_weights_pack(struct bert_weights *w, const struct bert_config *c,
                                          enum bert_pack_kind kind,
                                          const struct safetensors_file *file)
{
    struct dense_ref *refs = malloc((1 + 7 * w->n_layers) * sizeof *refs);
    struct bert_pack_counts counts = {0};
    if (refs == NULL)
        return counts;
    const size_t n = dense_layers(w, c, refs);
    if (kind == BERT_PACK_F32)
        pack_f32(w, refs, n, file, &counts);
    else /* bf16 and int8 products replace the f32 kernel's */
        drop_f32(w, refs, n);
    for (size_t i = 0; i < n; i++) {
        struct bert_dense *d = refs[i].d;
        if (d->w == NULL)
            continue;
        counts.dense++;
        if (kind == BERT_PACK_F32) {
            counts.packed += d->f32 != NULL;
            continue;
        }
        const bool stacked =
            refs[i].qkv_of != NULL && pack_stacked_qkv(refs[i].qkv_of, refs[i].in, kind);
        if (kind == BERT_PACK_BF16 && !stacked && d->bf16 == NULL)
            d->bf16 = linear_bf16_pack(d->w, refs[i].out, refs[i].in);
        if (kind == BERT_PACK_INT8 &&
            (stacked || (d->int8 == NULL &&
                         (d->int8 = linear_int8_pack(d->w, refs[i].out, refs[i].in)) != NULL))) {
            const size_t bytes = refs[i].out * refs[i].in * sizeof(float);
            if (file != NULL && release_mapped(file, d->w, bytes))
                counts.released_bytes += bytes;
        }
        counts.packed += stacked || (kind == BERT_PACK_BF16 ? d->bf16 != NULL : d->int8 != NULL);
        const struct linear_int8_weight *q =
            kind != BERT_PACK_INT8 ? NULL : stacked ? refs[i].qkv_of->qkv.int8 : d->int8;
        if (q != NULL && linear_int8_weight_min_rows(q) > counts.pad_rows)
            counts.pad_rows = linear_int8_weight_min_rows(q);
    }
    free(refs);
    return counts;
}

void bert_weights_free(struct bert_weights *w)
{
    linear_f32_weight_free(w->emb_proj.f32);
    linear_bf16_weight_free(w->emb_proj.bf16);
    linear_int8_weight_free(w->emb_proj.int8);
    for (size_t i = 0; i < w->n_layers; i++) {
        struct bert_dense *d[] = {&w->layers[i].query,    &w->layers[i].key,
                                  &w->layers[i].value,    &w->layers[i].attn_out,
                                  &w->layers[i].ffn_in,   &w->layers[i].ffn_out,
                                  &w->layers[i].ffn_gate};
        for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) {
            linear_f32_weight_free(d[k]->f32);
            linear_bf16_weight_free(d[k]->bf16);
            linear_int8_weight_free(d[k]->int8);
        }
        linear_bf16_weight_free(w->layers[i].qkv.bf16);
        linear_int8_weight_free(w->layers[i].qkv.int8);
        free(w->layers[i].qkv_b);
    }
    free(w->layers);
    free(w->f32_arena);
    free(w->arena);
    free(w->zeros);
    memset(w, 0, sizeof *w);
}

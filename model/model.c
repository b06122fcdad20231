/* bert_model_load and bert_model_free: config, tokenizer, the mapped
 * weights and the tables the families need, each checked as it loads. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "config.h"
#include "engine.h"
#include "family/family.h"
#include "rope.h"

/* The checkpoint's own limit: position embeddings (those from
 * position_offset on: RoBERTa's 514 give 512), narrowed by
 * sentence-transformers' max_seq_length when the folder sets one. */
static size_t model_max_input_tokens(const struct bert_config *c)
{
    size_t limit = c->max_position_embeddings - c->position_offset;
    if (c->st_max_seq_length > 0 && c->st_max_seq_length < limit)
        limit = c->st_max_seq_length;
    return limit;
}

enum bert_status bert_model_load(const char *dir, struct bert_model **out,
                                 struct bert_error *err)
{
    *out = NULL;
    struct bert_model *m = calloc(1, sizeof *m);
    struct bert_engine *e = calloc(1, sizeof *e);
    if (m == NULL || e == NULL || (m->dir = strdup(dir)) == NULL) {
        free(m);
        free(e);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    m->engine = e;
    e->file.fd = -1;
    enum bert_status st = bert_config_load(dir, &m->config, err);
    if (st == BERT_OK)
        st = bert_tokenizer_load(dir, &m->tokenizer, err);
    if (st == BERT_OK)
        st = safetensors_open_folder(dir, &e->file, err);
    if (st == BERT_OK) {
        m->config.token_head = bert_weights_token_head(&m->config, &e->file);
        st = bert_weights_bind(&m->config, &e->file, &e->weights, err);
    }
    if (st == BERT_OK && bert_tokenizer_vocab_size(m->tokenizer) > m->config.vocab_size)
        st = bert_error_set(err, BERT_E_FORMAT,
                            "%s: the tokenizer has %zu tokens but config.json's vocab_size is %zu",
                            dir, bert_tokenizer_vocab_size(m->tokenizer), m->config.vocab_size);
    if (st != BERT_OK) {
        bert_model_free(m);
        return st;
    }
    m->max_input_tokens = model_max_input_tokens(&m->config);
    m->embed_dims = m->config.hidden_size;
    for (size_t k = 0; k < m->config.n_st_dense; k++) {
        st = st_dense_load(dir, m->config.st_dense[k], m->embed_dims, &e->dense[k], err);
        if (st != BERT_OK) {
            bert_model_free(m);
            return st;
        }
        e->n_dense = k + 1;
        m->embed_dims = e->dense[k].out;
    }
    e->emit_vocab = bert_tokenizer_vocab_size(m->tokenizer);
    if (m->config.family == BERT_FAMILY_MODERNBERT) {
        const struct bert_config *c = &m->config;
        const size_t D = c->hidden_size / c->num_heads;
        e->rope_global = rope_table_new(m->max_input_tokens, D, c->modern.global_rope_theta);
        e->rope_local = rope_table_new(m->max_input_tokens, D, c->modern.local_rope_theta);
        if (e->rope_global == NULL || e->rope_local == NULL) {
            bert_model_free(m);
            return bert_error_set(err, BERT_E_NOMEM, "out of memory for the RoPE tables");
        }
    }
    if (m->config.family == BERT_FAMILY_NOMIC_BERT || m->config.family == BERT_FAMILY_GTE) {
        const struct bert_config *c = &m->config;
        const size_t D = c->hidden_size / c->num_heads;
        e->rope_global = c->family == BERT_FAMILY_GTE
                             ? rope_table_ntk_new(m->max_input_tokens, D, c->gte.rope_theta,
                                                  c->gte.ntk_factor)
                             : rope_table_new(m->max_input_tokens, D, c->nomic.rotary_base);
        if (e->rope_global == NULL) {
            bert_model_free(m);
            return bert_error_set(err, BERT_E_NOMEM, "out of memory for the RoPE table");
        }
    }
    if (m->config.family == BERT_FAMILY_MPNET || m->config.family == BERT_FAMILY_JINA_BERT) {
        const struct bert_config *c = &m->config;
        e->rel_positions = c->max_position_embeddings - c->position_offset;
        e->rel_bias = c->family == BERT_FAMILY_MPNET
                          ? family_mpnet_rel_bias_new(c, e->weights.rel_attn_bias,
                                                      e->rel_positions)
                          : family_jina_alibi_new(c, e->rel_positions);
        if (e->rel_bias == NULL) {
            bert_model_free(m);
            return bert_error_set(err, BERT_E_NOMEM,
                                  "out of memory for the relative position bias");
        }
    }
    if (m->config.family == BERT_FAMILY_DEBERTA_V2) {
        const struct bert_config *c = &m->config;
        e->deberta = family_deberta_new(c, &e->weights, c->max_position_embeddings);
        if (e->deberta == NULL) {
            bert_model_free(m);
            return bert_error_set(err, BERT_E_NOMEM,
                                  "out of memory for the relative position tables");
        }
    }
    m->can_fill_mask = e->weights.mlm_dense_w != NULL && bert_tokenizer_mask_id(m->tokenizer) >= 0;
    m->can_classify = e->weights.classifier_w != NULL;
    m->can_detect_replaced = e->weights.disc_dense_w != NULL;
    m->can_classify_tokens = e->weights.token_w != NULL &&
                             m->config.token_head == BERT_TOKEN_HEAD_CLASSIFICATION;
    m->can_answer_questions = e->weights.token_w != NULL &&
                              m->config.token_head == BERT_TOKEN_HEAD_QUESTION_ANSWERING;
    struct bert_pack_counts n =
        bert_weights_pack(&e->weights, &m->config, BERT_PACK_F32, &e->file);
    m->f32_packing = (struct bert_f32_packing){n.dense, n.packed, n.packed_bytes, n.released_bytes};
    *out = m;
    return BERT_OK;
}

enum bert_status bert_model_use_bf16(struct bert_model *m, struct bert_error *err)
{
    if (m->bf16)
        return BERT_OK;
    char why[200];
    if (m->int8)
        return bert_error_set(err, BERT_E_INVALID, "the model already runs int8");
    if (!bert_bf16_available(why, sizeof why))
        return bert_error_set(err, BERT_E_UNSUPPORTED, "bf16 is not available: %s", why);
    bert_weights_pack(&m->engine->weights, &m->config, BERT_PACK_BF16, NULL);
    m->f32_packing = (struct bert_f32_packing){0};
    m->bf16 = true;
    return BERT_OK;
}

enum bert_status bert_model_use_int8(struct bert_model *m, struct bert_int8_info *info,
                                     struct bert_error *err)
{
    char why[200];
    if (m->bf16)
        return bert_error_set(err, BERT_E_INVALID, "the model already runs bf16");
    if (!bert_int8_available(why, sizeof why))
        return bert_error_set(err, BERT_E_UNSUPPORTED, "int8 is not available: %s", why);
    struct bert_pack_counts n =
        bert_weights_pack(&m->engine->weights, &m->config, BERT_PACK_INT8, &m->engine->file);
    m->f32_packing = (struct bert_f32_packing){0};
    if (n.packed == 0)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "int8 is not available: oneDNN packed none of the %zu dense layers",
                              n.dense);
    m->int8 = true;
    if (info != NULL)
        *info = (struct bert_int8_info){bert_int8_isa(), n.dense, n.packed, n.released_bytes,
                                        n.pad_rows};
    return BERT_OK;
}

void bert_model_free(struct bert_model *m)
{
    if (m == NULL)
        return;
    struct bert_engine *e = m->engine;
    if (e != NULL) {
        bert_weights_free(&e->weights);
        free(e->rope_global);
        free(e->rope_local);
        free(e->rel_bias);
        family_deberta_free(e->deberta);
        for (size_t k = 0; k < e->n_dense; k++)
            st_dense_free(&e->dense[k]);
        safetensors_close(&e->file);
        free(e);
    }
    bert_tokenizer_free(m->tokenizer);
    bert_config_free(&m->config);
    free(m->dir);
    free(m);
}

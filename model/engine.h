/* What a loaded model's forward pass reads besides its config: the mapped
 * checkpoint, the weights bound to it, the RoPE and bias tables and the
 * sentence-transformers Dense modules. Behind
 * struct bert_model's `engine` pointer, so nothing outside the engine (the
 * trainer aside, which copies weights out of a loaded checkpoint) depends
 * on the layout. Read-only once bert_model_load returns. */
#ifndef BERT_ENGINE_H
#define BERT_ENGINE_H

#include "bert.h"
#include "safetensors.h"
#include "st_dense.h"
#include "weights.h"

struct bert_engine {
    struct safetensors_file file;
    struct bert_weights weights;
    /* RoPE tables (rope.h) for positions < max_input_tokens: ModernBERT's
     * global and local theta, NomicBERT's rotary_emb_base in rope_global;
     * NULL for the families without rotary positions. */
    float *rope_global, *rope_local;
    /* A relative position bias added to every attention score, per head,
     * indexed by key - query (MPNet's buckets, JinaBERT's ALiBi:
     * family_mpnet_rel_bias_new, family_jina_alibi_new); NULL when the
     * family has none. Distances up to rel_positions - 1 either way. */
    float *rel_bias;
    size_t rel_positions;
    /* DeBERTa-v2's disentangled attention tables (family_deberta_new); NULL
     * for the other families. */
    struct family_deberta *deberta;
    /* Ids the MLM head may answer: the tokenizer's vocabulary; embedding
     * rows past it are padding. */
    size_t emit_vocab;
    /* sentence-transformers' Dense modules after pooling (st_dense.h), in
     * order; n_dense 0 for most checkpoints. */
    struct st_dense dense[BERT_MAX_ST_DENSE];
    size_t n_dense;
};

#endif

/* A loaded checkpoint: config, tokenizer and weights. Read-only after
 * bert_model_load returns, so any number of threads may run it at once
 * (each with its own bert_scratch). */
#ifndef BERT_MODEL_H
#define BERT_MODEL_H

#include <stdbool.h>

#include "config.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "weights.h"

struct bert_model {
    char *dir;
    struct bert_config config;
    struct bert_tokenizer *tokenizer;
    struct safetensors_file file;
    struct bert_weights weights;
    size_t max_input_tokens;  /* longest sequence the model accepts, specials included */
    bool can_fill_mask;       /* MLM head present and the tokenizer has a mask token */
    bool can_classify;        /* classifier head present */
    bool can_detect_replaced; /* ELECTRA discriminator head present */
    bool bf16;                /* dense layers run in bf16 (bert_model_use_bf16) */
    /* ModernBERT's RoPE tables (rope.h) for positions < max_input_tokens,
     * global and local theta; NULL for the other families. */
    float *rope_global, *rope_local;
};

/* Load the checkpoint folder `dir` (config.json, model.safetensors,
 * tokenizer.json or vocab.txt, sentence-transformers files). Every failure
 * names the file and the problem. */
enum bert_status bert_model_load(const char *dir, struct bert_model **out,
                                 struct bert_error *err);

/* Run the dense layers in bf16 (weights converted once, on first use, to
 * oneDNN's AMX layout; f32 accumulation; everything else f32). Fails with
 * BERT_E_UNSUPPORTED, saying why, when this build has no oneDNN or the CPU
 * lacks AMX and AVX512_BF16; the model then keeps running in f32. Call
 * before the model serves requests. */
enum bert_status bert_model_use_bf16(struct bert_model *model, struct bert_error *err);

/* NULL is a no-op. */
void bert_model_free(struct bert_model *model);

#endif

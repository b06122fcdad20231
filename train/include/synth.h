/* Deterministic synthetic checkpoints: random weights from a counter-based
 * generator, written in the Hugging Face layout. The tests' PyTorch
 * reference (tests/golden/synth.py) implements the same generator, so both
 * sides build bit-identical weights without committing large files; `bert
 * init` exposes it to users who want a fresh, untrained model.
 *
 * Generator: for tensor `name` (full name as written) and element i,
 *   z = splitmix64_mix((seed ^ fnv1a64(name)) + (i + 1) * 0x9E3779B97F4A7C15)
 *   u = (z >> 11) * 2^-53                      (uniform in [0, 1))
 *   value = (float)(center + (2u - 1) * range)  (double arithmetic, then rounded)
 * with center/range per parameter kind: weights and embeddings 0 and
 * weight_std * sqrt(3) (uniform with that std); biases 0 and bias_range;
 * LayerNorm gammas 1 and ln_range; LayerNorm betas 0 and ln_range. */
#ifndef BERT_SYNTH_H
#define BERT_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "bert.h"

struct bert_synth_options {
    struct bert_config config; /* geometry, labels, activation, eps; vocab_size 0: tokenizer's;
                                  model_type ("" is "bert") picks the family and its tensor
                                  names; embedding_size 0: hidden_size (ELECTRA only) */
    uint64_t seed;
    double weight_std;
    double bias_range;
    double ln_range;
    bool prefix;               /* the family's encoder prefix ("bert.", "roberta.", ...) */
    bool mlm;                  /* cls.predictions.* */
    bool untied_decoder;       /* write an independent cls.predictions.decoder.weight */
    bool pooler;
    bool classifier;           /* implies pooler */
    bool discriminator;        /* ELECTRA: discriminator_predictions (ElectraForPreTraining) */
    bool token_classification; /* *ForTokenClassification: classifier on every token (labels) */
    bool question_answering;   /* *ForQuestionAnswering: qa_outputs (start, end) */
    enum bert_dtype dtype;     /* F32, F16 or BF16 */
    const char *tokenizer_dir; /* tokenizer files are copied from here */
    bool sentence_transformers; /* write modules.json, 1_Pooling, sentence_bert_config.json */
    bool st_normalize;         /* add a 2_Normalize module */
    size_t st_max_seq_length;  /* 0: omit */
    const char *config_file;   /* a real checkpoint's config.json: its family and geometry
                                  replace `config`'s, and it is written unchanged */
};

/* Defaults: seed 0, weight_std 0.02, bias_range 0, ln_range 0, F32. */
struct bert_synth_options bert_synth_options_default(void);

/* The generator's value for element i of tensor `name`; exposed for tests. */
float bert_synth_value(uint64_t seed, const char *name, uint64_t i, double center, double range);

/* Write a complete checkpoint folder `dir` (created if missing). With
 * config_file, the weights have the shapes that file's config implies (the
 * head options still choose the heads) and the folder keeps the file as its
 * config.json; a file bertserve cannot load fails here with its message. */
enum bert_status bert_synth_write(const struct bert_synth_options *opts, const char *dir,
                                  struct bert_error *err);

/* Copy the tokenizer files a checkpoint folder carries (tokenizer.json,
 * vocab.txt, tokenizer_config.json, special_tokens_map.json) from `from` to
 * `dir`; at least tokenizer.json or vocab.txt must exist. */
enum bert_status bert_copy_tokenizer_files(const char *from, const char *dir,
                                          struct bert_error *err);

#endif

/* BERT's masked-LM input corruption (Devlin et al. 2018, sec. 3.1 and
 * appendix A.1): each non-special token is picked with probability
 * mask_prob; a picked token becomes [MASK] with probability 0.8, a token
 * drawn uniformly from the whole vocabulary with 0.1, and stays as it is
 * with 0.1. Labels hold the original id at picked positions and -100
 * elsewhere (the ignore_index of torch.nn.CrossEntropyLoss). With whole-word
 * masking a word's WordPiece pieces ("##" continuations) are picked together
 * or not at all; each picked piece still draws its own 80/10/10 outcome, as
 * Google's create_pretraining_data.py does.
 *
 * No allocation on the masking path; no globals; deterministic for a seed. */
#ifndef BERT_TRAIN_MASK_H
#define BERT_TRAIN_MASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tokenizer.h"

#define TRAIN_LABEL_IGNORE (-100)

/* splitmix64 (Steele et al. 2014): tiny, seedable, good enough for masking,
 * sampling and shuffling, and its whole state is one word to checkpoint. */
struct train_rng {
    uint64_t state;
};

uint64_t train_rng_next(struct train_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double train_rng_uniform(struct train_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t train_rng_below(struct train_rng *r, uint64_t n);

/* A generator for one (seed, step, stream): what a step draws depends only
 * on these, so a resumed run draws exactly what an uninterrupted one would,
 * and an evaluation can redraw the trainer's held-out masks. */
struct train_rng train_rng_for(uint64_t seed, uint64_t step, uint64_t stream);

/* Streams of train_rng_for used by the CLI. */
enum train_rng_stream {
    TRAIN_STREAM_BATCH = 1,   /* pretraining batches and their masks */
    TRAIN_STREAM_HELDOUT = 2, /* held-out masks, by sequence */
    TRAIN_STREAM_SHUFFLE = 3, /* fine-tuning epoch order */
    TRAIN_STREAM_DROPOUT = 4, /* dropout masks, by step */
};

/* What happened to a token. */
enum train_mask_kind {
    TRAIN_MASK_NONE = 0,   /* not picked: label -100 */
    TRAIN_MASK_MASKED,     /* replaced by [MASK] */
    TRAIN_MASK_RANDOM,     /* replaced by a random token */
    TRAIN_MASK_KEPT,       /* picked but left unchanged */
};

/* Per-vocabulary facts the masker needs, built once from a tokenizer. */
struct train_vocab {
    size_t size;
    int32_t mask_id;
    uint8_t *never_pick;    /* (size) 1 for special tokens ([CLS], [SEP], [PAD], [MASK], ...) */
    uint8_t *continuation;  /* (size) 1 for WordPiece "##" pieces */
};

/* Fails with BERT_E_INVALID when the tokenizer has no mask token. */
enum bert_status train_vocab_init(struct train_vocab *v, const struct bert_tokenizer *tok,
                                  struct bert_error *err);
/* Safe on a zeroed or already freed struct. */
void train_vocab_free(struct train_vocab *v);

struct train_mask_options {
    double mask_prob;    /* 0.15 */
    double replace_mask; /* 0.8: share of picked tokens that become [MASK] */
    double replace_random; /* 0.1: share that become a random token (the rest stay) */
    bool whole_word;
};

struct train_mask_options train_mask_options_default(void);

/* Corrupt one sequence ids (n) in place into `ids`, writing labels (n) and,
 * when `kinds` is non-NULL, what happened to each token (n). Ids must be
 * < v->size. A word continues across "##" pieces only inside the sequence. */
void train_mask_sequence(const struct train_vocab *v, const struct train_mask_options *o,
                         struct train_rng *rng, int32_t *ids, size_t n, int32_t *labels,
                         uint8_t *kinds);

/* The causal LM objective's labels (no corruption): position t of a
 * sequence predicts ids[t + 1]; the last position predicts nothing (-100). */
void train_next_token_labels(const int32_t *ids, size_t n, int32_t *labels);

#endif

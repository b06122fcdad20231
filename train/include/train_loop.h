/* The training loops `bert pretrain` and `bert finetune` run, as functions
 * a program or a test can drive: the options (every field is the CLI flag
 * of the same name), their checks, and the run. The CLI only parses flags.
 *
 * Both print their progress lines to `progress` (NULL: silent), write
 * checkpoints under `out`, and return BERT_OK or an error whose message
 * names the file, or the option at fault by its flag ("--max-len must be
 * ..."). Not thread-safe on one options struct; each run owns what it
 * allocates and frees it before returning. */
#ifndef BERT_TRAIN_LOOP_H
#define BERT_TRAIN_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bert.h"
#include "train_mask.h"

/* The corpus tail pretraining holds out (and `bert mlm-eval` measures): a
 * share of the sequences, at most `max`, none of a corpus of fewer than 2. */
size_t train_heldout_sequences(size_t n_seqs, double share, size_t max);

/* ---- pretraining: masked LM (BERT) or causal LM from scratch ------------ */

struct train_pretrain_options {
    const char *const *corpus; /* --corpus FILE..., n_corpus of them (required) */
    size_t n_corpus;
    const char *out;           /* --out: the final model; OUT/checkpoint the resumable state */
    const char *tokenizer;     /* --tokenizer: its vocabulary sizes the model (required) */
    /* Geometry: --layers, --hidden, --heads, --intermediate, --max-position
     * (num_layers, hidden_size, num_heads, intermediate_size,
     * max_position_embeddings); vocab_size and pad_token_id come from the
     * tokenizer, is_decoder from `causal`. */
    struct bert_config config;
    size_t max_len;            /* --max-len: tokens per sequence, specials included */
    size_t steps;              /* --steps: the schedule's length */
    size_t stop_at;            /* --stop-at: end this run after step N (0: steps) */
    size_t batch;              /* --batch: sequences per step */
    double lr;                 /* --lr: peak learning rate */
    size_t warmup;             /* --warmup: steps (0: 10% of steps) */
    double weight_decay;       /* --weight-decay */
    double clip;               /* --clip: gradient-norm clip, 0 for none */
    double dropout;            /* --dropout */
    bool causal;               /* --objective clm (false: mlm) */
    struct train_mask_options mask; /* --mask-prob, --whole-word, --mask-mix */
    uint64_t seed;             /* --seed: weights, batches, masks */
    size_t threads;            /* --threads */
    size_t log_every;          /* --log-every: a progress line every N steps */
    size_t save_every;         /* --save-every: checkpoint every N steps (0: at the end) */
    bool resume;               /* --resume: continue from OUT/checkpoint */
    const char *init;          /* --init: start from this model's weights, or NULL */
    double heldout;            /* --heldout: share of sequences held out */
    size_t heldout_max;        /* --heldout-max */
    enum bert_dtype dtype;     /* --dtype of the final model: F32, F16 or BF16 */
    FILE *progress;            /* progress lines; NULL: none */
};

/* `bert pretrain`'s defaults: a 2-layer, 128-wide BERT, 1000 steps of 32
 * sequences of 128 tokens, lr 5e-4, BERT's 15% 80/10/10 masking. */
struct train_pretrain_options train_pretrain_defaults(void);

/* BERT_E_INVALID naming the first option out of range, else BERT_OK. */
enum bert_status train_pretrain_check(const struct train_pretrain_options *o,
                                      struct bert_error *err);

/* Check, then train; writes OUT/checkpoint (and OUT itself once the last
 * step of the schedule is done). */
enum bert_status train_pretrain(const struct train_pretrain_options *o, struct bert_error *err);

/* ---- fine-tuning: the classification head on [CLS] (or a causal model's
 * last token), with the encoder or with it frozen ------------------------- */

struct train_finetune_options {
    const char *model;         /* --model: checkpoint to start from (required) */
    const char *train;         /* --train: TSV, header then text[<TAB>text_b]<TAB>label */
    const char *dev;           /* --dev: TSV for early stopping */
    const char *out;           /* --out: the best checkpoint */
    const char *labels;        /* --labels a,b,...: names in id order, or NULL (LABEL_i) */
    enum bert_problem_type problem; /* --problem: single, multi or regression */
    bool tokens;               /* --task token-classification: CoNLL files, a label per word */
    bool all_subtokens;        /* --label-all-subtokens: every piece of a word gets its label */
    bool freeze_encoder;       /* --freeze-encoder: train only pooler and classifier */
    size_t epochs;             /* --epochs: passes over the training set at most */
    size_t max_steps;          /* --max-steps: 0 for no limit */
    size_t batch;              /* --batch */
    size_t max_len;            /* --max-len: tokens per text, specials included */
    double lr;                 /* --lr: 0 picks 2e-5, or 1e-3 with a frozen encoder */
    double warmup;             /* --warmup: share of the steps */
    double weight_decay;       /* --weight-decay */
    double clip;               /* --clip */
    double dropout;            /* --dropout: hidden states and the pooled [CLS] */
    double mlm_weight;         /* --mlm-weight: also train the MLM head (0: off) */
    const char *const *corpus; /* --corpus FILE...: the --mlm-weight batches' text */
    size_t n_corpus;
    size_t eval_every;         /* --eval-every: dev evaluation every N steps (0: per epoch) */
    size_t patience;           /* --patience: evaluations without improvement */
    uint64_t seed;             /* --seed: new heads and shuffling */
    size_t threads;            /* --threads */
    enum bert_dtype dtype;     /* --dtype of the saved checkpoint */
    FILE *progress;            /* progress lines; NULL: none */
};

/* `bert finetune`'s defaults: 3 epochs of batch 32, texts of 128 tokens,
 * single-label, dropout 0.1, evaluation once an epoch, patience 3. */
struct train_finetune_options train_finetune_defaults(void);

/* BERT_E_INVALID naming the first option out of range (or two that do not
 * go together), else BERT_OK. */
enum bert_status train_finetune_check(const struct train_finetune_options *o,
                                      struct bert_error *err);

struct train_finetune_result {
    size_t steps;              /* optimiser steps run */
    size_t evaluations;
    bool early_stop;           /* stopped after `patience` evaluations without improvement */
    double best;               /* best dev score, the checkpoint in OUT */
    const char *metric;        /* its name: "accuracy", "micro-f1", "pearson" or "entity-f1" */
};

/* Check, then fine-tune, saving the checkpoint of each best dev score in
 * OUT; fills *result (may be NULL) on success. */
enum bert_status train_finetune(const struct train_finetune_options *o,
                                struct train_finetune_result *result, struct bert_error *err);

/* The token-classification run train_finetune hands --task
 * token-classification to (train/finetune_tokens.c): --train and --dev are
 * CoNLL files, the labels those of the training file. */
enum bert_status train_finetune_tokens(const struct train_finetune_options *o,
                                       struct train_finetune_result *result,
                                       struct bert_error *err);

#endif

/* One training (or evaluation) pass over a packed, padding-free batch:
 * forward with every activation kept, the losses, and the backward pass of
 * the whole network into the model's gradient arena. Losses are
 * BertForMaskedLM's (mean cross-entropy over positions whose label is not
 * -100) and BertForSequenceClassification's (mean cross-entropy of the
 * pooled [CLS] over sequences); when both are given the loss is their sum.
 * A model whose config has is_decoder runs causal attention (token i sees
 * tokens 0..i of its own sequence) and classifies from each sequence's last
 * token; its caller gives next-token labels as mlm_labels, so a causal LM
 * trains through the same tied head (BertLMHeadModel).
 *
 * Products run on the work's compute team (the engine's team.h), split by rows
 * or columns; attention runs one (sequence, head) per team member at a time.
 * OpenBLAS should be single-threaded (openblas_set_num_threads(1)). */
#ifndef BERT_TRAIN_STEP_H
#define BERT_TRAIN_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bert.h"
#include "train_model.h"

struct train_batch {
    struct bert_batch b;
    const int32_t *mlm_labels; /* (T) target id or -100; NULL: no MLM loss */
    const int32_t *cls_labels; /* (n_seqs) single-label ids; NULL: no such loss */
    const float *cls_targets;  /* (n_seqs, num_labels) multi-label 0/1 or regression
                                  values; NULL: no such loss */
    int32_t *cls_pred;         /* (n_seqs) out, argmax of the classifier; may be NULL */
    float *cls_logits;         /* (n_seqs, num_labels) out; may be NULL */
    /* Token classification (a model whose config has a token head): a
     * label per token, -100 where none (specials, the pieces after a word's
     * first); the loss is the mean cross-entropy over the labelled tokens
     * (BertForTokenClassification's). */
    const int32_t *token_labels; /* (T) or NULL */
    int32_t *token_pred;       /* (T) out: argmax at the labelled tokens; may be NULL */
    /* Dropout probability of the embeddings' output, each layer's attention
     * and feed-forward outputs (before their residual) and the pooled
     * [CLS], as BERT's hidden_dropout_prob and classifier dropout; 0 for
     * none (evaluation). The masks are a function of dropout_seed. */
    float dropout;
    uint64_t dropout_seed;
};

struct train_stats {
    double loss;                /* what the backward pass differentiates */
    double mlm_loss_sum;        /* summed over the mlm_count positions */
    size_t mlm_count, mlm_correct;
    double cls_loss_sum;
    size_t cls_count, cls_correct; /* multi-label: texts with the whole set right */
    double token_loss_sum;
    size_t token_count, token_correct;
};

struct train_work;

/* Working memory for batches of at most max_tokens tokens and sequences of
 * at most max_seq_len, with a team of `threads` (0 or 1: the caller only). */
struct train_work *train_work_new(const struct train_model *m, size_t max_tokens,
                                  size_t max_seq_len, size_t threads, struct bert_error *err);
/* NULL is a no-op. */
void train_work_free(struct train_work *w);
size_t train_work_bytes(const struct train_work *w);

/* Forward the batch and fill *stats. With `backward`, ADD the gradients of
 * stats->loss to m->grads (callers zero them between steps); with
 * `freeze_encoder` only the pooler and classifier get gradients. Fails with
 * BERT_E_INVALID on a batch that does not fit, an id, label or type out of
 * range, or a loss the model has no head for (labels for a single-label
 * head, targets for a multi-label or regression one). */
enum bert_status train_step(struct train_model *m, struct train_work *w,
                            const struct train_batch *batch, bool backward, bool freeze_encoder,
                            struct train_stats *stats, struct bert_error *err);

#endif

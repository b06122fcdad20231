/* Task heads on top of the encoder: pooled embeddings, masked-LM top-k and
 * sequence classification, each run only on the rows it needs (the MLM
 * decoder at [MASK] rows, the classifier at [CLS] rows). */
#ifndef BERT_HEADS_H
#define BERT_HEADS_H

#include <stdbool.h>
#include <stdint.h>

#include "encoder.h"

enum bert_task {
    BERT_TASK_EMBED,
    BERT_TASK_FILL_MASK,
    BERT_TASK_CLASSIFY,
    BERT_TASK_REPLACED,
};

/* What to compute for one sequence of a batch, and where to put it. */
struct bert_seq_task {
    enum bert_task task;

    /* BERT_TASK_EMBED: pooled (and optionally L2-normalised) vector. */
    enum bert_pooling pooling;
    bool normalize;
    float *embedding;        /* (H) out */

    /* BERT_TASK_FILL_MASK: for each mask position in order, the top_k
     * (token, probability) pairs, best first. With targets, probabilities are
     * those of the full-vocabulary softmax at the target ids, and top_k is at
     * most n_targets. */
    uint32_t top_k;
    const int32_t *targets;  /* (n_targets) or NULL */
    uint32_t n_targets;
    int32_t *top_ids;        /* (n_masks * top_k) out */
    float *top_probs;        /* (n_masks * top_k) out */

    /* BERT_TASK_CLASSIFY: raw classifier logits. */
    float *logits;           /* (num_labels) out */

    /* BERT_TASK_REPLACED (ELECTRA discriminators): per token, the
     * probability that it was replaced (sigmoid of the discriminator's
     * logit), as ElectraForPreTraining computes it. */
    float *replaced;         /* (tokens of the sequence) out */
};

/* Number of mask tokens in sequence `i` of `batch`. */
size_t bert_count_masks(const struct bert_model *model, const struct bert_batch *batch,
                        size_t i);

/* Encode `batch` and run each sequence's task. Fails with BERT_E_INVALID when
 * a task needs a head the checkpoint lacks; never allocates. A sequence
 * whose encoder output holds a NaN or infinity gets NaN as its first output
 * value (embedding, logits, top_probs or replaced), so that a caller that
 * refuses non-finite results cannot answer it. */
enum bert_status bert_run(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *batch, const struct bert_seq_task *tasks,
                          struct bert_error *err);

/* Pool rows [row0, row0 + n) of `hidden` (H columns) into out (H). */
void bert_pool(const float *hidden, size_t hidden_size, size_t row0, size_t n,
               enum bert_pooling pooling, bool normalize, float *out);

#endif

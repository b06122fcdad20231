/* The heads of a training step (step_heads.c): forward, loss into *st
 * and, when `backward` (or into_encoder), gradients; into_encoder adds the
 * head's gradient of the encoder output to w->dx. Private to train/. */
#ifndef BERT_TRAIN_STEP_HEADS_H
#define BERT_TRAIN_STEP_HEADS_H

#include "step_ops.h"

/* The MLM head at the picked rows; with backward, its gradient lands in dx
 * (zeroed elsewhere by the caller). */
void step_mlm_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                   bool backward, struct train_stats *st);

/* Pooler (dense + tanh on the pooled token) and classifier; with backward
 * (and an encoder that trains) its gradient lands in dx. */
void step_cls_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                   const struct dropout *drop, bool backward, bool into_encoder,
                   struct train_stats *st);

/* The token classifier (dropout, then Linear(H, labels)) at the labelled
 * tokens; with backward (and an encoder that trains) its gradient lands in
 * dx. */
void step_token_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                     const struct dropout *drop, bool backward, bool into_encoder,
                     struct train_stats *st);

#endif

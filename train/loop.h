/* What the two training loops (pretrain.c, finetune.c) share: packed batch
 * buffers, the dropout seeds of a step, progress output and clocks.
 * Private to train/. */
#ifndef BERT_TRAIN_LOOP_SHARED_H
#define BERT_TRAIN_LOOP_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "train_step.h"

/* Packed batch storage for up to `seqs` sequences of `max_len`. */
struct batch_buf {
    int32_t *ids, *types, *labels, *cls_labels, *pred;
    size_t *start;
};

/* False when out of memory (then batch_buf_free releases what was made). */
bool batch_buf_init(struct batch_buf *b, size_t seqs, size_t max_len);
/* Safe on a zeroed or already freed buffer. */
void batch_buf_free(struct batch_buf *b);

/* Training batches drop out with a mask that depends only on (seed, step),
 * so a resumed run draws the masks an uninterrupted one would. */
void loop_set_dropout(struct train_batch *tb, double p, uint64_t seed, size_t step);

/* order[0 .. n) = a permutation of 0 .. n - 1, epoch `epoch`'s shuffle
 * (Fisher-Yates on the seed's shuffle stream). */
void loop_shuffle(size_t *order, size_t n, uint64_t seed, size_t epoch);

/* The second pass of a step (fine-tuning's masked-LM pass) draws its own
 * masks: the next number of the step's dropout stream. */
void loop_set_second_dropout(struct train_batch *tb, double p, uint64_t seed, size_t step);

/* printf to `out` and flush, so progress shows while a run goes on; NULL
 * `out` prints nothing. */
void loop_say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Monotonic seconds. */
double loop_now(void);

/* "1h02m" or "3m07s". */
void loop_format_duration(double s, char *buf, size_t n);

#endif

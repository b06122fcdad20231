/* Rotary position embeddings (Su et al. 2021, "RoFormer"), in the
 * GPT-NeoX / ModernBERT layout: a head vector's first half and second half
 * form the rotated pairs (x[k], x[k + d/2]), not neighbouring elements. */
#ifndef BERT_ROPE_H
#define BERT_ROPE_H

#include <stddef.h>

/* A table for positions 0..positions-1 and head size d (even): row p holds
 * cos(p * f_k) for k < d/2, then sin(p * f_k), with f_k = theta^(-2k/d),
 * computed in double. NULL when out of memory; free() it. */
float *rope_table_new(size_t positions, size_t d, double theta);

/* The same table with fixed NTK-aware scaling (GTE's NTKScalingRotaryEmbedding,
 * https://kexue.fm/archives/9706): f_k = (theta * factor)^(-2k/d) /
 * factor^(2/d). factor 1 is rope_table_new's table. */
float *rope_table_ntk_new(size_t positions, size_t d, double theta, double factor);

/* Rotate the head vector x (d floats) by its position's table row:
 * x[k] <- x[k] cos - x[k + d/2] sin, x[k + d/2] <- x[k + d/2] cos + x[k] sin. */
void rope_rotate(float *x, size_t d, const float *row);

struct bert_batch;

/* Rotate the A query heads and the A key heads of rows [r0, r1) of a packed
 * batch's (T, 3H) query | key | value matrix by each row's position in its
 * own sequence (positions restart per sequence). */
void rope_rotate_rows(const struct bert_batch *b, float *qkv, size_t r0, size_t r1, size_t H,
                      size_t A, const float *table);

#endif

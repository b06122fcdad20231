/* Row-wise numeric kernels of the encoder. All work in place on row-major
 * float matrices; none allocates. */
#ifndef BERT_KERNELS_H
#define BERT_KERNELS_H

#include <stddef.h>

#include "bert.h"

/* x[r] = LayerNorm(x[r] + bias + residual[r]) * gamma + beta for each of the
 * `rows` rows of width n; bias and residual may be NULL. The LayerNorm of
 * Ba et al. 2016 with biased variance, as torch.nn.LayerNorm. */
void kernel_add_layernorm(float *x, const float *residual, const float *bias,
                          const float *gamma, const float *beta, size_t rows, size_t n,
                          float eps);

/* x[r] = act(x[r] + bias) for each row of width n, rows ld floats apart. */
void kernel_bias_activation(float *x, const float *bias, size_t rows, size_t n, size_t ld,
                            enum bert_activation act);

/* x[r] += bias for rows of width n with row stride ld. */
void kernel_add_bias(float *x, const float *bias, size_t rows, size_t n, size_t ld);

/* Softmax of each row (width n, stride ld) in place. */
void kernel_softmax_rows(float *x, size_t rows, size_t n, size_t ld);

/* One activation value (for tests and the trainer). */
float kernel_activation(float v, enum bert_activation act);

#endif

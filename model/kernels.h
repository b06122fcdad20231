/* Row-wise numeric kernels of the encoder. All work in place on row-major
 * float matrices; none allocates. */
#ifndef BERT_KERNELS_H
#define BERT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "bert.h"

/* x[r] = LayerNorm(x[r] + bias + residual[r]) * gamma + beta for each of the
 * `rows` rows of width n; bias and residual may be NULL. The LayerNorm of
 * Ba et al. 2016 with biased variance, as torch.nn.LayerNorm. */
void kernel_add_layernorm(float *x, const float *residual, const float *bias,
                          const float *gamma, const float *beta, size_t rows, size_t n,
                          float eps);

/* kernel_add_layernorm; unless bf16 is NULL, each finished row is also
 * rounded to bf16 there (rows n apart) while it is in cache, for a product
 * that reads them next (linear_bf16_keep): the same values as
 * kernel_to_bf16 afterwards. */
void kernel_add_layernorm_bf16(float *x, const float *residual, const float *bias,
                               const float *gamma, const float *beta, size_t rows, size_t n,
                               float eps, uint16_t *bf16);

/* One row of it, without the bias and without lapping the profile (for
 * epilogues that run row by row). */
void kernel_add_layernorm_row(float *x, const float *residual, const float *gamma,
                              const float *beta, size_t n, float eps);

/* x[r] = act(x[r] + bias) for each row of width n, rows ld floats apart. */
void kernel_bias_activation(float *x, const float *bias, size_t rows, size_t n, size_t ld,
                            enum bert_activation act);

/* kernel_bias_activation for rows the next product rounds to bf16 or int8:
 * the exact GELU to float precision on the scale of x, without its lower
 * tail's relative precision, which those formats drop (vmath.h,
 * vf16_gelu_coarse_tail: half the cost); other activations alike. Unless
 * bf16 is NULL, each finished row is also rounded to bf16 there (rows n
 * apart), as kernel_add_layernorm_bf16 does. */
void kernel_bias_activation_rounded(float *x, const float *bias, size_t rows, size_t n,
                                    size_t ld, enum bert_activation act, uint16_t *bf16);

/* x[r] += bias for rows of width n with row stride ld. */
void kernel_add_bias(float *x, const float *bias, size_t rows, size_t n, size_t ld);

/* Softmax of each row (width n, stride ld) in place. */
void kernel_softmax_rows(float *x, size_t rows, size_t n, size_t ld);

/* One int8 product row back to f32, with what follows it in one pass:
 * y[c] = acc[c] * (row_scale * col_scale[c]) + bias[c], then act(y[c])
 * when act is not NULL; bias may be NULL, acc may be y. The same values
 * as that dequantization followed by kernel_bias_activation_rounded (the
 * row is quantized next). */
void kernel_dequantize_row(float *y, const float *acc, size_t n, float row_scale,
                           const float *col_scale, const float *bias,
                           const enum bert_activation *act);

/* out[i] = x[i] rounded to bf16, to nearest even (a NaN stays a NaN), as
 * bert_f32_to_bf16 (safetensors.h) but vectorised: every activation that
 * enters a product on oneDNN's bf16 kernels goes through it. With
 * AVX512_BF16 (every CPU those kernels run on) its instruction converts,
 * which reads a subnormal float (below 1.2e-38 in magnitude) as a zero of
 * its sign. */
void kernel_to_bf16(const float *x, size_t n, uint16_t *out);

/* One activation value (for tests and the trainer). */
float kernel_activation(float v, enum bert_activation act);

#endif

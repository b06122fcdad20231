/* BF16 dense layers: weights converted once, at load (bert_model_use_bf16),
 * to bf16 and kept with the weight they come from (struct bert_dense);
 * accumulation and outputs in f32; everything else stays f32. With AMX the
 * products run on oneDNN (weights in its blocked layout, activations
 * converted per call into the calling team member's buffer); with
 * AVX512_BF16 alone on linear_bf16_avx512.h's kernel, which converts the
 * activations as it packs them, runs strided outputs and column shares, and
 * ran BERT-base 1.2-2.8x faster than oneDNN there. oneDNN 2.6 has only
 * reference kernels for strided outputs, so BERT's Q, K and V run as one
 * stacked weight (linear_bf16_pack_stacked) into their dense (T, 3H) matrix.
 *
 * Nothing is looked up per call and nothing on the request path grows a
 * buffer: a weight carries its packed copy, a team member its context
 * (stream, primitives, activation buffer sized when the scratch is made).
 * Built only when CMake finds oneDNN (BERT_HAVE_DNNL); otherwise nothing
 * packs and bert_bf16_available (bert.h) says why. */
#ifndef BERT_LINEAR_BF16_H
#define BERT_LINEAR_BF16_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

/* A weight W (out, in) packed for bf16 products. Read-only once made; any
 * number of threads may use it at once. */
struct linear_bf16_weight;

/* Pack W (out, in), f32 as torch.nn.Linear stores it. NULL when bf16 is
 * unavailable, oneDNN has only a reference kernel for this shape (far
 * slower than OpenBLAS in f32) or memory runs out: the weight then stays
 * f32. */
struct linear_bf16_weight *linear_bf16_pack(const float *w, size_t out, size_t in);

/* One weight (n_parts * out, in) from n_parts weights (out, in) stacked
 * row-wise (BERT's Q, K and V): one product fills their outputs side by
 * side. NULL as for linear_bf16_pack. */
struct linear_bf16_weight *linear_bf16_pack_stacked(const float *const *parts, size_t n_parts,
                                                    size_t out, size_t in);

/* NULL is a no-op. */
void linear_bf16_weight_free(struct linear_bf16_weight *p);

/* One team member's state: a oneDNN stream, its cache of primitives by
 * shape, and room to convert up to `max_rows` x `max_in` activations.
 * Used by one thread at a time. NULL when out of memory or bf16 is
 * unavailable. */
struct linear_bf16_ctx;
struct linear_bf16_ctx *linear_bf16_ctx_new(size_t max_rows, size_t max_in);
/* Bytes of the buffers such a context holds (0 where bf16 is unavailable). */
size_t linear_bf16_ctx_bytes(size_t max_rows, size_t max_in);
/* NULL is a no-op. */
void linear_bf16_ctx_free(struct linear_bf16_ctx *ctx);

/* y (rows, out) = x (rows, in) W^T in bf16 with f32 accumulation, y rows
 * `ldy` apart, + bias (out floats) unless bias is NULL (our kernel adds it
 * to each finished sum; after oneDNN's product a pass adds it). Returns
 * false, computing nothing, when the shapes disagree with the packed
 * weight, the rows exceed the context's room or oneDNN fails: the caller
 * then runs the product in f32. The first call for a (rows, ldy, weight
 * shape) makes its primitive. */
bool linear_bf16_run(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy,
                     const float *bias);

/* Columns [c0, c1) of that product, bias included (c0 a multiple of 32,
 * as bert_share_cols hands them out), the others untouched: for a team
 * that splits a few rows' product by columns. Only our kernel's weights
 * can (false for oneDNN's, computing nothing: the caller runs f32). */
bool linear_bf16_run_cols(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                          const float *x, size_t rows, size_t in, size_t c0, size_t c1, float *y,
                          size_t ldy, const float *bias);

#endif

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
#include <stdint.h>

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

/* Products of fewer rows than this run on oneDNN's kernels on zero rows
 * added up to it, the results the same: with AMX, oneDNN 2.6 has only a
 * reference kernel for a product of a few rows in the layout it picks for
 * many, and such a product (a lone short input, a few rows per team member)
 * ran in f32. Found when the weight is packed: 1 (no padding) where every
 * row count has a kernel, and for our kernel's weights; at most 64; 0 where
 * even 64 rows have none (fewer are then refused). */
size_t linear_bf16_weight_min_rows(const struct linear_bf16_weight *w);
/* For tests: pad oneDNN's products of fewer than `rows` rows (at most 64)
 * as if it had no kernel for them; before the weight is shared. */
void linear_bf16_weight_pad_to(struct linear_bf16_weight *w, size_t rows);

/* One team member's state: a oneDNN stream, its cache of primitives by
 * shape, room to convert up to `max_rows` x `max_in` activations, for a
 * padded product's output up to `max_out` wide and for `max_rows` x
 * `max_strided_out` products whose output rows are strided (ldy > out:
 * oneDNN 2.6 has only reference kernels for those, so they land here first);
 * or our kernel's block of x. Used by one thread at a time. NULL when out of
 * memory or bf16 is unavailable. */
struct linear_bf16_ctx;
struct linear_bf16_ctx *linear_bf16_ctx_new(size_t max_rows, size_t max_in, size_t max_out,
                                            size_t max_strided_out);
/* Bytes of the buffers such a context holds (0 where bf16 is unavailable). */
size_t linear_bf16_ctx_bytes(size_t max_rows, size_t max_in, size_t max_out,
                             size_t max_strided_out);
/* Whether the context's products can be split by columns
 * (linear_bf16_run_cols): ours can; oneDNN's run whole rows only. */
bool linear_bf16_ctx_splits_cols(const struct linear_bf16_ctx *ctx);
/* NULL is a no-op. */
void linear_bf16_ctx_free(struct linear_bf16_ctx *ctx);

/* y (rows, out) = x (rows, in) W^T in bf16 with f32 accumulation, y rows
 * `ldy` apart, + bias (out floats) unless bias is NULL, added to each
 * finished sum as one float addition (by our kernel, or oneDNN's epilogue;
 * where oneDNN has no fast kernel with a bias, a pass after it). Returns
 * false, computing nothing, when the shapes disagree with the packed
 * weight, the rows exceed the context's room or oneDNN fails: the caller
 * then runs the product in f32. The first call for a (rows, ldy, weight
 * shape) makes its primitive. */
bool linear_bf16_run(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy,
                     const float *bias);

/* For a product on oneDNN's kernels whose x is being made now (a
 * LayerNorm's or an activation's rows): room for x's `rows` x `in` values
 * in bf16, which the caller fills (kernel_to_bf16's values; kernels.h's
 * producers take the pointer) while each row is in cache. The context's
 * next linear_bf16_run, if it reads the same x, rows and in, skips its own
 * conversion pass over x; any other run drops the kept rows. x must not
 * change in between. NULL where nothing is kept: our kernel's context
 * (it converts as it packs), or more rows than the context converts. */
uint16_t *linear_bf16_keep(struct linear_bf16_ctx *ctx, const float *x, size_t rows, size_t in);

/* Drop kept rows: a new pass writes its x where an earlier one's was, and
 * so does a product that runs in f32 instead. NULL is a no-op. */
void linear_bf16_forget(struct linear_bf16_ctx *ctx);

/* Columns [c0, c1) of that product, bias included (c0 a multiple of 32,
 * as bert_share_cols hands them out), the others untouched: for a team
 * that splits a few rows' product by columns. Only our kernel's weights
 * can (false for oneDNN's, computing nothing: the caller runs f32). */
bool linear_bf16_run_cols(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                          const float *x, size_t rows, size_t in, size_t c0, size_t c1, float *y,
                          size_t ldy, const float *bias);

#endif

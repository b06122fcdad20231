/* INT8 dense layers on oneDNN (AVX512-VNNI / AVX-VNNI / AMX-INT8):
 * weights quantized once, at load (bert_model_use_int8), symmetrically per
 * output channel to int8 in oneDNN's blocked layout; activations quantized
 * per call, symmetrically per row, into the calling team member's buffer;
 * products accumulate in int32 and come back as f32, scaled by the row's
 * and the channel's scale. Attention, norms, activations and heads stay f32.
 *
 * As in linear_bf16.h, nothing is looked up per call and nothing on the
 * request path grows a buffer. Built only when CMake finds oneDNN
 * (BERT_HAVE_DNNL); otherwise nothing packs and bert_int8_available
 * (bert.h) says why. */
#ifndef BERT_LINEAR_INT8_H
#define BERT_LINEAR_INT8_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

/* A weight W (out, in) quantized for int8 products. Read-only once made;
 * any number of threads may use it at once. */
struct linear_int8_weight;

/* Quantize W (out, in), f32 as torch.nn.Linear stores it: per output
 * channel c, scale_c = max |W[c, :]| / 127 and q = round(W / scale_c).
 * NULL when int8 is unavailable, oneDNN has only a reference kernel for
 * this shape or memory runs out: the weight then stays f32. */
struct linear_int8_weight *linear_int8_pack(const float *w, size_t out, size_t in);

/* One weight (n_parts * out, in) from n_parts weights (out, in) stacked
 * row-wise, as linear_int8_pack of their concatenation: its products are
 * those of the parts side by side (Q, K and V from one quantized input
 * and one product). NULL as for linear_int8_pack. */
struct linear_int8_weight *linear_int8_pack_stacked(const float *const *parts, size_t n_parts,
                                                    size_t out, size_t in);

/* NULL is a no-op. */
void linear_int8_weight_free(struct linear_int8_weight *p);

/* Products of fewer rows than this run on zero rows added up to it, the
 * results the same: with AMX, oneDNN 2.6 has only a reference kernel for a
 * product of a few rows in the layout it picks for many, and the engine
 * would run such a product (a lone short input, or a few rows per team
 * member) in f32. Found when the weight is packed: 1 (no padding) where
 * every row count has a kernel, as with VNNI; at most 64; 0 where even 64
 * rows have none (fewer are then refused). */
size_t linear_int8_weight_min_rows(const struct linear_int8_weight *w);
/* For tests: pad products of fewer than `rows` rows (at most 64) as if
 * oneDNN had no kernel for them; before the weight is shared. */
void linear_int8_weight_pad_to(struct linear_int8_weight *w, size_t rows);

/* One team member's state: a oneDNN stream, its cache of primitives by
 * shape, room to quantize up to `max_rows` x `max_in` activations, to hold
 * `max_rows` x `max_strided_out` products whose output rows are strided
 * (ldy > out) and a padded product (linear_int8_weight_min_rows) up to
 * `max_out` wide. Used by one thread at a time. NULL when out of memory or
 * int8 is unavailable. */
struct linear_int8_ctx;
struct linear_int8_ctx *linear_int8_ctx_new(size_t max_rows, size_t max_in, size_t max_out,
                                            size_t max_strided_out);
/* Bytes of the buffers such a context holds (0 where int8 is unavailable). */
size_t linear_int8_ctx_bytes(size_t max_rows, size_t max_in, size_t max_out,
                             size_t max_strided_out);
/* NULL is a no-op. */
void linear_int8_ctx_free(struct linear_int8_ctx *ctx);

/* y (rows, out) = x (rows, in) W^T with x quantized per row, int32
 * accumulation and f32 output, y rows `ldy` apart. A row that is not
 * finite gives a row that is not finite. Returns false, computing nothing,
 * when the shapes disagree with the weight, the rows exceed the context's
 * room (strided output wider than the context's max_strided_out included)
 * or oneDNN fails: the caller then runs the product in f32. */
bool linear_int8_run(struct linear_int8_ctx *ctx, const struct linear_int8_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy);

/* What linear_int8_run_epilogue does to each output row as it dequantizes
 * it, in the same pass: y += bias (NULL: nothing), then either y = act(y)
 * when `activate`, or, when gamma is not NULL, y = LayerNorm(y + residual)
 * * gamma + beta (kernel_add_layernorm; residual rows ldy apart, NULL:
 * none). With `keep_quantized` (and ldy == out) it also quantizes the
 * finished rows into the context, and the context's next run whose x is
 * this y (same rows, in == this out) reads them instead of quantizing y
 * again: the caller must not change y in between. Any other run, and
 * linear_int8_forget, drop them. */
struct linear_int8_epilogue {
    const float *bias;
    bool activate;
    enum bert_activation act;
    const float *residual, *gamma, *beta;
    float eps;
    bool keep_quantized;
};

/* Drop kept rows (a new pass may write new values where they came from). */
void linear_int8_forget(struct linear_int8_ctx *ctx);

/* linear_int8_run, then the epilogue; false (computing nothing) as there. */
bool linear_int8_run_epilogue(struct linear_int8_ctx *ctx, const struct linear_int8_weight *w,
                              const float *x, size_t rows, size_t in, size_t out, float *y,
                              size_t ldy, const struct linear_int8_epilogue *ep);

#endif

/* Dense layers (y = x W^T, W stored (out, in) as torch.nn.Linear does) run by
 * a compute team: each member takes a share of the rows, or of the output
 * columns when there are too few rows to go round. */
#ifndef BERT_LINEAR_H
#define BERT_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

struct linear_f32_weight;
struct linear_bf16_weight;
struct linear_bf16_ctx;
struct linear_int8_weight;
struct linear_int8_ctx;
struct bert_team;

/* A dense layer's weight as products read it: W (out, in) in f32, as
 * torch.nn.Linear stores it, and the same weight packed once at load: for
 * the f32 kernel (linear_f32.h, which then runs every f32 product of this
 * weight; NULL: OpenBLAS on w), or, when the model runs its dense layers
 * in bf16 or int8, for those (NULL: f32 products). */
struct bert_dense {
    const float *w;                          /* (out, in) */
    struct linear_f32_weight *f32;
    struct linear_bf16_weight *bf16;
    struct linear_int8_weight *int8;
};

/* One member's share of a pass: its rows, and whether matrix products are
 * split by rows (enough rows for every member) or by output columns (few
 * rows: splitting them would make each member pack the whole weight matrix
 * for a sliver of work). */
struct bert_share {
    size_t member, n_members;
    size_t rows;       /* T */
    size_t r0, r1;     /* this member's rows */
    bool by_rows;
    struct linear_bf16_ctx *bf16; /* the member's bf16 context, NULL: f32 (the scratch's) */
    struct linear_int8_ctx *int8; /* the member's int8 context, NULL: f32 (the scratch's) */
    float *f32_buf; /* the member's LINEAR_F32_BUFFER_FLOATS, NULL: no packed f32 products */
};

struct bert_share bert_share_of(size_t rows, size_t member, size_t n_members);

/* Give the share its member's int8 context; the share then splits by rows
 * whatever their number: a packed int8 weight cannot be cut into column
 * ranges, and with no packing per call, few rows lose nothing by it. */
void bert_share_use_int8(struct bert_share *p, struct linear_int8_ctx *ctx);

/* Give the share its member's bf16 context; on oneDNN's kernels (AMX) the
 * share then splits by rows whatever their number, as for int8: they cannot
 * split columns, and a few rows' products would run in f32. */
void bert_share_use_bf16(struct bert_share *p, struct linear_bf16_ctx *ctx);

/* y (rows, out) = x (rows, in) W^T for this member's share: in int8 (or
 * bf16) when both the weight and the member have an int8 (bf16) side and
 * the member's share is rows (for bf16 on our own kernel, columns too),
 * else in f32. */
void bert_linear_share(const struct bert_share *p, const float *x, size_t in,
                       const struct bert_dense *d, size_t out, float *y, size_t ldy);

/* bert_linear_share, then y += bias and, when act is not NULL, y = act(y)
 * on the same share (rows or columns). In int8 the three make one pass
 * over y, and with `feeds_next` (y contiguous, ldy == out) the member's
 * next product, reading y as its x with nothing changing y in between,
 * reuses y's quantized rows. */
void bert_linear_share_bias(const struct bert_share *p, const float *x, size_t in,
                            const struct bert_dense *d, size_t out, float *y, size_t ldy,
                            const float *bias, const enum bert_activation *act, bool feeds_next);

/* What follows a product in a post-LN layer: y = LayerNorm(y + bias +
 * residual) * gamma + beta, residual (rows, out) like y; `team` the
 * members to wait for between the two when products split by columns. */
struct bert_norm {
    const float *bias, *residual, *gamma, *beta;
    float eps;
    struct bert_team *team;
};

/* y (rows, out) = x W^T followed by `n` on this member's rows: in int8 one
 * pass over y; `feeds_next` as for bert_linear_share_bias. */
void bert_linear_share_norm(const struct bert_share *p, const float *x, size_t in,
                            const struct bert_dense *d, size_t out, float *y,
                            const struct bert_norm *n, bool feeds_next);

/* Q, K and V of x (rows, H) into qkv (rows, 3H), each with its bias, for
 * this member's share: one product of `stacked` (their weights stacked,
 * with `stacked_bias` their biases side by side) when the member runs int8
 * or bf16 and stacked holds that kind, else three products. */
void bert_linear_share_qkv(const struct bert_share *p, const float *x, size_t H,
                           const struct bert_dense *stacked, const float *stacked_bias,
                           const struct bert_dense *const dense[3],
                           const float *const bias[3], float *qkv);

/* Columns [c0, c1) of `out` that are this member's when splitting columns
 * (whole panels of the f32 kernel, LINEAR_F32_PANEL, so a member may get
 * none), or all of them when splitting rows. */
void bert_share_cols(const struct bert_share *p, size_t out, size_t *c0, size_t *c1);

#endif

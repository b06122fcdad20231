#include "linear.h"

#include <cblas.h>

#include "linear_bf16.h"
#include "linear_f32.h"
#include "linear_int8.h"
#include "kernels.h"
#include "linear_small.h"
#include "profile.h"
#include "team.h"

/* Below this many rows per member, products are split by columns. */
#define MIN_ROWS_PER_MEMBER 32

struct bert_share bert_share_of(size_t rows, size_t member, size_t n_members)
{
    struct bert_share p = {.member = member, .n_members = n_members, .rows = rows};
    bert_team_share(rows, member, n_members, &p.r0, &p.r1);
    p.by_rows = n_members == 1 || rows >= MIN_ROWS_PER_MEMBER * n_members;
    return p;
}

void bert_share_use_int8(struct bert_share *p, struct linear_int8_ctx *ctx)
{
    p->int8 = ctx;
    if (ctx != NULL)
        p->by_rows = true;
}

void bert_share_use_bf16(struct bert_share *p, struct linear_bf16_ctx *ctx)
{
    p->bf16 = ctx;
    if (ctx != NULL && !linear_bf16_ctx_splits_cols(ctx))
        p->by_rows = true;
}

void bert_share_cols(const struct bert_share *p, size_t out, size_t *c0, size_t *c1)
{
    if (p->by_rows) {
        *c0 = 0;
        *c1 = out;
    } else {
        const size_t panels = (out + LINEAR_F32_PANEL - 1) / LINEAR_F32_PANEL;
        bert_team_share(panels, p->member, p->n_members, c0, c1);
        *c0 *= LINEAR_F32_PANEL;
        *c1 = *c1 * LINEAR_F32_PANEL < out ? *c1 * LINEAR_F32_PANEL : out;
    }
}

/* Columns [c0, c1) of y = x W^T in f32: on the packed weight when there
 * is one (and the member has its buffer), which adds `bias` too (NULL:
 * none; returns whether it was added), else straight from W for a few
 * rows, else OpenBLAS. */
static bool linear(const struct bert_share *p, const float *x, size_t rows, size_t in,
                   const struct bert_dense *d, size_t c0, size_t c1, float *y, size_t ldy,
                   const float *bias)
{
    if (rows == 0 || c1 <= c0)
        return false;
    if (d->f32 != NULL && p->f32_buf != NULL) {
        linear_f32_run(d->f32, x, rows, c0, c1, y, ldy, bias, p->f32_buf);
        return bias != NULL;
    }
    const float *w = d->w + c0 * in;
    const size_t out = c1 - c0;
    y += c0;
    if (rows <= BERT_LINEAR_SMALL_ROWS) {
        bert_linear_small(x, rows, in, w, out, y, ldy);
        return false;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)out, (int)in, 1.0f, x,
                (int)in, w, (int)in, 0.0f, y, (int)ldy);
    return false;
}

/* y = x W^T + bias for this member's share in bf16, rows or columns; false,
 * nothing written, when the member or the weight has no bf16 or the product
 * cannot run. */
static bool bf16_share_bias(const struct bert_share *p, const float *x, size_t in,
                            const struct bert_dense *d, size_t out, float *y, size_t ldy,
                            const float *bias)
{
    if (d->bf16 == NULL || p->bf16 == NULL) {
        linear_bf16_forget(p->bf16); /* this product runs f32: x may be made anew */
        return false;
    }
    prof_lap(BERT_OP_OTHER);
    bool ran;
    if (p->by_rows) {
        const size_t rows = p->r1 - p->r0;
        ran = rows == 0 || linear_bf16_run(p->bf16, d->bf16, x + p->r0 * in, rows, in, out,
                                           y + p->r0 * ldy, ldy, bias);
    } else {
        size_t c0, c1;
        bert_share_cols(p, out, &c0, &c1);
        ran = c1 <= c0 || linear_bf16_run_cols(p->bf16, d->bf16, x, p->rows, in, c0, c1, y, ldy,
                                               bias);
    }
    prof_lap(BERT_OP_DENSE);
    return ran;
}

/* bert_linear_share, adding `bias` where the kernel can (NULL: none);
 * returns whether it did. */
static bool linear_share(const struct bert_share *p, const float *x, size_t in,
                         const struct bert_dense *d, size_t out, float *y, size_t ldy,
                         const float *bias)
{
    const size_t rows = p->r1 - p->r0;
    bool biased = false;
    prof_lap(BERT_OP_OTHER);
    if (p->by_rows && rows != 0 && d->int8 != NULL && p->int8 != NULL &&
        linear_int8_run(p->int8, d->int8, x + p->r0 * in, rows, in, out, y + p->r0 * ldy, ldy))
        biased = false;
    else if (bf16_share_bias(p, x, in, d, out, y, ldy, bias))
        biased = bias != NULL;
    else if (p->by_rows)
        biased = linear(p, x + p->r0 * in, rows, in, d, 0, out, y + p->r0 * ldy, ldy, bias);
    else {
        size_t c0, c1;
        bert_share_cols(p, out, &c0, &c1);
        biased = linear(p, x, p->rows, in, d, c0, c1, y, ldy, bias);
    }
    prof_lap(BERT_OP_DENSE);
    return biased;
}

void bert_linear_share(const struct bert_share *p, const float *x, size_t in,
                       const struct bert_dense *d, size_t out, float *y, size_t ldy)
{
    linear_share(p, x, in, d, out, y, ldy, NULL);
}

void bert_linear_share_bias(const struct bert_share *p, const float *x, size_t in,
                            const struct bert_dense *d, size_t out, float *y, size_t ldy,
                            const float *bias, const enum bert_activation *act, bool feeds_next)
{
    const size_t rows = p->r1 - p->r0;
    if (p->by_rows && rows != 0 && d->int8 != NULL && p->int8 != NULL) {
        const struct linear_int8_epilogue ep = {.bias = bias,
                                                .activate = act != NULL,
                                                .act = act ? *act : 0,
                                                .keep_quantized = feeds_next};
        prof_lap(BERT_OP_OTHER);
        if (linear_int8_run_epilogue(p->int8, d->int8, x + p->r0 * in, rows, in, out,
                                     y + p->r0 * ldy, ldy, &ep))
            return;
    }
    /* With an activation to apply, bias and activation make one pass. */
    if (linear_share(p, x, in, d, out, y, ldy, act == NULL ? bias : NULL))
        return;
    size_t c0, c1;
    bert_share_cols(p, out, &c0, &c1);
    const size_t r0 = p->by_rows ? p->r0 : 0, nr = p->by_rows ? rows : p->rows;
    /* A bf16 product that feeds the next reads these rows in bf16; on
     * oneDNN's kernels it takes them as they are made. */
    if (act != NULL && feeds_next && d->bf16 != NULL && p->bf16 != NULL)
        kernel_bias_activation_rounded(y + r0 * ldy + c0, bias + c0, nr, c1 - c0, ldy, *act,
                                       p->by_rows && ldy == out
                                           ? linear_bf16_keep(p->bf16, y + r0 * ldy, nr, out)
                                           : NULL);
    else if (act != NULL)
        kernel_bias_activation(y + r0 * ldy + c0, bias + c0, nr, c1 - c0, ldy, *act);
    else
        kernel_add_bias(y + r0 * ldy + c0, bias + c0, nr, c1 - c0, ldy);
}

void bert_linear_share_norm(const struct bert_share *p, const float *x, size_t in,
                            const struct bert_dense *d, size_t out, float *y,
                            const struct bert_norm *n, bool feeds_next)
{
    const size_t rows = p->r1 - p->r0;
    if (p->by_rows && rows != 0 && d->int8 != NULL && p->int8 != NULL) {
        const struct linear_int8_epilogue ep = {.bias = n->bias,
                                                .residual = n->residual + p->r0 * out,
                                                .gamma = n->gamma,
                                                .beta = n->beta,
                                                .eps = n->eps,
                                                .keep_quantized = feeds_next};
        prof_lap(BERT_OP_OTHER);
        if (linear_int8_run_epilogue(p->int8, d->int8, x + p->r0 * in, rows, in, out,
                                     y + p->r0 * out, out, &ep))
            return;
    }
    bert_linear_share(p, x, in, d, out, y, out);
    if (!p->by_rows)
        bert_team_barrier(n->team);
    /* The next product takes its bf16 rows as they are made (oneDNN). */
    uint16_t *kept = feeds_next && p->by_rows && d->bf16 != NULL && p->bf16 != NULL
                         ? linear_bf16_keep(p->bf16, y + p->r0 * out, rows, out)
                         : NULL;
    kernel_add_layernorm_bf16(y + p->r0 * out, n->residual + p->r0 * out, n->bias, n->gamma,
                              n->beta, rows, out, n->eps, kept);
}

void bert_linear_share_qkv(const struct bert_share *p, const float *x, size_t H,
                           const struct bert_dense *stacked, const float *stacked_bias,
                           const struct bert_dense *const dense[3],
                           const float *const bias[3], float *qkv)
{
    const size_t rows = p->r1 - p->r0;
    if (p->by_rows && rows != 0 && stacked->int8 != NULL && p->int8 != NULL) {
        const struct linear_int8_epilogue ep = {.bias = stacked_bias};
        prof_lap(BERT_OP_OTHER);
        if (linear_int8_run_epilogue(p->int8, stacked->int8, x + p->r0 * H, rows, H, 3 * H,
                                     qkv + p->r0 * 3 * H, 3 * H, &ep))
            return;
    }
    if (bf16_share_bias(p, x, H, stacked, 3 * H, qkv, 3 * H, stacked_bias))
        return;
    for (size_t k = 0; k < 3; k++)
        bert_linear_share_bias(p, x, H, dense[k], H, qkv + k * H, 3 * H, bias[k], NULL, false);
}

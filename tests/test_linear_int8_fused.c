/* The fused int8 paths of model/linear_int8.c against the unfused ones
 * (whose products test_linear_int8 checks against float64):
 *   - an epilogue of bias and exact GELU against linear_int8_run followed
 *     by kernel_bias_activation_rounded (the GELU for rows quantized
 *     next): the same float operations, but the fused
 *     pass may contract the bias add into the dequantizing multiply, so
 *     within 1e-6 of the largest output;
 *   - an epilogue of bias, residual and LayerNorm against
 *     kernel_add_layernorm after the product, within the same 1e-6;
 *   - Q, K and V stacked in one weight against three products with their
 *     biases: the integer sums are the same, so within the same 1e-6;
 *   - kept quantized rows (keep_quantized) read by the next product
 *     against that product quantizing a copy of the same rows: identical,
 *     and dropped by any other run;
 *   - both products padded with zero rows (as on AMX for a few rows), the
 *     second reading kept rows: the same bits as unpadded.
 * Skipped (exit 77) where int8 cannot run.
 *
 * Usage: test_linear_int8_fused */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "check.h"
#include "kernels.h"
#include "linear_int8.h"

#define REL_TOL 1e-6
#define SKIP 77

enum { ROWS = 37, IN = 64, MID = 80, OUT = 48 };

static uint32_t seed = 12345u;

/* Uniform in [-scale, scale) from a fixed LCG: the same data every run. */
static float *random_floats(size_t n, float scale)
{
    float *v = malloc(n * sizeof *v);
    if (v == NULL)
        exit(1);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = scale * ((float)(seed >> 8) / 8388608.0f - 1.0f);
    }
    return v;
}

/* Largest |a - b| over n values, relative to the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0, top = 0.0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]));
        top = fmax(top, fabs((double)b[i]));
    }
    return top > 0.0 ? worst / top : worst;
}

static void check_bias_gelu(struct linear_int8_ctx *ctx, const float *x)
{
    float *w = random_floats(MID * IN, 0.2f), *bias = random_floats(MID, 1.0f);
    float *fused = malloc(ROWS * MID * sizeof *fused), *plain = malloc(ROWS * MID * sizeof *plain);
    struct linear_int8_weight *p = linear_int8_pack(w, MID, IN);
    CHECK(p != NULL && fused != NULL && plain != NULL);
    const struct linear_int8_epilogue ep = {
        .bias = bias, .activate = true, .act = BERT_ACTIVATION_GELU};
    CHECK(linear_int8_run_epilogue(ctx, p, x, ROWS, IN, MID, fused, MID, &ep));
    CHECK(linear_int8_run(ctx, p, x, ROWS, IN, MID, plain, MID));
    kernel_bias_activation_rounded(plain, bias, ROWS, MID, MID, BERT_ACTIVATION_GELU, NULL);
    const double e = rel_diff(fused, plain, ROWS * MID);
    printf("bias + GELU epilogue vs run + kernel_bias_activation_rounded: %.3g of the largest\n",
           e);
    CHECK(e <= REL_TOL);
    linear_int8_weight_free(p);
    free(w), free(bias), free(fused), free(plain);
}

static void check_layernorm(struct linear_int8_ctx *ctx, const float *x)
{
    float *w = random_floats(MID * IN, 0.2f), *bias = random_floats(MID, 1.0f);
    float *res = random_floats(ROWS * MID, 3.0f), *gamma = random_floats(MID, 2.0f);
    float *beta = random_floats(MID, 1.0f);
    float *fused = malloc(ROWS * MID * sizeof *fused), *plain = malloc(ROWS * MID * sizeof *plain);
    struct linear_int8_weight *p = linear_int8_pack(w, MID, IN);
    CHECK(p != NULL && fused != NULL && plain != NULL);
    const struct linear_int8_epilogue ep = {
        .bias = bias, .residual = res, .gamma = gamma, .beta = beta, .eps = 1e-12f};
    CHECK(linear_int8_run_epilogue(ctx, p, x, ROWS, IN, MID, fused, MID, &ep));
    CHECK(linear_int8_run(ctx, p, x, ROWS, IN, MID, plain, MID));
    kernel_add_layernorm(plain, res, bias, gamma, beta, ROWS, MID, 1e-12f);
    const double e = rel_diff(fused, plain, ROWS * MID);
    printf("bias + residual + LayerNorm epilogue vs run + kernel_add_layernorm: %.3g of the "
           "largest\n", e);
    CHECK(e <= REL_TOL);
    linear_int8_weight_free(p);
    free(w), free(bias), free(res), free(gamma), free(beta), free(fused), free(plain);
}

static void check_stacked(struct linear_int8_ctx *ctx, const float *x)
{
    float *w[3], *b[3], *stacked_b = malloc(3 * OUT * sizeof *stacked_b);
    float *fused = malloc(ROWS * 3 * OUT * sizeof *fused);
    float *plain = malloc(ROWS * 3 * OUT * sizeof *plain);
    CHECK(stacked_b != NULL && fused != NULL && plain != NULL);
    for (int k = 0; k < 3; k++) {
        w[k] = random_floats(OUT * IN, 0.3f / (float)(k + 1)); /* different channel scales */
        b[k] = random_floats(OUT, 0.5f);
        memcpy(stacked_b + k * OUT, b[k], OUT * sizeof *b[k]);
        struct linear_int8_weight *p = linear_int8_pack(w[k], OUT, IN);
        CHECK(p != NULL && linear_int8_run(ctx, p, x, ROWS, IN, OUT, plain + k * OUT, 3 * OUT));
        kernel_add_bias(plain + k * OUT, b[k], ROWS, OUT, 3 * OUT);
        linear_int8_weight_free(p);
    }
    struct linear_int8_weight *s = linear_int8_pack_stacked((const float *const *)w, 3, OUT, IN);
    const struct linear_int8_epilogue ep = {.bias = stacked_b};
    CHECK(s != NULL && linear_int8_run_epilogue(ctx, s, x, ROWS, IN, 3 * OUT, fused, 3 * OUT, &ep));
    const double e = rel_diff(fused, plain, ROWS * 3 * OUT);
    printf("stacked Q, K, V vs three products: %.3g of the largest\n", e);
    CHECK(e <= REL_TOL);
    linear_int8_weight_free(s);
    for (int k = 0; k < 3; k++)
        free(w[k]), free(b[k]);
    free(stacked_b), free(fused), free(plain);
}

static void check_kept(struct linear_int8_ctx *ctx, const float *x)
{
    float *w1 = random_floats(MID * IN, 0.2f), *b1 = random_floats(MID, 1.0f);
    float *w2 = random_floats(OUT * MID, 0.2f);
    float *h = malloc(ROWS * MID * sizeof *h), *copy = malloc(ROWS * MID * sizeof *copy);
    float *y_kept = malloc(ROWS * OUT * sizeof *y_kept), *y_fresh = malloc(ROWS * OUT * sizeof *y_fresh);
    struct linear_int8_weight *p1 = linear_int8_pack(w1, MID, IN), *p2 = linear_int8_pack(w2, OUT, MID);
    CHECK(p1 != NULL && p2 != NULL && h != NULL && copy != NULL && y_kept && y_fresh);
    const struct linear_int8_epilogue ep = {
        .bias = b1, .activate = true, .act = BERT_ACTIVATION_GELU, .keep_quantized = true};
    CHECK(linear_int8_run_epilogue(ctx, p1, x, ROWS, IN, MID, h, MID, &ep));
    memcpy(copy, h, ROWS * MID * sizeof *h);
    CHECK(linear_int8_run(ctx, p2, h, ROWS, MID, OUT, y_kept, OUT)); /* reads the kept rows */
    CHECK(linear_int8_run(ctx, p2, copy, ROWS, MID, OUT, y_fresh, OUT)); /* quantizes */
    printf("product of kept rows vs of the same rows quantized again: %.3g\n",
           rel_diff(y_kept, y_fresh, ROWS * OUT));
    CHECK(memcmp(y_kept, y_fresh, ROWS * OUT * sizeof *y_kept) == 0);
    /* Another run in between drops them: h changed since then counts. */
    CHECK(linear_int8_run_epilogue(ctx, p1, x, ROWS, IN, MID, h, MID, &ep));
    CHECK(linear_int8_run(ctx, p1, x, ROWS, IN, MID, copy, MID));
    for (size_t i = 0; i < ROWS * MID; i++)
        h[i] = -h[i];
    memcpy(copy, h, ROWS * MID * sizeof *h);
    CHECK(linear_int8_run(ctx, p2, h, ROWS, MID, OUT, y_kept, OUT));
    CHECK(linear_int8_run(ctx, p2, copy, ROWS, MID, OUT, y_fresh, OUT));
    CHECK(memcmp(y_kept, y_fresh, ROWS * OUT * sizeof *y_kept) == 0);
    /* So does a product of other rows, even from the same pointer. */
    CHECK(linear_int8_run_epilogue(ctx, p1, x, ROWS, IN, MID, h, MID, &ep));
    CHECK(linear_int8_run(ctx, p2, h, ROWS - 1, MID, OUT, y_kept, OUT));
    memcpy(copy, h, ROWS * MID * sizeof *h);
    CHECK(linear_int8_run(ctx, p2, copy, ROWS - 1, MID, OUT, y_fresh, OUT));
    CHECK(memcmp(y_kept, y_fresh, (ROWS - 1) * OUT * sizeof *y_kept) == 0);
    linear_int8_weight_free(p1);
    linear_int8_weight_free(p2);
    free(w1), free(b1), free(w2), free(h), free(copy), free(y_kept), free(y_fresh);
}

static void check_padded(struct linear_int8_ctx *ctx, const float *x)
{
    float *w1 = random_floats(MID * IN, 0.2f), *b1 = random_floats(MID, 1.0f);
    float *w2 = random_floats(OUT * MID, 0.2f);
    float *h = malloc(ROWS * MID * sizeof *h), *h_padded = malloc(ROWS * MID * sizeof *h);
    float *y = malloc(ROWS * OUT * sizeof *y), *y_padded = malloc(ROWS * OUT * sizeof *y);
    struct linear_int8_weight *p1 = linear_int8_pack(w1, MID, IN);
    struct linear_int8_weight *p2 = linear_int8_pack(w2, OUT, MID);
    CHECK(p1 != NULL && p2 != NULL && h != NULL && h_padded != NULL && y != NULL &&
          y_padded != NULL);
    if (p1 == NULL || p2 == NULL || linear_int8_weight_min_rows(p1) == 0 ||
        linear_int8_weight_min_rows(p2) == 0) { /* 0: not even 64 rows have a kernel */
        linear_int8_weight_free(p1);
        linear_int8_weight_free(p2);
        free(w1), free(b1), free(w2), free(h), free(h_padded), free(y), free(y_padded);
        return;
    }
    const struct linear_int8_epilogue ep = {
        .bias = b1, .activate = true, .act = BERT_ACTIVATION_GELU, .keep_quantized = true};
    CHECK(linear_int8_run_epilogue(ctx, p1, x, ROWS, IN, MID, h, MID, &ep));
    CHECK(linear_int8_run(ctx, p2, h, ROWS, MID, OUT, y, OUT));
    linear_int8_weight_pad_to(p1, 64);
    linear_int8_weight_pad_to(p2, 64);
    CHECK(linear_int8_run_epilogue(ctx, p1, x, ROWS, IN, MID, h_padded, MID, &ep));
    CHECK(linear_int8_run(ctx, p2, h_padded, ROWS, MID, OUT, y_padded, OUT)); /* kept rows */
    printf("padded to 64 rows vs not: epilogue %.3g, product of its kept rows %.3g\n",
           rel_diff(h_padded, h, ROWS * MID), rel_diff(y_padded, y, ROWS * OUT));
    CHECK(memcmp(h_padded, h, ROWS * MID * sizeof *h) == 0);
    CHECK(memcmp(y_padded, y, ROWS * OUT * sizeof *y) == 0);
    linear_int8_weight_free(p1);
    linear_int8_weight_free(p2);
    free(w1), free(b1), free(w2), free(h), free(h_padded), free(y), free(y_padded);
}

int main(void)
{
    char why[200];
    if (!bert_int8_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return SKIP;
    }
    struct linear_int8_ctx *ctx = linear_int8_ctx_new(ROWS, MID, 3 * OUT, 3 * OUT);
    float *x = random_floats(ROWS * IN, 2.0f);
    CHECK(ctx != NULL);
    if (ctx != NULL) {
        check_bias_gelu(ctx, x);
        check_layernorm(ctx, x);
        check_stacked(ctx, x);
        check_kept(ctx, x);
        check_padded(ctx, x);
    }
    linear_int8_ctx_free(ctx);
    free(x);
    return check_exit();
}

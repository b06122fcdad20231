/* model/linear_bf16.c on oneDNN's kernels, the path AMX machines take (run
 * here through linear_bf16_use_onednn where ours would run), against a
 * float64 product of the same bf16-rounded inputs: row counts of 1 to 100,
 * contiguous and strided output rows (strided ones land in the context
 * first; their padding must stay untouched), a bias added as one float
 * addition after each sum; and products padded with zero rows (as on AMX
 * for a few rows, linear_bf16_weight_min_rows) giving the same bits; and
 * rows kept in bf16 by the LayerNorm and activation kernels that finish
 * them (linear_bf16_keep) read by the next product: the same bits as that
 * product converting a copy, and dropped by any other run.
 * Skipped (exit 77) where oneDNN has no bf16 kernels. On AMX, which no
 * session has run this on yet, a shape or row count oneDNN refuses is
 * reported, not failed (the engine would run it in f32). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bert.h"
#include "check.h"
#include "kernels.h"
#include "linear_bf16.h"
#include "linear_check.h"
#include "safetensors.h"
#define TEST_RANDOM_SEED 5151
#include "test_random.h"

#define SKIP 77

static double as_bf16(float f)
{
    return bert_bf16_to_f32(bert_f32_to_bf16(f));
}

static void fill_untouched(float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = LINEAR_CHECK_UNTOUCHED;
}

static void check_shape(size_t rows, size_t in, size_t out, size_t ldy)
{
    float *x = random_floats(rows * in), *w = random_floats(out * in), *bias = random_floats(out);
    float *y = malloc(rows * ldy * sizeof *y), *y2 = malloc(rows * ldy * sizeof *y2);
    struct linear_bf16_weight *p = linear_bf16_pack(w, out, in);
    struct linear_bf16_ctx *ctx = linear_bf16_ctx_new(rows, in, out, out);
    CHECK(ctx != NULL && x != NULL && w != NULL && bias != NULL && y != NULL && y2 != NULL);
    if (ctx == NULL || x == NULL || w == NULL || bias == NULL || y == NULL || y2 == NULL)
        goto done;
    CHECK(!linear_bf16_ctx_splits_cols(ctx));
    fill_untouched(y, rows * ldy);
    const bool ran = p != NULL && linear_bf16_run(ctx, p, x, rows, in, out, y, ldy, NULL);
    if (!ran && strcmp(bert_bf16_isa(), "AMX") == 0) {
        printf("%zu x %zu -> %zu: refused on AMX (padded below %zu)\n", rows, in, out,
               p != NULL ? linear_bf16_weight_min_rows(p) : 0);
        goto done;
    }
    CHECK(ran);
    if (!ran)
        goto done;
    /* The products of bf16 values are exact in f32; only the f32 sums
     * round, terms below 0.25 in magnitude. */
    size_t stray = 0;
    const double worst = linear_check_range(x, w, y, rows, in, ldy, 0, out, as_bf16, &stray);
    printf("%zu x %zu -> %zu, ldy %zu: worst error %.3g, %zu stray writes (padded below %zu)\n",
           rows, in, out, ldy, worst, stray, linear_bf16_weight_min_rows(p));
    CHECK(worst <= 1e-6 * (double)in);
    CHECK_INT_EQ(stray, 0);
    fill_untouched(y2, rows * ldy);
    CHECK(linear_bf16_run(ctx, p, x, rows, in, out, y2, ldy, bias));
    CHECK_INT_EQ(linear_check_bias(y, y2, bias, rows, ldy, 0, out), 0);
    /* Padded with zero rows up to 64: the same bits, nothing else written
     * (where 64 rows have a kernel). */
    if (rows < 64 && linear_bf16_weight_min_rows(p) != 0) {
        const size_t was = linear_bf16_weight_min_rows(p);
        linear_bf16_weight_pad_to(p, 64);
        CHECK_INT_EQ(linear_bf16_weight_min_rows(p), 64);
        fill_untouched(y2, rows * ldy);
        CHECK(linear_bf16_run(ctx, p, x, rows, in, out, y2, ldy, NULL));
        CHECK(memcmp(y, y2, rows * ldy * sizeof *y) == 0);
        linear_bf16_weight_pad_to(p, was);
    }
    /* Refused before reading x: more rows than the context has room for
     * (it has room for 64 at least, for padding), a shape the weight does
     * not have. */
    CHECK(!linear_bf16_run(ctx, p, x, (rows < 64 ? 64 : rows) + 1, in, out, y2, ldy, NULL));
    CHECK(!linear_bf16_run(ctx, p, x, rows, in + 1, out, y2, ldy, NULL));
done:
    linear_bf16_ctx_free(ctx);
    linear_bf16_weight_free(p);
    free(x), free(w), free(bias), free(y), free(y2);
}

/* y_kept: the product of h read from its kept bf16 rows; y_fresh: of a
 * copy of h, converted; the same bits. */
static void check_reads_kept(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *p,
                             const float *h, size_t rows, size_t in, size_t out, const char *what)
{
    float *copy = malloc(rows * in * sizeof *copy), *y_kept = malloc(rows * out * sizeof *y_kept);
    float *y_fresh = malloc(rows * out * sizeof *y_fresh);
    CHECK(copy != NULL && y_kept != NULL && y_fresh != NULL);
    if (copy != NULL && y_kept != NULL && y_fresh != NULL) {
        memcpy(copy, h, rows * in * sizeof *copy);
        CHECK(linear_bf16_run(ctx, p, h, rows, in, out, y_kept, out, NULL));
        CHECK(linear_bf16_run(ctx, p, copy, rows, in, out, y_fresh, out, NULL));
        const bool same = memcmp(y_kept, y_fresh, rows * out * sizeof *y_kept) == 0;
        printf("%s: product of the kept rows %s that of the rows converted again\n", what,
               same ? "equals" : "DIFFERS FROM");
        CHECK(same);
    }
    free(copy), free(y_kept), free(y_fresh);
}

static void check_kept(void)
{
    enum { R = 37, IN = 96, OUT = 80 };
    float *w = random_floats(OUT * IN), *h = random_floats(R * IN), *res = random_floats(R * IN);
    float *gamma = random_floats(IN), *beta = random_floats(IN), *bias = random_floats(IN);
    struct linear_bf16_weight *p = linear_bf16_pack(w, OUT, IN);
    struct linear_bf16_ctx *ctx = linear_bf16_ctx_new(R, IN, OUT, OUT);
    float probe[OUT * R];
    if (strcmp(bert_bf16_isa(), "AMX") == 0 && ctx != NULL && h != NULL &&
        (p == NULL || !linear_bf16_run(ctx, p, h, R, IN, OUT, probe, OUT, NULL))) {
        printf("kept rows: %u rows of %ux%u refused on AMX\n", (unsigned)R, (unsigned)IN,
               (unsigned)OUT);
        goto done;
    }
    CHECK(p != NULL && ctx != NULL);
    if (p == NULL || ctx == NULL || w == NULL || h == NULL || res == NULL || gamma == NULL ||
        beta == NULL || bias == NULL)
        goto done;
    uint16_t *keep = linear_bf16_keep(ctx, h, R, IN);
    CHECK(keep != NULL);
    if (keep == NULL)
        goto done;
    kernel_add_layernorm_bf16(h, res, bias, gamma, beta, R, IN, 1e-5f, keep);
    /* It reads the kept rows, not h: with h negated behind its back, the
     * product is still that of h as it was kept. */
    float *was = malloc(R * IN * sizeof *was), *y_kept = malloc(R * OUT * sizeof *y_kept);
    float *y_was = malloc(R * OUT * sizeof *y_was);
    CHECK(was != NULL && y_kept != NULL && y_was != NULL);
    if (was != NULL && y_kept != NULL && y_was != NULL) {
        memcpy(was, h, R * IN * sizeof *was);
        for (size_t i = 0; i < (size_t)R * IN; i++)
            h[i] = -h[i];
        CHECK(linear_bf16_run(ctx, p, h, R, IN, OUT, y_kept, OUT, NULL));
        CHECK(linear_bf16_run(ctx, p, was, R, IN, OUT, y_was, OUT, NULL));
        CHECK(memcmp(y_kept, y_was, R * OUT * sizeof *y_kept) == 0);
        memcpy(h, was, R * IN * sizeof *h);
    }
    free(was), free(y_kept), free(y_was);
    keep = linear_bf16_keep(ctx, h, R, IN);
    kernel_add_layernorm_bf16(h, res, bias, gamma, beta, R, IN, 1e-5f, keep);
    check_reads_kept(ctx, p, h, R, IN, OUT, "LayerNorm");
    keep = linear_bf16_keep(ctx, h, R, IN);
    kernel_bias_activation_bf16(h, bias, R, IN, BERT_ACTIVATION_GELU, keep);
    check_reads_kept(ctx, p, h, R, IN, OUT, "bias + GELU");
    /* Another run in between drops them: h changed since then counts. */
    keep = linear_bf16_keep(ctx, h, R, IN);
    kernel_bias_activation_bf16(h, bias, R, IN, BERT_ACTIVATION_GELU, keep);
    float *y = malloc(R * OUT * sizeof *y);
    CHECK(y != NULL && linear_bf16_run(ctx, p, res, R, IN, OUT, y, OUT, NULL));
    for (size_t i = 0; i < (size_t)R * IN; i++)
        h[i] = -h[i];
    check_reads_kept(ctx, p, h, R, IN, OUT, "after another run");
    /* So does linear_bf16_forget. */
    keep = linear_bf16_keep(ctx, h, R, IN);
    kernel_bias_activation_bf16(h, bias, R, IN, BERT_ACTIVATION_GELU, keep);
    linear_bf16_forget(ctx);
    for (size_t i = 0; i < (size_t)R * IN; i++)
        h[i] = -h[i];
    check_reads_kept(ctx, p, h, R, IN, OUT, "after forget");
    free(y);
done:
    linear_bf16_ctx_free(ctx);
    linear_bf16_weight_free(p);
    free(w), free(h), free(res), free(gamma), free(beta), free(bias);
}

int main(void)
{
    char why[200];
    if (!bert_bf16_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return SKIP;
    }
    if (strcmp(bert_bf16_isa(), "AMX") != 0 && !linear_bf16_use_onednn(true)) {
        printf("skipped: oneDNN has no bf16 kernels here\n");
        return SKIP;
    }
    const size_t rows[] = {1, 5, 31, 40, 100};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        check_shape(rows[r], 96, 80, 80);
        check_shape(rows[r], 128, 64, 64 + 7);
    }
    check_kept();
    return check_exit();
}

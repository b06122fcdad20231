/* model/linear_bf16.c on oneDNN's kernels, the path AMX machines take (run
 * here through linear_bf16_use_onednn where ours would run), against a
 * float64 product of the same bf16-rounded inputs: row counts of 1 to 100,
 * contiguous and strided output rows (strided ones land in the context
 * first; their padding must stay untouched), a bias added as one float
 * addition after each sum; and products padded with zero rows (as on AMX
 * for a few rows, linear_bf16_weight_min_rows) giving the same bits.
 * Skipped (exit 77) where oneDNN has no bf16 kernels. On AMX, which no
 * session has run this on yet, a shape or row count oneDNN refuses is
 * reported, not failed (the engine would run it in f32). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bert.h"
#include "check.h"
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
    return check_exit();
}

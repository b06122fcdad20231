/* model/linear_bf16_avx512.c against a float64 product of the same
 * bf16-rounded inputs: every row-block remainder (rows 1..30, and rows
 * across the 224-row pass), output widths that leave a partial last panel
 * (1, 15, 16, 17, 33, 70), inner lengths odd and even, across the 32-input
 * packing step and the 768-input pass (1, 2, 17, 31, 33, 767, 768, 769,
 * 1540), column ranges that start on a later panel, and an output row
 * stride wider than the columns, whose padding must stay untouched. Also
 * checks that two calls over complementary column ranges, or rows computed
 * together and one at a time, give the very floats one call gives (the
 * team's column and row splits), and that a bias joins each output as one
 * float addition after its sum. Skipped (exit 77) where the CPU has no
 * AVX512_BF16: the kernel runs only there. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "linear_check.h"
#include "linear_bf16_avx512.h"
#include "safetensors.h"
#define TEST_RANDOM_SEED 4243
#include "test_random.h"

static double as_bf16(float f)
{
    return bert_bf16_to_f32(bert_f32_to_bf16(f));
}

static uint32_t buf[LINEAR_BF16_AVX512_BUFFER_WORDS] __attribute__((aligned(64)));

/* With a bias, over the columns from the second panel (all when there is
 * one), into y2; `y` holds the product without bias. */
static void check_bias(const struct linear_bf16_avx512_weight *p, const float *x, size_t rows,
                       size_t out, size_t ldy, const float *y, float *y2)
{
    float *bias = random_floats(out);
    const size_t c0 = out > LINEAR_BF16_PANEL ? LINEAR_BF16_PANEL : 0;
    for (size_t i = 0; i < rows * ldy; i++)
        y2[i] = LINEAR_CHECK_UNTOUCHED;
    linear_bf16_avx512_run(p, x, rows, c0, out, y2, ldy, bias, buf);
    CHECK_INT_EQ(linear_check_bias(y, y2, bias, rows, ldy, c0, out), 0);
    free(bias);
}

static void check_shape(size_t rows, size_t in, size_t out)
{
    const size_t ldy = out + 3;
    float *x = random_floats(rows * in), *w = random_floats(out * in);
    float *y = malloc(rows * ldy * sizeof *y), *y2 = malloc(rows * ldy * sizeof *y2);
    struct linear_bf16_avx512_weight *p = linear_bf16_avx512_pack(w, out, in);
    CHECK(p != NULL);
    if (p == NULL || x == NULL || w == NULL || y == NULL || y2 == NULL)
        goto done;
    for (size_t i = 0; i < rows * ldy; i++)
        y[i] = LINEAR_CHECK_UNTOUCHED;
    linear_bf16_avx512_run(p, x, rows, 0, out, y, ldy, NULL, buf);
    /* The products of bf16 values are exact in f32; only the f32 sums
     * round, terms below 0.25 in magnitude. */
    const double tol = 1e-6 * (double)in;
    size_t stray = 0;
    double worst = linear_check_range(x, w, y, rows, in, ldy, 0, out, as_bf16, &stray);
    /* From the second panel on: the first panel's columns stay untouched. */
    if (out > LINEAR_BF16_PANEL) {
        for (size_t i = 0; i < rows * ldy; i++)
            y2[i] = LINEAR_CHECK_UNTOUCHED;
        linear_bf16_avx512_run(p, x, rows, LINEAR_BF16_PANEL, out, y2, ldy, NULL, buf);
        double w2 = linear_check_range(x, w, y2, rows, in, ldy, LINEAR_BF16_PANEL, out, as_bf16,
                                       &stray);
        worst = w2 > worst ? w2 : worst;
        /* The two halves of a column split, together, are the whole call. */
        linear_bf16_avx512_run(p, x, rows, 0, LINEAR_BF16_PANEL, y2, ldy, NULL, buf);
        CHECK(memcmp(y, y2, rows * ldy * sizeof *y) == 0);
    }
    check_bias(p, x, rows, out, ldy, y, y2);
    if (worst > tol || stray != 0)
        fprintf(stderr, "rows %zu in %zu out %zu: worst error %g, %zu stray writes\n", rows, in,
                out, worst, stray);
    CHECK(worst <= tol);
    CHECK_INT_EQ(stray, 0);
done:
    linear_bf16_avx512_free(p);
    free(x);
    free(w);
    free(y);
    free(y2);
}

static void check_row_invariance(void)
{
    const size_t rows = 37, in = 600, out = 70;
    float *x = random_floats(rows * in), *w = random_floats(out * in);
    float *y = malloc(rows * out * sizeof *y), *y1 = malloc(rows * out * sizeof *y1);
    struct linear_bf16_avx512_weight *p = linear_bf16_avx512_pack(w, out, in);
    CHECK(p != NULL && x != NULL && w != NULL && y != NULL && y1 != NULL);
    if (p != NULL && x != NULL && w != NULL && y != NULL && y1 != NULL) {
        linear_bf16_avx512_run(p, x, rows, 0, out, y, out, NULL, buf);
        for (size_t m = 0; m < rows; m++)
            linear_bf16_avx512_run(p, x + m * in, 1, 0, out, y1 + m * out, out, NULL, buf);
        CHECK(memcmp(y, y1, rows * out * sizeof *y) == 0);
    }
    linear_bf16_avx512_free(p);
    free(x);
    free(w);
    free(y);
    free(y1);
}

int main(void)
{
    if (!linear_bf16_avx512_available()) {
        fprintf(stderr, "no AVX512_BF16: nothing to test\n");
        return 77;
    }
    CHECK(linear_bf16_avx512_pack((const float[]){1.0f}, 0, 1) == NULL);
    const size_t ins[] = {1, 2, 17, 31, 33, 767, 768, 769, 1540};
    const size_t outs[] = {1, 15, 16, 17, 33, 70};
    for (size_t rows = 1; rows <= 30; rows++)
        for (size_t i = 0; i < sizeof ins / sizeof *ins; i++)
            for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
                check_shape(rows, ins[i], outs[o]);
    const size_t long_rows[] = {223, 224, 225, 300, 460};
    for (size_t r = 0; r < sizeof long_rows / sizeof *long_rows; r++)
        check_shape(long_rows[r], 769, 33);
    check_row_invariance();
    return check_exit();
}

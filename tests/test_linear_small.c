/* model/linear_small.c against a float64 product, over every block shape
 * and remainder: rows 1..BERT_LINEAR_SMALL_ROWS, output columns not a
 * multiple of the block, input lengths with and without a vector tail, and
 * an output row stride wider than the columns. */
#include <stdint.h>

#include "check.h"
#include "linear_check.h"
#include "linear_small.h"

#define TEST_RANDOM_SEED 12345
#include "test_random.h"

static void check_shape(size_t rows, size_t in, size_t out)
{
    const size_t ldy = out + 3;
    float *x = malloc(rows * in * sizeof *x), *w = malloc(out * in * sizeof *w);
    float *y = malloc(rows * ldy * sizeof *y);
    for (size_t i = 0; i < rows * in; i++)
        x[i] = uniform();
    for (size_t i = 0; i < out * in; i++)
        w[i] = uniform();
    for (size_t i = 0; i < rows * ldy; i++)
        y[i] = LINEAR_CHECK_UNTOUCHED; /* the padding must stay untouched */
    bert_linear_small(x, rows, in, w, out, y, ldy);
    size_t padding_touched = 0;
    const double worst = linear_check_range(x, w, y, rows, in, ldy, 0, out, NULL, &padding_touched);
    /* Products of values below 0.5 in magnitude: float32 rounding over
     * `in` terms stays far below this. */
    if (worst > 1e-6 * (double)in)
        fprintf(stderr, "rows %zu in %zu out %zu: worst error %g\n", rows, in, out, worst);
    CHECK(worst <= 1e-6 * (double)in);
    CHECK_INT_EQ(padding_touched, 0);
    free(x);
    free(w);
    free(y);
}

int main(void)
{
    const size_t ins[] = {1, 15, 16, 17, 64, 100, 384};
    const size_t outs[] = {1, 3, 4, 5, 8, 13, 64};
    for (size_t rows = 1; rows <= BERT_LINEAR_SMALL_ROWS; rows++)
        for (size_t i = 0; i < sizeof ins / sizeof *ins; i++)
            for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
                check_shape(rows, ins[i], outs[o]);
    return check_exit();
}

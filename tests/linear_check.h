/* What the dense-kernel tests check of a product's output: its worst error
 * against a float64 product over a column range, that nothing outside
 * that range was written (the caller fills y with LINEAR_CHECK_UNTOUCHED
 * before the call), and that a bias the kernel adds is one float addition
 * after each sum. */
#ifndef LINEAR_CHECK_H
#define LINEAR_CHECK_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#define LINEAR_CHECK_UNTOUCHED 1e30f

/* Worst |y - x W^T| over columns [c0, c1) of y (rows, ldy apart), with x
 * (rows, in) and W (out, in) each passed through `input` first (NULL: as
 * they are, e.g. a bf16 rounding for a kernel that rounds its inputs);
 * adds to *stray the entries outside [c0, c1) no longer untouched. */
static inline double linear_check_range(const float *x, const float *w, const float *y,
                                        size_t rows, size_t in, size_t ldy, size_t c0, size_t c1,
                                        double (*input)(float), size_t *stray)
{
    double worst = 0.0;
    for (size_t m = 0; m < rows; m++)
        for (size_t n = 0; n < ldy; n++) {
            if (n < c0 || n >= c1) {
                *stray += y[m * ldy + n] != LINEAR_CHECK_UNTOUCHED;
                continue;
            }
            double want = 0.0;
            for (size_t k = 0; k < in; k++) {
                const float a = x[m * in + k], b = w[n * in + k];
                want += input ? input(a) * input(b) : (double)a * b;
            }
            const double err = fabs(y[m * ldy + n] - want);
            worst = err > worst ? err : worst;
        }
    return worst;
}

/* Entries of `biased` (rows, ldy apart) other than y + bias over columns
 * [c0, c1) and LINEAR_CHECK_UNTOUCHED elsewhere, compared bit for bit; y is
 * the same product without bias. */
static inline size_t linear_check_bias(const float *y, const float *biased, const float *bias,
                                       size_t rows, size_t ldy, size_t c0, size_t c1)
{
    size_t wrong = 0;
    for (size_t m = 0; m < rows; m++)
        for (size_t n = 0; n < ldy; n++) {
            const float want =
                n >= c0 && n < c1 ? y[m * ldy + n] + bias[n] : LINEAR_CHECK_UNTOUCHED;
            wrong += memcmp(&biased[m * ldy + n], &want, sizeof want) != 0;
        }
    return wrong;
}

#endif

/* model/attention.c's two paths (where AVX-512 runs: 8 query rows per
 * block, keys transposed 16 x 16 in registers; elsewhere 4 rows, keys one
 * by one) against a float64 softmax(q k^T scale) v written here, for
 * sequence lengths that leave every remainder of a block, head sizes with
 * and without a partial vector, with a sliding window and a relative bias;
 * and against each other: each row's sums run in the same order, so the two
 * must agree exactly. Tolerance to float64: 2e-6 of the largest output
 * (float32 sums of up to 130 products). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"

#define TOL 2e-6

static uint32_t seed = 777u;

static float uniform(void)
{
    seed = seed * 1664525u + 1013904223u;
    return (float)(seed >> 8) / 8388608.0f - 1.0f;
}

/* Float64 attention of row i over keys j with |i - j| <= half. */
static void reference(const float *q, const float *k, const float *v, size_t ld, size_t n,
                      size_t d, float scale, size_t half, const float *bias, double *out)
{
    double *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        double top = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            const size_t dist = i > j ? i - j : j - i;
            p[j] = -INFINITY;
            if (dist > half)
                continue;
            double dot = 0.0;
            for (size_t c = 0; c < d; c++)
                dot += (double)(q[i * ld + c] * scale) * k[j * ld + c];
            p[j] = dot + (bias ? bias[(ptrdiff_t)j - (ptrdiff_t)i] : 0.0);
            top = fmax(top, p[j]);
        }
        for (size_t j = 0; j < n; j++)
            sum += p[j] = p[j] == -INFINITY ? 0.0 : exp(p[j] - top);
        for (size_t c = 0; c < d; c++) {
            double acc = 0.0;
            for (size_t j = 0; j < n; j++)
                acc += p[j] * v[j * ld + c];
            out[i * d + c] = acc / sum;
        }
    }
    free(p);
}

static void check_shape(size_t n, size_t d, size_t half, int with_bias)
{
    const size_t ld = 3 * d + 5;
    float *qkv = malloc(n * ld * sizeof *qkv), *bias_table = malloc((2 * n + 1) * sizeof *bias_table);
    float *wide = malloc(n * d * sizeof *wide), *narrow = malloc(n * d * sizeof *narrow);
    double *want = malloc(n * d * sizeof *want);
    float *work = aligned_alloc(64, ((attention_workspace_floats(n, d) * sizeof(float) + 63) / 64) * 64);
    CHECK(qkv && bias_table && wide && narrow && want && work);
    for (size_t i = 0; i < n * ld; i++)
        qkv[i] = 2.0f * uniform();
    for (size_t i = 0; i < 2 * n + 1; i++)
        bias_table[i] = uniform();
    const float *bias = with_bias ? bias_table + n : NULL;
    const float scale = 1.0f / sqrtf((float)d);
    attention_head_window(qkv, qkv + d, qkv + 2 * d, ld, n, d, scale, wide, d, work, half, bias);
    attention_head_window_narrow(qkv, qkv + d, qkv + 2 * d, ld, n, d, scale, narrow, d, work,
                                 half, bias);
    reference(qkv, qkv + d, qkv + 2 * d, ld, n, d, scale, half, bias, want);
    double worst = 0.0, top = 0.0, worst_narrow = 0.0;
    for (size_t i = 0; i < n * d; i++) {
        worst = fmax(worst, fabs(wide[i] - want[i]));
        worst_narrow = fmax(worst_narrow, fabs(narrow[i] - want[i]));
        top = fmax(top, fabs(want[i]));
    }
    printf("n %3zu d %2zu window (0: none) %zu bias %d: max |attention - float64| %.3g (largest %.3g)\n",
           n, d, half == SIZE_MAX ? 0 : half, with_bias, worst, top);
    CHECK(worst <= TOL * top && worst_narrow <= TOL * top);
    CHECK(memcmp(wide, narrow, n * d * sizeof *wide) == 0);
    free(qkv), free(bias_table), free(wide), free(narrow), free(want), free(work);
}

int main(void)
{
    const size_t lengths[] = {1, 3, 8, 13, 64, 127};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        check_shape(lengths[i], 64, SIZE_MAX, 0);
        check_shape(lengths[i], 40, SIZE_MAX, 1);
        check_shape(lengths[i], 32, 5, 0);
    }
    return check_exit();
}

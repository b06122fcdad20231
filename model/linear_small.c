#include "linear_small.h"

#include <string.h>

#include "simd.h"

/* Weight rows (output columns) and input rows per register block: 4 x 6
 * accumulators of 16 floats, plus 4 weight vectors and one input vector,
 * fit AVX-512's 32 registers. */
#define BLOCK_N 4
#define BLOCK_M 6
#define LANES 16

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));
typedef float half_vec __attribute__((vector_size(LANES / 2 * sizeof(float))));
typedef float quarter_vec __attribute__((vector_size(LANES / 4 * sizeof(float))));

static inline __attribute__((always_inline)) vec load(const float *p)
{
    vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A tree of adds, not a chain of LANES dependent ones. */
static inline __attribute__((always_inline)) float sum_lanes(vec v)
{
    half_vec h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    quarter_vec q = __builtin_shufflevector(h, h, 0, 1, 2, 3) +
                    __builtin_shufflevector(h, h, 4, 5, 6, 7);
    return (q[0] + q[2]) + (q[1] + q[3]);
}

/* y[m][n] for m < mb, n < nb: LANES-wide partial dot products of input rows
 * and weight rows over `in`, summed at the end. Touches `prefetch` (the
 * next weight block, or NULL) as it goes, so it arrives from memory while
 * this block computes. */
static inline __attribute__((always_inline)) void block(const float *x, size_t in, const float *w,
                                                        const float *prefetch, float *y,
                                                        size_t ldy, int mb, int nb)
{
    vec acc[BLOCK_M][BLOCK_N] = {{{0}}};
    const size_t in_vec = in / LANES * LANES;
    for (size_t k = 0; k < in_vec; k += LANES) {
        vec wv[BLOCK_N];
        for (int n = 0; n < nb; n++)
            wv[n] = load(w + (size_t)n * in + k);
        if (prefetch != NULL)
            for (int n = 0; n < BLOCK_N; n++)
                __builtin_prefetch(prefetch + (size_t)n * in + k);
        for (int m = 0; m < mb; m++) {
            const vec xv = load(x + (size_t)m * in + k);
            for (int n = 0; n < nb; n++)
                acc[m][n] += xv * wv[n];
        }
    }
    for (int m = 0; m < mb; m++)
        for (int n = 0; n < nb; n++) {
            float s = sum_lanes(acc[m][n]);
            for (size_t k = in_vec; k < in; k++)
                s += x[(size_t)m * in + k] * w[(size_t)n * in + k];
            y[(size_t)m * ldy + n] = s;
        }
}

/* Every block shape, each with constant bounds so that its accumulators
 * stay in registers. */
static inline __attribute__((always_inline)) void any_block(const float *x, size_t in,
                                                            const float *w, const float *prefetch,
                                                            float *y, size_t ldy, int mb, int nb)
{
#define SHAPE(M, N)                                  \
    if (mb == (M) && nb == (N)) {                    \
        block(x, in, w, prefetch, y, ldy, (M), (N)); \
        return;                                      \
    }
#define SHAPES(M) SHAPE(M, 4) SHAPE(M, 3) SHAPE(M, 2) SHAPE(M, 1)
    SHAPES(6) SHAPES(5) SHAPES(4) SHAPES(3) SHAPES(2) SHAPES(1)
#undef SHAPES
#undef SHAPE
}

BERT_HOT
void bert_linear_small(const float *x, size_t rows, size_t in, const float *w, size_t out,
                       float *y, size_t ldy)
{
    /* Each block of weight rows comes from memory once, on the pass over
     * the first input rows, and from cache for the others. */
    for (size_t n = 0; n < out; n += BLOCK_N) {
        const int nb = out - n < BLOCK_N ? (int)(out - n) : BLOCK_N;
        const float *next = n + 2 * BLOCK_N <= out ? w + (n + BLOCK_N) * in : NULL;
        for (size_t m = 0; m < rows; m += BLOCK_M) {
            const int mb = rows - m < BLOCK_M ? (int)(rows - m) : BLOCK_M;
            any_block(x + m * in, in, w + n * in, m == 0 ? next : NULL, y + m * ldy + n, ldy, mb,
                      nb);
        }
    }
}

/* Vector math for the hot loops: exp, erf and tanh on 16-float vectors
 * (GCC vector extensions; one AVX-512 register, two AVX or four SSE ones),
 * with scalar twins that give the same values for loop tails. Inline only:
 * each dispatched clone (simd.h) gets its own copy. */
#ifndef BERT_VMATH_H
#define BERT_VMATH_H

#include <stdint.h>
#include <string.h>

#define VLANES 16
typedef float vf16 __attribute__((vector_size(VLANES * sizeof(float))));
typedef int32_t vi16 __attribute__((vector_size(VLANES * sizeof(int32_t))));

#define VINLINE static inline __attribute__((always_inline))

VINLINE vf16 vf16_load(const float *p)
{
    vf16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

VINLINE void vf16_store(float *p, vf16 v)
{
    memcpy(p, &v, sizeof v);
}

VINLINE vf16 vf16_splat(float x)
{
    return (vf16){0} + x;
}

/* Lanes of a where mask (a comparison's all-ones/all-zeros lanes) is set,
 * else of b. */
VINLINE vf16 vf16_select(vi16 mask, vf16 a, vf16 b)
{
    return (vf16)((mask & (vi16)a) | (~mask & (vi16)b));
}

VINLINE vf16 vf16_min(vf16 a, vf16 b)
{
    return vf16_select(a < b, a, b);
}

VINLINE vf16 vf16_max(vf16 a, vf16 b)
{
    return vf16_select(a > b, a, b);
}

VINLINE vf16 vf16_abs(vf16 a)
{
    return (vf16)((vi16)a & 0x7fffffff);
}

/* a with the sign of s (s's sign bit replaces a's). */
VINLINE vf16 vf16_copysign(vf16 a, vf16 s)
{
    return (vf16)(((vi16)a & 0x7fffffff) | ((vi16)s & (int32_t)0x80000000));
}

VINLINE float vf16_sum(vf16 v)
{
    float s = 0.0f;
    for (int i = 0; i < VLANES; i++)
        s += v[i];
    return s;
}

VINLINE float vf16_hmax(vf16 v)
{
    float m = v[0];
    for (int i = 1; i < VLANES; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* Polynomials in Estrin's form: pairs of terms in parallel, then powers of
 * x, so a degree-9 chain is five operations deep instead of ten (the exact
 * GELU's loop is bound by its dependency chain, not its operation count). */

/* exp(x) for x in [-87, 88]: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite
 * split of ln2), n = x / ln2 rounded to nearest by adding 1.5 2^23 (whose
 * low mantissa bits then hold n + 127, shifted into the exponent field for
 * 2^n), e^r by a degree-6 polynomial, 1 + r + r^2 Q(r), Q fitted in float64
 * for relative error on [-ln2/2, ln2/2] (7e-9; the Taylor terms' was 1.2e-7). */
VINLINE vf16 vf16_exp_reduced(vf16 x)
{
    const float shift = 12582912.0f + 127.0f; /* 1.5 2^23, plus the exponent bias */
    const vf16 shifted = x * 1.44269504f + shift;
    const vf16 n = shifted - shift;
    vf16 r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    const vf16 r2 = r * r;
    const vf16 p = (1.0f + r) + r2 * ((0.5f + r * 1.666654335e-01f) +
                                      r2 * ((4.166676591e-02f + r * 8.366218844e-03f) +
                                            r2 * 1.390379089e-03f));
    return p * (vf16)((vi16)shifted << 23);
}

/* exp(x), inputs clamped to the finite float range. */
VINLINE vf16 vf16_exp(vf16 x)
{
    return vf16_exp_reduced(vf16_min(vf16_max(x, vf16_splat(-87.0f)), vf16_splat(88.0f)));
}

/* The same values for x <= 88 and NaN, one operation fewer: for exponents
 * that are never positive (erfc's, softmax's x - max). */
VINLINE vf16 vf16_exp_nonpositive(vf16 x)
{
    return vf16_exp_reduced(vf16_max(x, vf16_splat(-87.0f)));
}

/* erf and erfc to float precision (relative error 2e-7 to 5e-7,
 * tests/test_vmath.c against libm), from two least-squares Chebyshev fits
 * made in float64 (errors 1e-9 and 5e-8):
 *   erf(u) = u S(u^2) for u < 1, S of degree 6 (fitted on [0, 1]);
 *   erfc(u) = t exp(-u^2 + P(t)), t = 2 / (2 + u), P of degree 9 (the form
 *   of Numerical Recipes' erfc, refitted on [0, 10]), for every u >= 0;
 * so neither erf near 0 nor erfc in the tail is a difference of nearly
 * equal numbers. */
VINLINE vf16 vf16_erf_small(vf16 u)
{
    const vf16 w = u * u;
    vf16 s = vf16_splat(7.882497114998858e-05f);
    s = s * w - 8.018854994572156e-04f;
    s = s * w + 5.189311942923017e-03f;
    s = s * w - 2.685432879620806e-02f;
    s = s * w + 1.128359746349180e-01f;
    s = s * w - 3.761262690358082e-01f;
    s = s * w + 1.128379165881502f;
    return u * s;
}

/* scale erfc(u) for u >= 0 (NaN stays NaN), given u2 = u^2 as closely as
 * the caller has it (exp(-u2) magnifies its error by u2); the scale is
 * applied off the dependency chain. */
VINLINE vf16 vf16_erfc_scaled(vf16 u, vf16 u2, float scale)
{
    const vf16 t = 2.0f / (2.0f + u);
    const vf16 t2 = t * t, t4 = t2 * t2;
    const vf16 p98 = 1.4493021377180904e-01f * t - 6.8082717817161731e-01f;
    const vf16 p76 = 1.1567337583013289e+00f * t - 6.9625190081127530e-01f;
    const vf16 p54 = -8.0280430341081593e-02f * t + 1.2675852563632708e-03f;
    const vf16 p32 = 3.4602800424741668e-02f * t + 3.8664041205296268e-01f;
    const vf16 p10 = 9.9863278335035410e-01f * t - 1.2654479969023029e+00f;
    const vf16 p = ((p98 * t2 + p76) * t4 + (p54 * t2 + p32)) * t2 + p10;
    return (scale * t) * vf16_exp_nonpositive(p - u2);
}

/* erfc(u) for u >= 0 (NaN stays NaN). */
VINLINE vf16 vf16_erfc_nonneg(vf16 u)
{
    return vf16_erfc_scaled(u, u * u, 1.0f);
}

VINLINE vf16 vf16_erf(vf16 x)
{
    const vf16 u = vf16_abs(x);
    const vf16 y = vf16_select(u < 1.0f, vf16_erf_small(u), 1.0f - vf16_erfc_nonneg(u));
    return vf16_copysign(y, x);
}

/* The standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2, with the lower
 * tail taken from erfc directly (1 + erf(x / sqrt 2) would cancel there),
 * and (x / sqrt 2)^2 as x (x / 2), one rounding (x / sqrt 2 squared has
 * two, or three without FMA). */
VINLINE vf16 vf16_normal_cdf(vf16 x)
{
    const vf16 lower =
        vf16_erfc_scaled(vf16_abs(x) * 0.70710678118654752f, x * (0.5f * x), 0.5f);
    return vf16_select(x < 0.0f, lower, 1.0f - lower);
}

/* x Phi(x), the exact GELU, to float precision on the scale of x (absolute
 * error under 2.5e-7 max(1, |x|); tests/test_vmath.c) but not relative to a
 * tiny result in the lower tail, which vf16_normal_cdf keeps: for a path
 * that rounds the GELU's output to 8 or 16 bits next (int8's quantized
 * activations, a bf16 product's input), where that precision never
 * reaches anything, at half its cost (no exp, one division). erf(u) = u P(w) / Q(w), w = u^2 / 16, with u
 * clamped to +-3.92, beyond which erf rounds to +-1: P and Q of degree 5,
 * Q(0) = 1, fitted for this by iteratively reweighted least squares in
 * float64 (error 1.6e-8 on [0, 3.92]); 0 below -3.92. */
VINLINE vf16 vf16_gelu_coarse_tail(vf16 x)
{
    const vf16 s = x * 0.70710678118654752f;
    const vf16 u = vf16_min(vf16_max(s, vf16_splat(-3.92f)), vf16_splat(3.92f));
    const vf16 w = u * u * 0.0625f, w2 = w * w;
    const vf16 p = ((2.133624025f * w + 18.84010592f) * w2 +
                    (15.84402477f * w + 13.58336043f)) * w2 +
                   (3.084163356f * w + 1.128379022f);
    const vf16 q = ((39.92035582f * w + 77.86197703f) * w2 +
                    (62.14443214f * w + 29.46126202f)) * w2 +
                   (8.066575288f * w + 1.0f);
    /* 0 below the clamp whatever 1 + erf rounds to there (x may be huge);
     * NaN compares false and stays NaN. */
    return vf16_select(s < -3.92f, vf16_splat(0.0f), (0.5f * x) * (1.0f + u * p / q));
}

/* tanh(x) = 1 - 2 / (e^(2x) + 1), odd, computed on |x| so it saturates. */
VINLINE vf16 vf16_tanh(vf16 x)
{
    vf16 y = 1.0f - 2.0f / (vf16_exp(2.0f * vf16_abs(x)) + 1.0f);
    return vf16_copysign(y, x);
}

/* Scalar twins through a one-lane vector, so tails round exactly the same. */
VINLINE float vmath_exp(float x)
{
    return vf16_exp(vf16_splat(x))[0];
}

VINLINE float vmath_erf(float x)
{
    return vf16_erf(vf16_splat(x))[0];
}

VINLINE float vmath_tanh(float x)
{
    return vf16_tanh(vf16_splat(x))[0];
}

#endif

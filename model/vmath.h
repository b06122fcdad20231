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

/* exp(x) for x in the finite float range: x = n ln2 + r with |r| <= ln2/2
 * (Cody-Waite split of ln2), n = x / ln2 rounded half away from zero
 * (`half`: 0.5 with the sign of x), e^r by its degree-6 Taylor polynomial
 * (relative error < 2e-7), times 2^n built in the exponent bits. */
VINLINE vf16 vf16_exp_reduced(vf16 x, vf16 half)
{
    vf16 n = __builtin_convertvector(__builtin_convertvector(x * 1.44269504f + half, vi16),
                                     vf16);
    vf16 r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vf16 p = vf16_splat(1.0f / 720.0f);
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    vi16 bits = (__builtin_convertvector(n, vi16) + 127) << 23;
    vf16 scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* exp(x), inputs clamped to the finite float range. */
VINLINE vf16 vf16_exp(vf16 x)
{
    x = vf16_min(vf16_max(x, vf16_splat(-87.0f)), vf16_splat(88.0f));
    return vf16_exp_reduced(x, vf16_copysign(vf16_splat(0.5f), x));
}

/* The same values for x < 0.34 (below ln2/2, where n rounds to 0 or
 * below either way) and NaN, four operations fewer: for exponents that are
 * never positive (erfc's, softmax's x - max). */
VINLINE vf16 vf16_exp_nonpositive(vf16 x)
{
    return vf16_exp_reduced(vf16_max(x, vf16_splat(-87.0f)), vf16_splat(-0.5f));
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

/* erfc(u) for u >= 0 (NaN stays NaN). */
VINLINE vf16 vf16_erfc_nonneg(vf16 u)
{
    const vf16 t = 2.0f / (2.0f + u);
    vf16 p = vf16_splat(1.4493021377180904e-01f);
    p = p * t - 6.8082717817161731e-01f;
    p = p * t + 1.1567337583013289e+00f;
    p = p * t - 6.9625190081127530e-01f;
    p = p * t - 8.0280430341081593e-02f;
    p = p * t + 1.2675852563632708e-03f;
    p = p * t + 3.4602800424741668e-02f;
    p = p * t + 3.8664041205296268e-01f;
    p = p * t + 9.9863278335035410e-01f;
    p = p * t - 1.2654479969023029e+00f;
    return t * vf16_exp_nonpositive(p - u * u);
}

VINLINE vf16 vf16_erf(vf16 x)
{
    const vf16 u = vf16_abs(x);
    const vf16 y = vf16_select(u < 1.0f, vf16_erf_small(u), 1.0f - vf16_erfc_nonneg(u));
    return vf16_copysign(y, x);
}

/* The standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2, with the lower
 * tail taken from erfc directly (1 + erf(x / sqrt 2) would cancel there). */
VINLINE vf16 vf16_normal_cdf(vf16 x)
{
    const vf16 lower = 0.5f * vf16_erfc_nonneg(vf16_abs(x) * 0.70710678118654752f);
    return vf16_select(x < 0.0f, lower, 1.0f - lower);
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

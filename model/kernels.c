#include "kernels.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "profile.h"
#include "safetensors.h"
#include "simd.h"
#include "vmath.h"

/* Exact GELU (Hendrycks & Gimpel 2016): x Phi(x) = x/2 (1 + erf(x / sqrt 2)),
 * Phi from erfc (vmath.h) so the lower tail keeps its precision (rows
 * rounded to bf16 or int8 next take the cheaper form below); the tanh
 * form for "gelu_new"; and the others config.json can name. */
VINLINE vf16 activation16(vf16 v, enum bert_activation act)
{
    switch (act) {
    case BERT_ACTIVATION_GELU:
        return v * vf16_normal_cdf(v);
    case BERT_ACTIVATION_GELU_TANH:
        return 0.5f * v * (1.0f + vf16_tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case BERT_ACTIVATION_RELU:
        return vf16_max(v, vf16_splat(0.0f));
    case BERT_ACTIVATION_SILU:
        return v / (1.0f + vf16_exp(-v));
    case BERT_ACTIVATION_TANH:
        return vf16_tanh(v);
    }
    return v;
}

/* activation16 for an output rounded to bf16 or int8 next: the exact GELU
 * without its lower tail's relative precision, which those formats drop. */
VINLINE vf16 rounded_activation16(vf16 v, enum bert_activation act)
{
    return act == BERT_ACTIVATION_GELU ? vf16_gelu_coarse_tail(v) : activation16(v, act);
}

float kernel_activation(float v, enum bert_activation act)
{
    return activation16(vf16_splat(v), act)[0];
}

/* kernel_to_bf16 without AVX512_BF16: round half to even by adding
 * 0x7fff plus the lowest kept bit; a NaN keeps its top bits and becomes
 * quiet. */
static void to_bf16(const float *x, size_t n, uint16_t *out)
{
    typedef uint32_t vu16 __attribute__((vector_size(VLANES * sizeof(uint32_t))));
    const size_t nv = n - n % VLANES;
    for (size_t i = 0; i < nv; i += VLANES) {
        vu16 b;
        memcpy(&b, x + i, sizeof b);
        const vu16 nan = (b & 0x7fffffffu) > 0x7f800000u;
        vu16 r = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
        r = (nan & ((b >> 16) | 0x40u)) | (~nan & r);
        for (int k = 0; k < VLANES; k++)
            out[i + k] = (uint16_t)r[k];
    }
    for (size_t i = nv; i < n; i++)
        out[i] = bert_f32_to_bf16(x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* AVX512_BF16's conversion, which every CPU whose bf16 products run has
 * (oneDNN's bf16 kernels need it, AMX or not): one instruction for 32
 * floats, where to_bf16's loop takes about eighteen for 16. */
__attribute__((target("avx512f,avx512bf16"))) static void to_bf16_native(const float *x,
                                                                        size_t n, uint16_t *out)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 lo = _mm512_loadu_ps(x + i), hi = _mm512_loadu_ps(x + i + 16);
        _mm512_storeu_si512(out + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    for (; i + 16 <= n; i += 16) {
        const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
        _mm256_storeu_si256((__m256i *)(out + i), (__m256i)b);
    }
    to_bf16(x + i, n - i, out + i);
}

void kernel_to_bf16(const float *x, size_t n, uint16_t *out)
{
    if (__builtin_cpu_supports("avx512bf16"))
        to_bf16_native(x, n, out);
    else
        to_bf16(x, n, out);
}
#else
void kernel_to_bf16(const float *x, size_t n, uint16_t *out)
{
    to_bf16(x, n, out);
}
#endif

/* One row of kernel_add_layernorm. */
VINLINE void add_layernorm_row(float *row, const float *res, const float *bias,
                               const float *gamma, const float *beta, size_t n, float eps)
{
    const size_t nv = n - n % VLANES;
    vf16 acc = {0};
    float sum = 0.0f;
    for (size_t i = 0; i < nv; i += VLANES) {
        vf16 v = vf16_load(row + i);
        if (bias)
            v += vf16_load(bias + i);
        if (res)
            v += vf16_load(res + i);
        vf16_store(row + i, v);
        acc += v;
    }
    for (size_t i = nv; i < n; i++) {
        row[i] += (bias ? bias[i] : 0.0f) + (res ? res[i] : 0.0f);
        sum += row[i];
    }
    const float mean = (sum + vf16_sum(acc)) / (float)n;
    vf16 vacc = {0};
    float var = 0.0f;
    for (size_t i = 0; i < nv; i += VLANES) {
        vf16 d = vf16_load(row + i) - mean;
        vacc += d * d;
    }
    for (size_t i = nv; i < n; i++)
        var += (row[i] - mean) * (row[i] - mean);
    const float inv = 1.0f / sqrtf((var + vf16_sum(vacc)) / (float)n + eps);
    for (size_t i = 0; i < nv; i += VLANES)
        vf16_store(row + i, (vf16_load(row + i) - mean) * inv * vf16_load(gamma + i) +
                                vf16_load(beta + i));
    for (size_t i = nv; i < n; i++)
        row[i] = (row[i] - mean) * inv * gamma[i] + beta[i];
}

/* kernel_add_layernorm_bf16's loop, inlined into each caller's clone. */
VINLINE void add_layernorm_rows(float *x, const float *residual, const float *bias,
                                const float *gamma, const float *beta, size_t rows, size_t n,
                                float eps, uint16_t *bf16)
{
    prof_lap(BERT_OP_OTHER);
    for (size_t r = 0; r < rows; r++) {
        add_layernorm_row(x + r * n, residual ? residual + r * n : NULL, bias, gamma, beta, n,
                          eps);
        if (bf16 != NULL)
            kernel_to_bf16(x + r * n, n, bf16 + r * n);
    }
    prof_lap(BERT_OP_NORM);
}

BERT_HOT
void kernel_add_layernorm(float *x, const float *residual, const float *bias,
                          const float *gamma, const float *beta, size_t rows, size_t n,
                          float eps)
{
    add_layernorm_rows(x, residual, bias, gamma, beta, rows, n, eps, NULL);
}

BERT_HOT
void kernel_add_layernorm_bf16(float *x, const float *residual, const float *bias,
                               const float *gamma, const float *beta, size_t rows, size_t n,
                               float eps, uint16_t *bf16)
{
    add_layernorm_rows(x, residual, bias, gamma, beta, rows, n, eps, bf16);
}

BERT_HOT
void kernel_add_layernorm_row(float *x, const float *residual, const float *gamma,
                              const float *beta, size_t n, float eps)
{
    add_layernorm_row(x, residual, NULL, gamma, beta, n, eps);
}

/* The loops below are inlined twice per caller: once with the exact GELU
 * as a constant (the common case: its constants stay in registers, no
 * switch per vector), once for the rest. */
VINLINE void bias_activation_rows(float *x, const float *bias, size_t rows, size_t n, size_t ld,
                                  enum bert_activation act, bool rounded_next, uint16_t *bf16)
{
    const size_t nv = n - n % VLANES;
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        for (size_t i = 0; i < nv; i += VLANES) {
            const vf16 v = vf16_load(row + i) + vf16_load(bias + i);
            vf16_store(row + i, rounded_next ? rounded_activation16(v, act) : activation16(v, act));
        }
        for (size_t i = nv; i < n; i++) {
            const vf16 v = vf16_splat(row[i] + bias[i]);
            row[i] = (rounded_next ? rounded_activation16(v, act) : activation16(v, act))[0];
        }
        if (bf16 != NULL)
            kernel_to_bf16(row, n, bf16 + r * n);
    }
}

BERT_HOT
void kernel_bias_activation(float *x, const float *bias, size_t rows, size_t n, size_t ld,
                            enum bert_activation act)
{
    prof_lap(BERT_OP_OTHER);
    if (act == BERT_ACTIVATION_GELU)
        bias_activation_rows(x, bias, rows, n, ld, BERT_ACTIVATION_GELU, false, NULL);
    else
        bias_activation_rows(x, bias, rows, n, ld, act, false, NULL);
    prof_lap(BERT_OP_ACTIVATION);
}

BERT_HOT
void kernel_bias_activation_rounded(float *x, const float *bias, size_t rows, size_t n,
                                    size_t ld, enum bert_activation act, uint16_t *bf16)
{
    prof_lap(BERT_OP_OTHER);
    if (act == BERT_ACTIVATION_GELU)
        bias_activation_rows(x, bias, rows, n, ld, BERT_ACTIVATION_GELU, true, bf16);
    else
        bias_activation_rows(x, bias, rows, n, ld, act, true, bf16);
    prof_lap(BERT_OP_ACTIVATION);
}

/* kernel_dequantize_row's loop; `activate` false: no activation. */
VINLINE void dequantize_row(float *y, const float *acc, size_t n, float row_scale,
                            const float *col_scale, const float *bias, bool activate,
                            enum bert_activation act)
{
    const size_t nv = n - n % VLANES;
    for (size_t i = 0; i < nv; i += VLANES) {
        vf16 v = vf16_load(acc + i) * (row_scale * vf16_load(col_scale + i));
        if (bias)
            v += vf16_load(bias + i);
        vf16_store(y + i, activate ? rounded_activation16(v, act) : v);
    }
    for (size_t i = nv; i < n; i++) {
        float v = acc[i] * (row_scale * col_scale[i]) + (bias ? bias[i] : 0.0f);
        y[i] = activate ? rounded_activation16(vf16_splat(v), act)[0] : v;
    }
}

BERT_HOT
void kernel_dequantize_row(float *y, const float *acc, size_t n, float row_scale,
                           const float *col_scale, const float *bias,
                           const enum bert_activation *act)
{
    if (act == NULL)
        dequantize_row(y, acc, n, row_scale, col_scale, bias, false, BERT_ACTIVATION_GELU);
    else if (*act == BERT_ACTIVATION_GELU)
        dequantize_row(y, acc, n, row_scale, col_scale, bias, true, BERT_ACTIVATION_GELU);
    else
        dequantize_row(y, acc, n, row_scale, col_scale, bias, true, *act);
}

BERT_HOT
void kernel_add_bias(float *x, const float *bias, size_t rows, size_t n, size_t ld)
{
    prof_lap(BERT_OP_OTHER);
    const size_t nv = n - n % VLANES;
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        for (size_t i = 0; i < nv; i += VLANES)
            vf16_store(row + i, vf16_load(row + i) + vf16_load(bias + i));
        for (size_t i = nv; i < n; i++)
            row[i] += bias[i];
    }
    prof_lap(BERT_OP_NORM);
}

BERT_HOT
void kernel_softmax_rows(float *x, size_t rows, size_t n, size_t ld)
{
    const size_t nv = n - n % VLANES;
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        float max = row[0];
        vf16 vmax = vf16_splat(max);
        for (size_t i = 0; i < nv; i += VLANES)
            vmax = vf16_max(vmax, vf16_load(row + i));
        max = vf16_hmax(vmax);
        for (size_t i = nv; i < n; i++)
            max = row[i] > max ? row[i] : max;
        vf16 vsum = {0};
        float sum = 0.0f;
        for (size_t i = 0; i < nv; i += VLANES) {
            vf16 e = vf16_exp(vf16_load(row + i) - max);
            vf16_store(row + i, e);
            vsum += e;
        }
        for (size_t i = nv; i < n; i++) {
            row[i] = vmath_exp(row[i] - max);
            sum += row[i];
        }
        const float inv = 1.0f / (sum + vf16_sum(vsum));
        for (size_t i = 0; i < nv; i += VLANES)
            vf16_store(row + i, vf16_load(row + i) * inv);
        for (size_t i = nv; i < n; i++)
            row[i] *= inv;
    }
}

#include "kernels.h"

#include <math.h>

void kernel_add_layernorm(float *x, const float *residual, const float *bias,
                          const float *gamma, const float *beta, size_t rows, size_t n,
                          float eps)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * n;
        const float *res = residual ? residual + r * n : NULL;
        float sum = 0.0f;
        for (size_t i = 0; i < n; i++) {
            float v = row[i];
            if (bias)
                v += bias[i];
            if (res)
                v += res[i];
            row[i] = v;
            sum += v;
        }
        float mean = sum / (float)n;
        float var = 0.0f;
        for (size_t i = 0; i < n; i++) {
            float d = row[i] - mean;
            var += d * d;
        }
        float inv = 1.0f / sqrtf(var / (float)n + eps);
        for (size_t i = 0; i < n; i++)
            row[i] = (row[i] - mean) * inv * gamma[i] + beta[i];
    }
}

float kernel_activation(float v, enum bert_activation act)
{
    switch (act) {
    case BERT_ACTIVATION_GELU:
        return 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
    case BERT_ACTIVATION_GELU_TANH: {
        /* Hendrycks & Gimpel 2016, tanh form; sqrt(2/pi) = 0.7978845608. */
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        return 0.5f * v * (1.0f + tanhf(inner));
    }
    case BERT_ACTIVATION_RELU:
        return v > 0.0f ? v : 0.0f;
    case BERT_ACTIVATION_SILU:
        return v / (1.0f + expf(-v));
    }
    return v;
}

void kernel_bias_activation(float *x, const float *bias, size_t rows, size_t n,
                            enum bert_activation act)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * n;
        for (size_t i = 0; i < n; i++)
            row[i] = kernel_activation(row[i] + bias[i], act);
    }
}

void kernel_add_bias(float *x, const float *bias, size_t rows, size_t n, size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        for (size_t i = 0; i < n; i++)
            row[i] += bias[i];
    }
}

void kernel_softmax_rows(float *x, size_t rows, size_t n, size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        float max = row[0];
        for (size_t i = 1; i < n; i++)
            max = row[i] > max ? row[i] : max;
        float sum = 0.0f;
        for (size_t i = 0; i < n; i++) {
            row[i] = expf(row[i] - max);
            sum += row[i];
        }
        float inv = 1.0f / sum;
        for (size_t i = 0; i < n; i++)
            row[i] *= inv;
    }
}

void kernel_bias_tanh(float *x, const float *bias, size_t rows, size_t n)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * n;
        for (size_t i = 0; i < n; i++)
            row[i] = tanhf(row[i] + bias[i]);
    }
}

/* The team-parallel pieces of a training step (step_ops.h): products,
 * LayerNorm and activations forward and backward, dropout masks. */
#include "step_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels.h"
#include "simd.h"
#include "team.h"
#include "vmath.h"

/* ---- matrix products on the team ---------------------------------------- */

struct gemm_job {
    bool ta, tb;
    size_t M, N, K;
    float alpha;
    const float *A, *B;
    size_t lda, ldb;
    float beta;
    float *C;
    size_t ldc;
};

/* Each member computes a block of rows of C, or of columns when there are
 * too few rows to go round. */
static void gemm_member(void *arg, size_t member, size_t n)
{
    const struct gemm_job *j = arg;
    size_t r0 = 0, r1 = j->M, c0 = 0, c1 = j->N;
    if (j->M >= 8 * n)
        bert_team_share(j->M, member, n, &r0, &r1);
    else
        bert_team_share(j->N, member, n, &c0, &c1);
    if (r1 <= r0 || c1 <= c0)
        return;
    const float *a = j->ta ? j->A + r0 : j->A + r0 * j->lda;
    const float *b = j->tb ? j->B + c0 * j->ldb : j->B + c0;
    cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans,
                j->tb ? CblasTrans : CblasNoTrans, (int)(r1 - r0), (int)(c1 - c0), (int)j->K,
                j->alpha, a, (int)j->lda, b, (int)j->ldb, j->beta, j->C + r0 * j->ldc + c0,
                (int)j->ldc);
}

/* C (M, N) = alpha op(A) op(B) + beta C, row-major. */
void step_gemm(struct train_work *w, bool ta, bool tb, size_t M, size_t N, size_t K,
               float alpha, const float *A, size_t lda, const float *B, size_t ldb, float beta,
               float *C, size_t ldc)
{
    if (M == 0 || N == 0)
        return;
    struct gemm_job j = {ta, tb, M, N, K, alpha, A, B, lda, ldb, beta, C, ldc};
    bert_team_run(w->team, gemm_member, &j);
}

/* y (T, out) = x (T, in) W^T + b, with W (out, in). */
void step_linear_forward(struct train_work *w, const float *x, size_t T, size_t in,
                         const float *W, const float *b, size_t out, float *y, size_t ldy)
{
    step_gemm(w, false, true, T, out, in, 1.0f, x, in, W, in, 0.0f, y, ldy);
    kernel_add_bias(y, b, T, out, ldy);
}

struct colsum_job {
    const float *dy;
    size_t ldd, T, out;
    float *db;
};

/* Each member sums its own block of columns, so no two write one float. */
BERT_HOT
static void colsum_member(void *arg, size_t member, size_t n)
{
    const struct colsum_job *j = arg;
    size_t c0, c1;
    bert_team_share(j->out, member, n, &c0, &c1);
    float *restrict db = j->db + c0;
    const size_t width = c1 - c0, T = j->T, ldd = j->ldd;
    for (size_t t = 0; t < T; t++) {
        const float *restrict dy = j->dy + t * ldd + c0;
        for (size_t k = 0; k < width; k++)
            db[k] += dy[k];
    }
}

/* dW += dy^T x, db += column sums of dy (db may be NULL); then dx (= or +=, by beta) dy W. */
void step_linear_backward(struct train_work *w, const float *dy, size_t ldd, const float *x,
                          size_t T, size_t in, const float *W, size_t out, float *dW, float *db,
                          float *dx, float dx_beta)
{
    step_gemm(w, true, false, out, in, T, 1.0f, dy, ldd, x, in, 1.0f, dW, in);
    if (db != NULL) {
        struct colsum_job j = {dy, ldd, T, out, db};
        bert_team_run(w->team, colsum_member, &j);
    }
    if (dx != NULL)
        step_gemm(w, false, false, T, in, out, 1.0f, dy, ldd, W, in, dx_beta, dx, in);
}

/* ---- element-wise pieces ------------------------------------------------- */

/* y = LayerNorm(z) * g + b per row, keeping mean and 1/std (Ba et al. 2016;
 * biased variance as torch.nn.LayerNorm). */
void step_layernorm_forward(const float *z, const float *g, const float *b, size_t rows,
                            size_t n, float eps, float *y, float *stats)
{
    for (size_t r = 0; r < rows; r++) {
        const float *zr = z + r * n;
        double sum = 0.0, sq = 0.0;
        for (size_t k = 0; k < n; k++)
            sum += zr[k];
        const double mean = sum / (double)n;
        for (size_t k = 0; k < n; k++)
            sq += (zr[k] - mean) * (zr[k] - mean);
        const float rstd = (float)(1.0 / sqrt(sq / (double)n + eps));
        float *yr = y + r * n;
        for (size_t k = 0; k < n; k++)
            yr[k] = ((zr[k] - (float)mean) * rstd) * g[k] + b[k];
        stats[2 * r] = (float)mean;
        stats[2 * r + 1] = rstd;
    }
}

/* dz from dy through LayerNorm; dg, db accumulate. dz may alias dy. */
void step_layernorm_backward(const float *dy, const float *z, const float *stats,
                             const float *g, size_t rows, size_t n, float *dz, float *dg,
                             float *db)
{
    for (size_t r = 0; r < rows; r++) {
        const float *dyr = dy + r * n, *zr = z + r * n;
        const float mean = stats[2 * r], rstd = stats[2 * r + 1];
        double s1 = 0.0, s2 = 0.0;
        for (size_t k = 0; k < n; k++) {
            const float xhat = (zr[k] - mean) * rstd;
            const float d = dyr[k] * g[k];
            s1 += d;
            s2 += (double)d * xhat;
            if (dg != NULL) {
                dg[k] += dyr[k] * xhat;
                db[k] += dyr[k];
            }
        }
        const float m1 = (float)(s1 / (double)n), m2 = (float)(s2 / (double)n);
        float *dzr = dz + r * n;
        for (size_t k = 0; k < n; k++) {
            const float xhat = (zr[k] - mean) * rstd;
            dzr[k] = rstd * (dyr[k] * g[k] - m1 - xhat * m2);
        }
    }
}

/* d act(u) / du. */
static float activation_grad(float x, enum bert_activation act)
{
    switch (act) {
    case BERT_ACTIVATION_GELU:
        return 0.5f * (1.0f + erff(x * 0.70710678f)) + x * 0.39894228f * expf(-0.5f * x * x);
    case BERT_ACTIVATION_GELU_TANH: {
        const float k = 0.7978845608f, c = 0.044715f;
        const float t = tanhf(k * (x + c * x * x * x));
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
    }
    case BERT_ACTIVATION_RELU:
        return x > 0.0f ? 1.0f : 0.0f;
    case BERT_ACTIVATION_SILU: {
        const float s = 1.0f / (1.0f + expf(-x));
        return s * (1.0f + x * (1.0f - s));
    }
    case BERT_ACTIVATION_TANH: {
        const float t = tanhf(x);
        return 1.0f - t * t;
    }
    }
    return 0.0f;
}

struct act_grad_job {
    float *du;
    const float *u;
    size_t count;
    enum bert_activation act;
};

/* du *= act'(u) over the member's share; exact GELU 16 lanes at a time with
 * the forward kernel's erf and exp (model/vmath.h). */
BERT_HOT
static void act_grad_member(void *arg, size_t member, size_t n)
{
    const struct act_grad_job *j = arg;
    size_t b0, b1;
    bert_team_share(j->count / VLANES, member, n, &b0, &b1);
    size_t i = b0 * VLANES, end = member + 1 == n ? j->count : b1 * VLANES;
    if (j->act == BERT_ACTIVATION_GELU)
        for (; i < b1 * VLANES; i += VLANES) {
            const vf16 x = vf16_load(j->u + i);
            const vf16 d = 0.5f * (1.0f + vf16_erf(x * 0.70710678f)) +
                           x * 0.39894228f * vf16_exp(-0.5f * x * x);
            vf16_store(j->du + i, vf16_load(j->du + i) * d);
        }
    for (; i < end; i++)
        j->du[i] *= activation_grad(j->u[i], j->act);
}

/* du (count) *= act'(u), element-wise, on the team. */
void step_activation_backward(struct train_work *w, float *du, const float *u, size_t count,
                              enum bert_activation act)
{
    struct act_grad_job j = {du, u, count, act};
    bert_team_run(w->team, act_grad_member, &j);
}

/* a = act(u + bias) with the engine's vectorised kernel, and u += bias
 * so u holds the pre-activation the backward pass needs. u (rows, n). */
void step_bias_activation_forward(float *u, const float *bias, float *a, size_t rows, size_t n,
                                  enum bert_activation act)
{
    memcpy(a, u, rows * n * sizeof *a);
    kernel_bias_activation(a, bias, rows, n, n, act);
    kernel_add_bias(u, bias, rows, n, n);
}

/* ---- dropout -------------------------------------------------------------- */

/* dst[i] = src[i] * mask[i] / (1 - p); src may equal dst, and must when
 * nothing drops: then nothing is written (dropout_grad avoids the copy).
 * Forward and backward both call it: the gradient goes through the same
 * mask. */
void step_dropout_apply(const struct dropout *d, unsigned site, const float *src, float *dst,
                        size_t n)
{
    if (d->cut == 0)
        return;
    const uint64_t base = d->seed ^ ((uint64_t)site * 0x9E3779B97F4A7C15ull);
    for (size_t i = 0; i < n; i++) {
        uint64_t z = base + (uint64_t)i * 0xD1B54A32D192ED03ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        dst[i] = (uint32_t)((z ^ (z >> 31)) >> 32) < d->cut ? 0.0f : src[i] * d->scale;
    }
}

#include "train_step.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels.h"
#include "simd.h"
#include "team.h"
#include "vmath.h"

/* MLM decoder rows per block: the logits buffer is (MLM_BLOCK, V). Each
 * block packs the whole (V, H) decoder matrix three times (forward, dW, dx),
 * so blocks of a few hundred rows keep the packing small beside the
 * products (64 rows cost about 11% more CPU per step). */
#define MLM_BLOCK 512

/* Activations kept for the backward pass, one set per layer. */
struct layer_acts {
    float *qkv;    /* (T, 3H) */
    float *probs;  /* attention probabilities: per sequence i, per head, n_i x n_i */
    float *ctx;    /* (T, H) */
    float *z1;     /* (T, H) attention output + residual, before LayerNorm */
    float *st1;    /* (T, 2) mean, 1/std */
    float *h1;     /* (T, H) */
    float *u;      /* (T, I) before the activation */
    float *a;      /* (T, I) after it */
    float *z2;     /* (T, H) */
    float *st2;    /* (T, 2) */
};

struct train_work {
    size_t max_tokens, max_seq_len, bytes;
    float *memory;
    struct bert_team *team;
    atomic_size_t next_item;
    float **x;                /* (L + 1) x (T, H): embeddings output, then each layer's */
    float *z0, *st0;          /* embeddings sum before LayerNorm (T, H), stats (T, 2) */
    struct layer_acts *acts;  /* (L) */
    size_t *prob_offset;      /* (max_tokens + 1) per sequence, into probs */
    float *dx, *dh, *dctx, *dqkv, *du; /* gradient buffers */
    float *dp;                /* (members, S * S) attention workspaces */
    /* MLM head at picked rows */
    size_t *rows;             /* (T) */
    float *mg, *md, *ma, *me, *mst, *dme, *logits;
    /* classifier at [CLS] rows */
    float *cg, *pooled, *cls_logits, *dpool;
};

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

struct train_work *train_work_new(const struct train_model *m, size_t max_tokens,
                                  size_t max_seq_len, size_t threads, struct bert_error *err)
{
    const struct bert_config *c = &m->config;
    if (max_tokens == 0 || max_seq_len == 0 || max_seq_len > max_tokens ||
        max_seq_len > c->max_position_embeddings) {
        bert_error_set(err, BERT_E_INVALID,
                       "work sizes must satisfy 0 < max_seq_len (%zu) <= max_tokens (%zu) and "
                       "max_seq_len <= positions (%zu)",
                       max_seq_len, max_tokens, c->max_position_embeddings);
        return NULL;
    }
    struct train_work *w = calloc(1, sizeof *w);
    if (w == NULL) {
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return NULL;
    }
    w->team = bert_team_new(threads, err);
    if (w->team == NULL) {
        free(w);
        return NULL;
    }
    const size_t T = max_tokens, S = max_seq_len, H = c->hidden_size, FF = c->intermediate_size;
    const size_t L = c->num_layers, A = c->num_heads, V = c->vocab_size;
    const size_t members = bert_team_size(w->team);
    const size_t TH = round16(T * H), TI = round16(T * FF), T2 = round16(2 * T);
    const size_t probs = round16(A * T * S);
    size_t per_layer = 3 * TH /* qkv */ + probs + TH + TH + T2 + TH + 2 * TI + TH + T2;
    size_t total = (L + 1) * TH + TH + T2 + L * per_layer      /* activations */
                   + 3 * TH + 3 * TH + TI + members * round16(S * S) /* gradients */
                   + 5 * TH + T2 + round16(MLM_BLOCK * V)    /* MLM head */
                   + 3 * TH + round16(T * c->num_labels);    /* classifier */
    w->memory = aligned_alloc(64, total * sizeof(float));
    w->x = calloc(L + 1, sizeof *w->x);
    w->acts = calloc(L, sizeof *w->acts);
    w->prob_offset = calloc(T + 1, sizeof *w->prob_offset);
    w->rows = calloc(T, sizeof *w->rows);
    if (w->memory == NULL || w->x == NULL || w->acts == NULL || w->prob_offset == NULL ||
        w->rows == NULL) {
        train_work_free(w);
        bert_error_set(err, BERT_E_NOMEM, "out of memory allocating %zu MiB of training work",
                       total * sizeof(float) >> 20);
        return NULL;
    }
    w->bytes = total * sizeof(float);
    w->max_tokens = T;
    w->max_seq_len = S;
    float *p = w->memory;
#define TAKE(n) (p += (n), p - (n))
    for (size_t l = 0; l <= L; l++)
        w->x[l] = TAKE(TH);
    w->z0 = TAKE(TH);
    w->st0 = TAKE(T2);
    for (size_t l = 0; l < L; l++) {
        struct layer_acts *a = &w->acts[l];
        a->qkv = TAKE(3 * TH);
        a->probs = TAKE(probs);
        a->ctx = TAKE(TH);
        a->z1 = TAKE(TH);
        a->st1 = TAKE(T2);
        a->h1 = TAKE(TH);
        a->u = TAKE(TI);
        a->a = TAKE(TI);
        a->z2 = TAKE(TH);
        a->st2 = TAKE(T2);
    }
    w->dx = TAKE(TH);
    w->dh = TAKE(TH);
    w->dctx = TAKE(TH);
    w->dqkv = TAKE(3 * TH);
    w->du = TAKE(TI);
    w->dp = TAKE(members * round16(S * S));
    w->mg = TAKE(TH);
    w->md = TAKE(TH);
    w->ma = TAKE(TH);
    w->me = TAKE(TH);
    w->dme = TAKE(TH);
    w->mst = TAKE(T2);
    w->logits = TAKE(round16(MLM_BLOCK * V));
    w->cg = TAKE(TH);
    w->pooled = TAKE(TH);
    w->dpool = TAKE(TH);
    w->cls_logits = TAKE(round16(T * c->num_labels));
#undef TAKE
    return w;
}

void train_work_free(struct train_work *w)
{
    if (w == NULL)
        return;
    bert_team_free(w->team);
    free(w->memory);
    free(w->x);
    free(w->acts);
    free(w->prob_offset);
    free(w->rows);
    free(w);
}

size_t train_work_bytes(const struct train_work *w) { return w->bytes; }

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
static void gemm(struct train_work *w, bool ta, bool tb, size_t M, size_t N, size_t K,
                 float alpha, const float *A, size_t lda, const float *B, size_t ldb, float beta,
                 float *C, size_t ldc)
{
    if (M == 0 || N == 0)
        return;
    struct gemm_job j = {ta, tb, M, N, K, alpha, A, B, lda, ldb, beta, C, ldc};
    bert_team_run(w->team, gemm_member, &j);
}

/* y (T, out) = x (T, in) W^T + b, with W (out, in). */
static void linear_forward(struct train_work *w, const float *x, size_t T, size_t in,
                           const float *W, const float *b, size_t out, float *y, size_t ldy)
{
    gemm(w, false, true, T, out, in, 1.0f, x, in, W, in, 0.0f, y, ldy);
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
static void linear_backward(struct train_work *w, const float *dy, size_t ldd, const float *x,
                            size_t T, size_t in, const float *W, size_t out, float *dW, float *db,
                            float *dx, float dx_beta)
{
    gemm(w, true, false, out, in, T, 1.0f, dy, ldd, x, in, 1.0f, dW, in);
    if (db != NULL) {
        struct colsum_job j = {dy, ldd, T, out, db};
        bert_team_run(w->team, colsum_member, &j);
    }
    if (dx != NULL)
        gemm(w, false, false, T, in, out, 1.0f, dy, ldd, W, in, dx_beta, dx, in);
}

/* ---- element-wise pieces ------------------------------------------------- */

/* y = LayerNorm(z) * g + b per row, keeping mean and 1/std (Ba et al. 2016;
 * biased variance as torch.nn.LayerNorm). */
static void layernorm_forward(const float *z, const float *g, const float *b, size_t rows,
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
static void layernorm_backward(const float *dy, const float *z, const float *stats,
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
static void activation_backward(struct train_work *w, float *du, const float *u, size_t count,
                                enum bert_activation act)
{
    struct act_grad_job j = {du, u, count, act};
    bert_team_run(w->team, act_grad_member, &j);
}

/* a = act(u + bias) with the engine's vectorised kernel, and u += bias
 * so u holds the pre-activation the backward pass needs. u (rows, n). */
static void bias_activation_forward(float *u, const float *bias, float *a, size_t rows, size_t n,
                                    enum bert_activation act)
{
    memcpy(a, u, rows * n * sizeof *a);
    kernel_bias_activation(a, bias, rows, n, n, act);
    kernel_add_bias(u, bias, rows, n, n);
}

/* ---- attention ----------------------------------------------------------- */

struct attention_job {
    struct train_work *w;
    const struct bert_batch *b;
    struct layer_acts *acts;
    size_t H, A;
    bool causal, backward;
};

/* Forward: P = softmax(Q K^T / sqrt(D)), ctx = P V (Vaswani et al. 2017).
 * Backward: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)),
 * dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D). One (sequence, head) at a
 * time; packed sequences never see each other. Causal attention (a decoder)
 * lets row r see columns 0..r only: P is 0 beyond, so the backward
 * formulas hold unchanged. */
static void attention_member(void *arg, size_t member, size_t n_members)
{
    (void)n_members;
    const struct attention_job *j = arg;
    struct train_work *w = j->w;
    const size_t H = j->H, A = j->A, D = H / A, ld = 3 * H, items = j->b->n_seqs * A;
    const float scale = 1.0f / sqrtf((float)D);
    float *dp = w->dp + member * round16(w->max_seq_len * w->max_seq_len);
    size_t item;
    while ((item = atomic_fetch_add_explicit(&w->next_item, 1, memory_order_relaxed)) < items) {
        const size_t i = item / A, h = item % A;
        const size_t r0 = j->b->seq_start[i], n = j->b->seq_start[i + 1] - r0;
        const float *q = j->acts->qkv + r0 * ld + h * D, *k = q + H, *v = q + 2 * H;
        float *p = j->acts->probs + w->prob_offset[i] + h * n * n;
        if (!j->backward) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)D, scale,
                        q, (int)ld, k, (int)ld, 0.0f, p, (int)n);
            if (j->causal)
                for (size_t r = 0; r < n; r++) {
                    kernel_softmax_rows(p + r * n, 1, r + 1, n);
                    memset(p + r * n + r + 1, 0, (n - r - 1) * sizeof *p);
                }
            else
                kernel_softmax_rows(p, n, n, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)D, (int)n, 1.0f,
                        p, (int)n, v, (int)ld, 0.0f, j->acts->ctx + r0 * H + h * D, (int)H);
            continue;
        }
        const float *dout = w->dctx + r0 * H + h * D;
        float *dq = w->dqkv + r0 * ld + h * D, *dk = dq + H, *dv = dq + 2 * H;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)D, 1.0f, dout,
                    (int)H, v, (int)ld, 0.0f, dp, (int)n);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)D, (int)n, 1.0f, p,
                    (int)n, dout, (int)H, 0.0f, dv, (int)ld);
        for (size_t r = 0; r < n; r++) {
            float dot = 0.0f;
            for (size_t c = 0; c < n; c++)
                dot += dp[r * n + c] * p[r * n + c];
            for (size_t c = 0; c < n; c++)
                dp[r * n + c] = p[r * n + c] * (dp[r * n + c] - dot);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)D, (int)n, scale, dp,
                    (int)n, k, (int)ld, 0.0f, dq, (int)ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)D, (int)n, scale, dp,
                    (int)n, q, (int)ld, 0.0f, dk, (int)ld);
    }
}

static void attention(struct train_work *w, const struct bert_batch *b, struct layer_acts *acts,
                      const struct bert_config *c, bool backward)
{
    struct attention_job j = {w, b, acts, c->hidden_size, c->num_heads, c->is_decoder, backward};
    atomic_store_explicit(&w->next_item, 0, memory_order_relaxed);
    bert_team_run(w->team, attention_member, &j);
}

/* ---- dropout -------------------------------------------------------------- */

/* Inverted dropout whose mask is a hash of (seed, site, element): the
 * backward pass redraws the forward's mask instead of storing it. */
struct dropout {
    uint64_t seed;
    uint32_t cut;  /* an element is dropped when its 32-bit hash is below cut */
    float scale;   /* 1 / (1 - p) */
    float keep;    /* 1 - p */
};

/* Sites: the embeddings, then (attention, feed-forward) per layer, then the pooler. */
#define DROP_EMBED 0u
#define DROP_ATTN(l) (1u + 2u * (l))
#define DROP_FFN(l) (2u + 2u * (l))
#define DROP_POOLED(L) (1u + 2u * (L))

static struct dropout dropout_of(const struct train_batch *tb)
{
    float p = tb->dropout > 0.0f && tb->dropout < 1.0f ? tb->dropout : 0.0f;
    return (struct dropout){tb->dropout_seed, (uint32_t)((double)p * 4294967296.0),
                            1.0f / (1.0f - p), 1.0f - p};
}

/* dst[i] = src[i] * mask[i] / (1 - p); src may equal dst, and must when
 * nothing drops: then nothing is written (dropout_grad avoids the copy).
 * Forward and backward both call it: the gradient goes through the same
 * mask. */
static void dropout_apply(const struct dropout *d, unsigned site, const float *src, float *dst,
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

/* The gradient src through site's mask: src itself when nothing drops
 * (no copy on the hot path), else the masked gradient written to spare. */
static const float *dropout_grad(const struct dropout *d, unsigned site, const float *src,
                                 float *spare, size_t n)
{
    if (d->cut == 0)
        return src;
    dropout_apply(d, site, src, spare, n);
    return spare;
}

/* ---- the network --------------------------------------------------------- */

static void embed_forward(const struct train_model *m, struct train_work *w,
                          const struct bert_batch *b, const struct dropout *d)
{
    const size_t H = m->config.hidden_size;
    const struct train_view *p = &m->p;
    for (size_t i = 0; i < b->n_seqs; i++)
        for (size_t t = b->seq_start[i]; t < b->seq_start[i + 1]; t++) {
            const float *we = p->word_emb + (size_t)b->ids[t] * H;
            const float *pe = p->pos_emb + (t - b->seq_start[i]) * H;
            const float *te = p->type_emb + (size_t)b->type_ids[t] * H;
            for (size_t k = 0; k < H; k++)
                w->z0[t * H + k] = we[k] + pe[k] + te[k];
        }
    layernorm_forward(w->z0, p->emb_ln_g, p->emb_ln_b, b->n_tokens, H, m->config.layer_norm_eps,
                      w->x[0], w->st0);
    dropout_apply(d, DROP_EMBED, w->x[0], w->x[0], b->n_tokens * H);
}

static void embed_backward(struct train_model *m, struct train_work *w,
                           const struct bert_batch *b, const struct dropout *d, float *dx)
{
    const size_t H = m->config.hidden_size;
    struct train_view *g = &m->g;
    dropout_apply(d, DROP_EMBED, dx, dx, b->n_tokens * H);
    layernorm_backward(dx, w->z0, w->st0, m->p.emb_ln_g, b->n_tokens, H, dx, g->emb_ln_g,
                       g->emb_ln_b);
    for (size_t i = 0; i < b->n_seqs; i++)
        for (size_t t = b->seq_start[i]; t < b->seq_start[i + 1]; t++) {
            float *gw = g->word_emb + (size_t)b->ids[t] * H;
            float *gp = g->pos_emb + (t - b->seq_start[i]) * H;
            float *gt = g->type_emb + (size_t)b->type_ids[t] * H;
            for (size_t k = 0; k < H; k++) {
                gw[k] += dx[t * H + k];
                gp[k] += dx[t * H + k];
                gt[k] += dx[t * H + k];
            }
        }
}

static void layer_forward(const struct train_model *m, struct train_work *w,
                          const struct bert_batch *b, const struct dropout *d, size_t l)
{
    const struct bert_config *c = &m->config;
    const struct train_layer *p = &m->p.layers[l];
    struct layer_acts *a = &w->acts[l];
    const size_t T = b->n_tokens, H = c->hidden_size, FF = c->intermediate_size;
    const float *x = w->x[l];
    linear_forward(w, x, T, H, p->query_w, p->query_b, H, a->qkv, 3 * H);
    linear_forward(w, x, T, H, p->key_w, p->key_b, H, a->qkv + H, 3 * H);
    linear_forward(w, x, T, H, p->value_w, p->value_b, H, a->qkv + 2 * H, 3 * H);
    attention(w, b, a, c, false);
    linear_forward(w, a->ctx, T, H, p->attn_out_w, p->attn_out_b, H, a->z1, H);
    dropout_apply(d, DROP_ATTN(l), a->z1, a->z1, T * H);
    for (size_t i = 0; i < T * H; i++)
        a->z1[i] += x[i];
    layernorm_forward(a->z1, p->attn_ln_g, p->attn_ln_b, T, H, c->layer_norm_eps, a->h1, a->st1);
    gemm(w, false, true, T, FF, H, 1.0f, a->h1, H, p->ffn_in_w, H, 0.0f, a->u, FF);
    bias_activation_forward(a->u, p->ffn_in_b, a->a, T, FF, c->activation);
    linear_forward(w, a->a, T, FF, p->ffn_out_w, p->ffn_out_b, H, a->z2, H);
    dropout_apply(d, DROP_FFN(l), a->z2, a->z2, T * H);
    for (size_t i = 0; i < T * H; i++)
        a->z2[i] += a->h1[i];
    layernorm_forward(a->z2, p->ffn_ln_g, p->ffn_ln_b, T, H, c->layer_norm_eps, w->x[l + 1],
                      a->st2);
}

/* In: dx = dLoss/d(layer output). Out: dx = dLoss/d(layer input). */
static void layer_backward(struct train_model *m, struct train_work *w,
                           const struct bert_batch *b, const struct dropout *d, size_t l)
{
    const struct bert_config *c = &m->config;
    const struct train_layer *p = &m->p.layers[l];
    struct train_layer *g = &m->g.layers[l];
    struct layer_acts *a = &w->acts[l];
    const size_t T = b->n_tokens, H = c->hidden_size, FF = c->intermediate_size;
    /* dh = dz2; then dh = dh1 = dz2 + d(ffn)/dh1. The feed-forward output's
     * gradient (dz2 through the dropout mask) goes through dx, free here. */
    layernorm_backward(w->dx, a->z2, a->st2, p->ffn_ln_g, T, H, w->dh, g->ffn_ln_g, g->ffn_ln_b);
    const float *dffn = dropout_grad(d, DROP_FFN(l), w->dh, w->dx, T * H);
    linear_backward(w, dffn, H, a->a, T, FF, p->ffn_out_w, H, g->ffn_out_w, g->ffn_out_b, w->du,
                    0.0f);
    activation_backward(w, w->du, a->u, T * FF, c->activation);
    linear_backward(w, w->du, FF, a->h1, T, H, p->ffn_in_w, FF, g->ffn_in_w, g->ffn_in_b, w->dh,
                    1.0f);
    /* dx = dz1; dctx (from dz1 through the dropout mask, in dh, free here);
     * attention; then dx += the Q, K, V paths */
    layernorm_backward(w->dh, a->z1, a->st1, p->attn_ln_g, T, H, w->dx, g->attn_ln_g,
                       g->attn_ln_b);
    const float *dattn = dropout_grad(d, DROP_ATTN(l), w->dx, w->dh, T * H);
    linear_backward(w, dattn, H, a->ctx, T, H, p->attn_out_w, H, g->attn_out_w, g->attn_out_b,
                    w->dctx, 0.0f);
    attention(w, b, a, c, true);
    const float *x = w->x[l];
    linear_backward(w, w->dqkv, 3 * H, x, T, H, p->query_w, H, g->query_w, g->query_b, w->dx,
                    1.0f);
    /* The key bias adds the same q . b to every score of a row, which the
     * softmax cancels: its gradient is exactly 0, so it is left at 0 rather
     * than filled with rounding noise that AdamW would turn into steps. */
    linear_backward(w, w->dqkv + H, 3 * H, x, T, H, p->key_w, H, g->key_w, NULL, w->dx, 1.0f);
    linear_backward(w, w->dqkv + 2 * H, 3 * H, x, T, H, p->value_w, H, g->value_w, g->value_b,
                    w->dx, 1.0f);
}

/* row[j] = exp(row[j] - max), 16 lanes at a time; returns the sum. Kept in
 * the row for the gradient. */
BERT_HOT
static double exp_shifted(float *row, size_t n, float max)
{
    const size_t nv = n - n % VLANES;
    vf16 vsum = {0};
    for (size_t j = 0; j < nv; j += VLANES) {
        vf16 e = vf16_exp(vf16_load(row + j) - max);
        vf16_store(row + j, e);
        vsum += e;
    }
    double sum = vf16_sum(vsum);
    for (size_t j = nv; j < n; j++) {
        row[j] = vmath_exp(row[j] - max);
        sum += row[j];
    }
    return sum;
}

/* Index of the first largest element: the maximum 16 lanes at a time, then
 * a scan for its first occurrence. */
BERT_HOT
static size_t first_argmax(const float *row, size_t n)
{
    const size_t nv = n - n % VLANES;
    float max = row[0];
    if (nv > 0) {
        vf16 vmax = vf16_load(row);
        for (size_t j = VLANES; j < nv; j += VLANES)
            vmax = vf16_max(vmax, vf16_load(row + j));
        max = vf16_hmax(vmax);
    }
    for (size_t j = nv; j < n; j++)
        max = row[j] > max ? row[j] : max;
    size_t best = 0;
    while (best + 1 < n && row[best] != max) /* bounded: a NaN row never matches */
        best++;
    return best;
}

/* Cross-entropy of one logits row against `label`: loss, whether the
 * argmax is right, and (with grad_scale != 0) the row replaced by
 * grad_scale * (softmax - onehot). */
static double cross_entropy(float *row, size_t n, int32_t label, float grad_scale,
                            bool *correct)
{
    const size_t best = first_argmax(row, n);
    const float max = row[best];
    const float target = row[label];
    const double sum = exp_shifted(row, n, max);
    const double loss = log(sum) + max - target;
    *correct = best == (size_t)label;
    if (grad_scale != 0.0f) {
        const float k = (float)(grad_scale / sum);
        for (size_t j = 0; j < n; j++)
            row[j] *= k;
        row[label] -= grad_scale;
    }
    return loss;
}

struct mlm_loss_job {
    float *logits;          /* (rows, V) */
    size_t V;
    const int32_t *labels;  /* by token */
    const size_t *tokens;   /* (rows) token of each logits row */
    size_t rows;
    float grad_scale;
    double loss[MLM_BLOCK];
    bool correct[MLM_BLOCK];
};

/* Cross-entropy of the member's share of the decoder's rows. */
static void mlm_loss_member(void *arg, size_t member, size_t n)
{
    struct mlm_loss_job *j = arg;
    size_t r0, r1;
    bert_team_share(j->rows, member, n, &r0, &r1);
    for (size_t r = r0; r < r1; r++)
        j->loss[r] = cross_entropy(j->logits + r * j->V, j->V, j->labels[j->tokens[r]],
                                   j->grad_scale, &j->correct[r]);
}

/* The MLM head at the picked rows; with backward, its gradient lands in dx
 * (zeroed elsewhere by the caller). */
static void mlm_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                     bool backward, struct train_stats *st)
{
    const struct bert_config *c = &m->config;
    const struct train_view *p = &m->p;
    struct train_view *g = &m->g;
    const size_t H = c->hidden_size, V = c->vocab_size;
    const float *hidden = w->x[c->num_layers];
    size_t n = 0;
    for (size_t t = 0; t < tb->b.n_tokens; t++)
        if (tb->mlm_labels[t] != -100) {
            w->rows[n] = t;
            memcpy(w->mg + n++ * H, hidden + t * H, H * sizeof(float));
        }
    st->mlm_count = n;
    if (n == 0)
        return;
    gemm(w, false, true, n, H, H, 1.0f, w->mg, H, p->mlm_dense_w, H, 0.0f, w->md, H);
    bias_activation_forward(w->md, p->mlm_dense_b, w->ma, n, H, c->activation);
    layernorm_forward(w->ma, p->mlm_ln_g, p->mlm_ln_b, n, H, c->layer_norm_eps, w->me, w->mst);
    const float scale = backward ? 1.0f / (float)n : 0.0f;
    for (size_t r0 = 0; r0 < n; r0 += MLM_BLOCK) {
        const size_t rows = n - r0 < MLM_BLOCK ? n - r0 : MLM_BLOCK;
        const float *e = w->me + r0 * H;
        /* The decoder is the word-embedding matrix (tied, BERT sec. 3.1). */
        linear_forward(w, e, rows, H, p->word_emb, p->mlm_bias, V, w->logits, V);
        struct mlm_loss_job j = {.logits = w->logits, .V = V, .labels = tb->mlm_labels,
                                 .tokens = w->rows + r0, .rows = rows, .grad_scale = scale};
        bert_team_run(w->team, mlm_loss_member, &j);
        for (size_t r = 0; r < rows; r++) {
            st->mlm_loss_sum += j.loss[r];
            st->mlm_correct += j.correct[r];
        }
        if (backward)
            linear_backward(w, w->logits, V, e, rows, H, p->word_emb, V, g->word_emb,
                            g->mlm_bias, w->dme + r0 * H, 0.0f);
    }
    if (!backward)
        return;
    layernorm_backward(w->dme, w->ma, w->mst, p->mlm_ln_g, n, H, w->dme, g->mlm_ln_g, g->mlm_ln_b);
    activation_backward(w, w->dme, w->md, n * H, c->activation);
    linear_backward(w, w->dme, H, w->mg, n, H, p->mlm_dense_w, H, g->mlm_dense_w, g->mlm_dense_b,
                    w->md, 0.0f);
    for (size_t r = 0; r < n; r++) {
        float *d = w->dx + w->rows[r] * H;
        for (size_t k = 0; k < H; k++)
            d[k] += w->md[r * H + k];
    }
}

/* Multi-label loss of one logits row: the mean over the n labels of
 * BCE(sigmoid(z), y) = max(z, 0) - z y + log(1 + exp(-|z|)) (the stable
 * form BCEWithLogitsLoss uses); with grad_scale != 0 the row becomes
 * grad_scale * (sigmoid(z) - y) / n. *exact counts a row whose predicted
 * set (z > 0) equals the gold one. */
static double binary_cross_entropy(float *row, const float *y, size_t n, float grad_scale,
                                   size_t *exact)
{
    double loss = 0.0;
    bool all = true;
    for (size_t j = 0; j < n; j++) {
        const double z = row[j];
        loss += fmax(z, 0.0) - z * y[j] + log1p(exp(-fabs(z)));
        all = all && (z > 0.0) == (y[j] > 0.5f);
        if (grad_scale != 0.0f)
            row[j] = (float)((1.0 / (1.0 + exp(-z)) - y[j]) * grad_scale / (double)n);
    }
    *exact += all;
    return loss / (double)n;
}

/* Regression loss of one single-logit row: (z - y)^2; with grad_scale != 0
 * the row becomes grad_scale * 2 (z - y). */
static double squared_error(float *row, float y, float grad_scale)
{
    const double d = (double)row[0] - y;
    if (grad_scale != 0.0f)
        row[0] = (float)(2.0 * d * grad_scale);
    return d * d;
}

/* The token the classifier reads: [CLS], or for a causal model the last
 * token, the only one that has seen the whole sequence. */
static size_t pooled_token(const struct bert_config *c, const struct bert_batch *b, size_t i)
{
    return c->is_decoder ? b->seq_start[i + 1] - 1 : b->seq_start[i];
}

/* Pooler (dense + tanh on the pooled token) and classifier; with backward
 * (and an encoder that trains) its gradient lands in dx. */
static void cls_head(struct train_model *m, struct train_work *w, const struct train_batch *tb,
                     const struct dropout *drop, bool backward, bool into_encoder,
                     struct train_stats *st)
{
    const struct bert_config *c = &m->config;
    const struct train_view *p = &m->p;
    struct train_view *g = &m->g;
    const size_t H = c->hidden_size, C = c->num_labels, n = tb->b.n_seqs;
    const float *hidden = w->x[c->num_layers];
    for (size_t i = 0; i < n; i++)
        memcpy(w->cg + i * H, hidden + pooled_token(c, &tb->b, i) * H, H * sizeof(float));
    linear_forward(w, w->cg, n, H, p->pooler_w, p->pooler_b, H, w->pooled, H);
    for (size_t i = 0; i < n * H; i++)
        w->pooled[i] = tanhf(w->pooled[i]);
    dropout_apply(drop, DROP_POOLED(c->num_layers), w->pooled, w->pooled, n * H);
    linear_forward(w, w->pooled, n, H, p->classifier_w, p->classifier_b, C, w->cls_logits, C);
    const float scale = backward ? 1.0f / (float)n : 0.0f;
    for (size_t i = 0; i < n; i++) {
        float *row = w->cls_logits + i * C;
        if (tb->cls_logits != NULL)
            memcpy(tb->cls_logits + i * C, row, C * sizeof *row);
        if (tb->cls_pred != NULL) {
            size_t best = 0;
            for (size_t k = 1; k < C; k++)
                best = row[k] > row[best] ? k : best;
            tb->cls_pred[i] = (int32_t)best;
        }
        if (tb->cls_labels != NULL) {
            bool ok;
            st->cls_loss_sum += cross_entropy(row, C, tb->cls_labels[i], scale, &ok);
            st->cls_correct += ok;
        } else if (tb->cls_targets != NULL) {
            st->cls_loss_sum += c->problem_type == BERT_PROBLEM_MULTI_LABEL
                                    ? binary_cross_entropy(row, tb->cls_targets + i * C, C,
                                                           scale, &st->cls_correct)
                                    : squared_error(row, tb->cls_targets[i], scale);
        }
    }
    const bool supervised = tb->cls_labels != NULL || tb->cls_targets != NULL;
    st->cls_count = supervised ? n : 0;
    if (!backward || !supervised)
        return;
    linear_backward(w, w->cls_logits, C, w->pooled, n, H, p->classifier_w, C, g->classifier_w,
                    g->classifier_b, w->dpool, 0.0f);
    /* pooled holds tanh * mask / keep; where the mask is 0 so is dpool. */
    dropout_apply(drop, DROP_POOLED(c->num_layers), w->dpool, w->dpool, n * H);
    for (size_t i = 0; i < n * H; i++) {
        float y = w->pooled[i] * drop->keep;
        w->dpool[i] *= 1.0f - y * y;
    }
    linear_backward(w, w->dpool, H, w->cg, n, H, p->pooler_w, H, g->pooler_w, g->pooler_b,
                    into_encoder ? w->cg : NULL, 0.0f);
    if (into_encoder)
        for (size_t i = 0; i < n; i++) {
            float *d = w->dx + pooled_token(c, &tb->b, i) * H;
            for (size_t k = 0; k < H; k++)
                d[k] += w->cg[i * H + k];
        }
}

static enum bert_status check(const struct train_model *m, const struct train_work *w,
                              const struct train_batch *tb, struct bert_error *err)
{
    const struct bert_config *c = &m->config;
    const struct bert_batch *b = &tb->b;
    const bool targets_head = c->problem_type == BERT_PROBLEM_MULTI_LABEL ||
                              (c->problem_type == BERT_PROBLEM_REGRESSION && c->num_labels == 1);
    if ((tb->mlm_labels != NULL && !m->mlm) ||
        ((tb->cls_labels != NULL || tb->cls_targets != NULL || tb->cls_pred != NULL ||
          tb->cls_logits != NULL) &&
         !m->classifier) ||
        (tb->cls_labels != NULL && (targets_head || c->problem_type == BERT_PROBLEM_REGRESSION)) ||
        (tb->cls_targets != NULL && (!targets_head || tb->cls_labels != NULL)))
        return bert_error_set(err, BERT_E_INVALID, "the model has no head for this loss");
    if (b->n_seqs == 0 || b->n_tokens > w->max_tokens || b->seq_start[0] != 0 ||
        b->seq_start[b->n_seqs] != b->n_tokens)
        return bert_error_set(err, BERT_E_INVALID,
                              "batch of %zu tokens does not fit the work (%zu) or its offsets "
                              "are inconsistent",
                              b->n_tokens, w->max_tokens);
    for (size_t i = 0; i < b->n_seqs; i++) {
        if (b->seq_start[i + 1] <= b->seq_start[i] ||
            b->seq_start[i + 1] - b->seq_start[i] > w->max_seq_len)
            return bert_error_set(err, BERT_E_INVALID, "sequence %zu has %zu tokens (1..%zu)",
                                  i, b->seq_start[i + 1] - b->seq_start[i], w->max_seq_len);
        if (tb->cls_labels != NULL &&
            (tb->cls_labels[i] < 0 || (size_t)tb->cls_labels[i] >= c->num_labels))
            return bert_error_set(err, BERT_E_INVALID, "sequence %zu: label %d out of range",
                                  i, tb->cls_labels[i]);
    }
    for (size_t t = 0; t < b->n_tokens; t++) {
        const int32_t label = tb->mlm_labels ? tb->mlm_labels[t] : -100;
        if (b->ids[t] < 0 || (size_t)b->ids[t] >= c->vocab_size || b->type_ids[t] < 0 ||
            (size_t)b->type_ids[t] >= c->type_vocab_size ||
            (label != -100 && (label < 0 || (size_t)label >= c->vocab_size)))
            return bert_error_set(err, BERT_E_INVALID,
                                  "token %zu: id %d, type %d or label %d out of range", t,
                                  b->ids[t], b->type_ids[t], label);
    }
    return BERT_OK;
}

enum bert_status train_step(struct train_model *m, struct train_work *w,
                            const struct train_batch *tb, bool backward, bool freeze_encoder,
                            struct train_stats *st, struct bert_error *err)
{
    enum bert_status s = check(m, w, tb, err);
    if (s != BERT_OK)
        return s;
    const struct bert_config *c = &m->config;
    const struct bert_batch *b = &tb->b;
    const size_t H = c->hidden_size, A = c->num_heads;
    memset(st, 0, sizeof *st);
    w->prob_offset[0] = 0;
    for (size_t i = 0; i < b->n_seqs; i++) {
        size_t n = b->seq_start[i + 1] - b->seq_start[i];
        w->prob_offset[i + 1] = w->prob_offset[i] + A * n * n;
    }
    const struct dropout drop = dropout_of(tb);
    embed_forward(m, w, b, &drop);
    for (size_t l = 0; l < c->num_layers; l++)
        layer_forward(m, w, b, &drop, l);
    const bool encoder_grads = backward && !freeze_encoder;
    if (encoder_grads)
        memset(w->dx, 0, b->n_tokens * H * sizeof(float));
    if (tb->mlm_labels != NULL)
        mlm_head(m, w, tb, encoder_grads, st);
    if (tb->cls_labels != NULL || tb->cls_targets != NULL || tb->cls_pred != NULL ||
        tb->cls_logits != NULL)
        cls_head(m, w, tb, &drop, backward, encoder_grads, st);
    if (st->mlm_count > 0)
        st->loss += st->mlm_loss_sum / (double)st->mlm_count;
    if (st->cls_count > 0)
        st->loss += st->cls_loss_sum / (double)st->cls_count;
    if (!encoder_grads)
        return BERT_OK;
    for (size_t l = c->num_layers; l-- > 0;)
        layer_backward(m, w, b, &drop, l);
    embed_backward(m, w, b, &drop, w->dx);
    return BERT_OK;
}

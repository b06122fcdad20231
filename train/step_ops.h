/* The training step's insides: the work memory's layout and the
 * team-parallel pieces (step_ops.c) that step.c (the encoder forward and
 * backward, train_step) and step_heads.c (the MLM and classification heads
 * with their losses) are built of. Private to train/. */
#ifndef BERT_TRAIN_STEP_OPS_H
#define BERT_TRAIN_STEP_OPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "train_step.h"

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
#define DROP_TOKENS(L) (2u + 2u * (L)) /* the token classifier's input */

/* ---- team-parallel pieces (step_ops.c) ---- */

/* C (M, N) = alpha op(A) op(B) + beta C, row-major. */
void step_gemm(struct train_work *w, bool ta, bool tb, size_t M, size_t N, size_t K,
               float alpha, const float *A, size_t lda, const float *B, size_t ldb, float beta,
               float *C, size_t ldc);

/* y (T, out) = x (T, in) W^T + b, with W (out, in). */
void step_linear_forward(struct train_work *w, const float *x, size_t T, size_t in,
                         const float *W, const float *b, size_t out, float *y, size_t ldy);

/* dW += dy^T x, db += column sums of dy (db may be NULL); then dx (= or +=, by beta) dy W. */
void step_linear_backward(struct train_work *w, const float *dy, size_t ldd, const float *x,
                          size_t T, size_t in, const float *W, size_t out, float *dW, float *db,
                          float *dx, float dx_beta);

/* y = LayerNorm(z) * g + b per row, keeping mean and 1/std (Ba et al. 2016;
 * biased variance as torch.nn.LayerNorm). */
void step_layernorm_forward(const float *z, const float *g, const float *b, size_t rows,
                            size_t n, float eps, float *y, float *stats);

/* dz from dy through LayerNorm; dg, db accumulate. dz may alias dy. */
void step_layernorm_backward(const float *dy, const float *z, const float *stats,
                             const float *g, size_t rows, size_t n, float *dz, float *dg,
                             float *db);

/* du (count) *= act'(u), element-wise, on the team. */
void step_activation_backward(struct train_work *w, float *du, const float *u, size_t count,
                              enum bert_activation act);

/* a = act(u + bias) with the engine's vectorised kernel, and u += bias
 * so u holds the pre-activation the backward pass needs. u (rows, n). */
void step_bias_activation_forward(float *u, const float *bias, float *a, size_t rows, size_t n,
                                  enum bert_activation act);

/* dst[i] = src[i] * mask[i] / (1 - p); src may equal dst, and must when
 * nothing drops: then nothing is written (dropout_grad avoids the copy).
 * Forward and backward both call it: the gradient goes through the same
 * mask. */
void step_dropout_apply(const struct dropout *d, unsigned site, const float *src, float *dst,
                        size_t n);

#endif

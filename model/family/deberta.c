/* DeBERTa-v2/v3's disentangled attention (He et al. 2021, "DeBERTa", sec.
 * 3.1; modeling_deberta_v2.py's DisentangledSelfAttention). For query i and
 * key j with relative index r = clamp(bucket(i - j) + span, 0, 2 span - 1):
 *
 *   score(i, j) = (q_i . k_j + q_i . Kr[r] + k_j . Qr[r]) / sqrt(d * (1 + terms))
 *
 * where Kr and Qr are key_proj and query_proj (share_att_key) of the
 * LayerNorm'd relative embeddings, "c2p" the second term and "p2c" the
 * third. Kr and Qr depend only on the weights, so they are made once at
 * load, per layer. Per (sequence, head) the p2c products k_j . Qr[r] are
 * computed for every key and the relative indexes the sequence reaches; per
 * block of query rows the c2p products and the scores, then each score
 * gathers its two terms by r. Workspace: O(n * min(2n, 2 span)) per
 * member, no n x n matrix beyond a block of rows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "engine.h"
#include "family.h"
#include "kernels.h"
#include "profile.h"
#include "scratch.h"

/* Query rows per block: the (ROWS x n) scores and (ROWS x R) c2p products.
 * A whole 128-token sequence in one block: fewer small GEMM calls, each
 * packing the keys again (32 rows cost about 5% more CPU time at 32 x 128). */
#define ROWS 128

struct family_deberta {
    float *pos_key, *pos_query; /* (L, 2 span, H) each */
    int32_t *index;             /* (2 positions - 1): r of distance d at [positions - 1 + d] */
    size_t positions, span;
};

/* make_log_bucket_position: distances below half the buckets stay exact,
 * longer ones shrink logarithmically so that max_position - 1 lands on the
 * last bucket. In double: reference.py's self_check shows it equals
 * transformers' float32 arithmetic for every distance the model can see. */
static long deberta_bucket(long rel, long buckets, long max_position)
{
    const long mid = buckets / 2;
    const long mag = rel < 0 ? -rel : rel;
    if (buckets <= 0 || mag <= mid)
        return rel;
    double scaled = log((double)mag / (double)mid) /
                    log((double)(max_position - 1) / (double)mid) * (double)(mid - 1);
    /* A config whose max_position - 1 is not past mid makes this infinite,
     * NaN or huge; every bucket past the span is clamped anyway. */
    scaled = scaled < 1e9 ? (scaled > -1e9 ? scaled : -1e9) : 1e9;
    const long far = (long)ceil(scaled) + mid;
    return rel < 0 ? -far : far;
}

/* The relative index of distance d (query - key), clamped to the table. */
static size_t relative_index(const struct bert_deberta *d, long distance)
{
    const long r = deberta_bucket(distance, (long)d->position_buckets,
                                  (long)d->max_relative_positions) +
                   (long)d->att_span;
    const long last = 2 * (long)d->att_span - 1;
    return (size_t)(r < 0 ? 0 : r > last ? last : r);
}

/* out (rows, H) = LayerNorm'd relative embeddings x W^T + b. */
static void project(const float *rel, size_t rows, size_t H, const float *w, const float *b,
                    float *out)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)H, (int)H, 1.0f, rel,
                (int)H, w, (int)H, 0.0f, out, (int)H);
    kernel_add_bias(out, b, rows, H, H);
}

struct family_deberta *family_deberta_new(const struct bert_config *c,
                                          const struct bert_weights *w, size_t positions)
{
    const struct bert_deberta *d = &c->deberta;
    const size_t H = c->hidden_size, L = c->num_layers, span = d->att_span, rows = 2 * span;
    struct family_deberta *t = calloc(1, sizeof *t);
    float *rel = malloc(rows * H * sizeof *rel);
    if (t == NULL || rel == NULL) {
        free(rel);
        free(t);
        return NULL;
    }
    t->positions = positions;
    t->span = span;
    t->pos_key = malloc(L * rows * H * sizeof *t->pos_key);
    t->pos_query = malloc(L * rows * H * sizeof *t->pos_query);
    t->index = malloc((2 * positions - 1) * sizeof *t->index);
    if (t->pos_key == NULL || t->pos_query == NULL || t->index == NULL) {
        free(rel);
        family_deberta_free(t);
        return NULL;
    }
    memcpy(rel, w->rel_emb, rows * H * sizeof *rel);
    if (w->rel_ln_g != NULL) /* norm_rel_ebd: DebertaV2Encoder.get_rel_embedding */
        kernel_add_layernorm(rel, NULL, NULL, w->rel_ln_g, w->rel_ln_b, rows, H,
                             c->layer_norm_eps);
    for (size_t l = 0; l < L; l++) {
        const struct bert_layer_weights *lw = &w->layers[l];
        project(rel, rows, H, lw->key.w, lw->key_b, t->pos_key + l * rows * H);
        project(rel, rows, H, lw->query.w, lw->query_b, t->pos_query + l * rows * H);
    }
    free(rel);
    for (size_t k = 0; k < 2 * positions - 1; k++)
        t->index[k] = (int32_t)relative_index(d, (long)k - (long)(positions - 1));
    return t;
}

void family_deberta_free(struct family_deberta *t)
{
    if (t == NULL)
        return;
    free(t->pos_key);
    free(t->pos_query);
    free(t->index);
    free(t);
}

size_t family_deberta_workspace_floats(const struct bert_config *c, size_t max_n)
{
    /* The most relative indexes a sequence reaches: those of the longest. */
    size_t lo = SIZE_MAX, hi = 0;
    for (long d = 1 - (long)max_n; d < (long)max_n; d++) {
        const size_t r = relative_index(&c->deberta, d);
        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
    }
    const size_t R = hi - lo + 1;
    return max_n * R + ROWS * max_n + ROWS * R;
}

/* One head of one sequence of n tokens; q, k, v rows ld apart, out ldo. */
static void head_attention(const struct bert_config *c, const struct family_deberta *t,
                           const float *q, const float *k, const float *v, size_t ld, size_t n,
                           const float *kr, const float *qr, float *out, size_t ldo,
                           float *work)
{
    const size_t H = c->hidden_size, D = H / c->num_heads;
    const bool c2p = c->deberta.c2p, p2c = c->deberta.p2c;
    const float scale = 1.0f / sqrtf((float)D * (float)(1 + c2p + p2c));
    /* The sequence reaches indexes lo .. lo + R - 1. */
    const int32_t *index = t->index + t->positions - 1;
    int32_t lo_index = INT32_MAX, hi_index = 0;
    for (ptrdiff_t d = 1 - (ptrdiff_t)n; d < (ptrdiff_t)n; d++) {
        lo_index = index[d] < lo_index ? index[d] : lo_index;
        hi_index = index[d] > hi_index ? index[d] : hi_index;
    }
    const size_t lo = (size_t)lo_index, R = (size_t)(hi_index - lo_index) + 1;
    float *kq = work;           /* (n, R): k_j . Qr[lo + r] */
    float *s = kq + n * R;      /* (ROWS, n) scores */
    float *qk = s + ROWS * n;   /* (ROWS, R): q_i . Kr[lo + r] */
    if (p2c)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)R, (int)D, 1.0f, k,
                    (int)ld, qr + lo * H, (int)H, 0.0f, kq, (int)R);
    for (size_t i0 = 0; i0 < n; i0 += ROWS) {
        const size_t rows = n - i0 < ROWS ? n - i0 : ROWS;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)n, (int)D, 1.0f,
                    q + i0 * ld, (int)ld, k, (int)ld, 0.0f, s, (int)n);
        if (c2p)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)R, (int)D,
                        1.0f, q + i0 * ld, (int)ld, kr + lo * H, (int)H, 0.0f, qk, (int)R);
        const int64_t softmax_begin = prof_part_begin();
        for (size_t r = 0; r < rows; r++) {
            const size_t i = i0 + r;
            float *sr = s + r * n;
            const float *qkr = qk + r * R;
            for (size_t j = 0; j < n; j++) {
                const size_t x = (size_t)index[(ptrdiff_t)i - (ptrdiff_t)j] - lo;
                float rel = 0.0f;
                if (c2p)
                    rel += qkr[x];
                if (p2c)
                    rel += kq[j * R + x];
                sr[j] = (sr[j] + rel) * scale;
            }
        }
        kernel_softmax_rows(s, rows, n, n);
        prof_part_end(softmax_begin);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)D, (int)n, 1.0f,
                    s, (int)n, v, (int)ld, 0.0f, out + i0 * ldo, (int)ldo);
    }
}

void family_deberta_attention_member(const struct bert_model *model, struct bert_scratch *s,
                                     const struct bert_batch *b, size_t layer, size_t member)
{
    const struct bert_config *c = &model->config;
    const struct family_deberta *t = model->engine->deberta;
    const size_t H = c->hidden_size, A = c->num_heads, D = H / A;
    const size_t ld = 3 * H, items = b->n_seqs * A, table = 2 * t->span * H;
    const float *kr = t->pos_key + layer * table, *qr = t->pos_query + layer * table;
    float *work = s->attn + member * s->attn_floats;
    size_t item;
    prof_lap(BERT_OP_OTHER);
    while ((item = atomic_fetch_add_explicit(&s->next_item, 1, memory_order_relaxed)) < items) {
        const size_t i = item / A, h = item % A;
        const size_t r0 = b->seq_start[i], n = b->seq_start[i + 1] - r0;
        const float *q = s->qkv + r0 * ld + h * D;
        head_attention(c, t, q, q + H, q + 2 * H, ld, n, kr + h * D, qr + h * D,
                       s->ctx + r0 * H + h * D, H, work);
    }
    prof_lap_split(BERT_OP_ATTENTION, BERT_OP_SOFTMAX);
}

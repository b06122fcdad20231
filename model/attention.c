#include "attention.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "profile.h"
#include "scratch.h"
#include "simd.h"
#include "vmath.h"

/* Query rows processed together (they share every key and value load):
 * eight where AVX-512's 32 registers hold their sixteen accumulators, four
 * elsewhere; and the vector width the inner loops are written for (one
 * AVX-512 register; GCC splits it into two AVX2 or four SSE registers in
 * the other clones). */
#define ROWS 8
#define ROWS_NARROW 4
#define LANES VLANES
typedef vf16 vec16;
#define load16 vf16_load

static size_t round_lanes(size_t n)
{
    return (n + LANES - 1) & ~(size_t)(LANES - 1);
}

size_t attention_workspace_floats(size_t max_n, size_t d)
{
    size_t n16 = round_lanes(max_n);
    return d * n16 + ROWS * n16 + ROWS * round_lanes(d) + max_n * round_lanes(d);
}

/* s[r][j] = sum_c qb[r][c] * kt[c][j] for a block of R query rows and
 * the `width` key columns from kt and s (rows n16 floats apart). Two
 * vectors of keys at a time: each broadcast query value feeds two FMAs,
 * so loads no longer outnumber them. R is a constant where this is
 * inlined: the unrolled accumulators live in registers. */
static inline __attribute__((always_inline)) void block_scores(const float *restrict qb, size_t dq,
                                                               const float *restrict kt, size_t n16,
                                                               size_t width, size_t d,
                                                               float *restrict s, const size_t R)
{
    size_t j0 = 0;
    for (; j0 + 2 * LANES <= width; j0 += 2 * LANES) {
        vec16 a[ROWS], b[ROWS];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            a[r] = b[r] = (vec16){0};
        for (size_t c = 0; c < d; c++) {
            const vec16 ka = load16(kt + c * n16 + j0), kb = load16(kt + c * n16 + j0 + LANES);
#pragma GCC unroll 8
            for (size_t r = 0; r < R; r++) {
                const float qv = qb[r * dq + c];
                a[r] += qv * ka;
                b[r] += qv * kb;
            }
        }
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            memcpy(s + r * n16 + j0, &a[r], sizeof a[r]);
            memcpy(s + r * n16 + j0 + LANES, &b[r], sizeof b[r]);
        }
    }
    for (; j0 < width; j0 += LANES) {
        vec16 a[ROWS];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            a[r] = (vec16){0};
        for (size_t c = 0; c < d; c++) {
            const vec16 kr = load16(kt + c * n16 + j0);
#pragma GCC unroll 8
            for (size_t r = 0; r < R; r++)
                a[r] += qb[r * dq + c] * kr;
        }
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            memcpy(s + r * n16 + j0, &a[r], sizeof a[r]);
    }
}

/* Softmax over each of the R rows of a block (rows n16 floats apart), over
 * its `width` scores (a whole number of vectors; the padding -INFINITY),
 * left unnormalised: s becomes exp(s - max) (the padding 0) and inv[r] is
 * 1 / their sum, applied to the row's context instead (one multiply per
 * output rather than per score). All rows' steps interleave: each row
 * alone is a chain (max, then exp, then sum) too short to keep the core
 * busy. Rows past the sequence's end hold finite scores, never used. */
static inline __attribute__((always_inline)) void softmax_block(float *restrict s, size_t n16,
                                                                size_t width, float *inv,
                                                                const size_t R)
{
    vec16 vmax[ROWS], sum[ROWS];
    float max[ROWS];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        vmax[r] = load16(s + r * n16), sum[r] = (vec16){0};
    for (size_t j = LANES; j < width; j += LANES)
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            vmax[r] = vf16_max(vmax[r], load16(s + r * n16 + j));
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        max[r] = vf16_hmax(vmax[r]);
    for (size_t j = 0; j < width; j += LANES)
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const vec16 v = load16(s + r * n16 + j);
            const vec16 e = vf16_select(v == -INFINITY, vf16_splat(0.0f),
                                        vf16_exp_nonpositive(v - max[r]));
            vf16_store(s + r * n16 + j, e);
            sum[r] += e;
        }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        inv[r] = 1.0f / vf16_sum(sum[r]);
}

/* out[r][c0..c0+2 LANES) = sum_j s[r][j] * v[j][c0..c0+2 LANES): two
 * vectors of values per step, as block_scores takes two of keys. */
static inline __attribute__((always_inline)) void block_values2(const float *restrict s, size_t n16,
                                                                const float *restrict v, size_t ld,
                                                                size_t n, size_t c0,
                                                                vec16 acc[ROWS][2], const size_t R)
{
    vec16 a[ROWS], b[ROWS];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        a[r] = b[r] = (vec16){0};
    for (size_t j = 0; j < n; j++) {
        const vec16 va = load16(v + j * ld + c0), vb = load16(v + j * ld + c0 + LANES);
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const float sv = s[r * n16 + j];
            a[r] += sv * va;
            b[r] += sv * vb;
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        acc[r][0] = a[r], acc[r][1] = b[r];
}

/* out[r][c0..c0+LANES) = sum_j s[r][j] * v[j][c0..c0+LANES). */
static inline __attribute__((always_inline)) void block_values(const float *restrict s, size_t n16,
                                                               const float *restrict v, size_t ld,
                                                               size_t n, size_t c0,
                                                               vec16 acc[ROWS], const size_t R)
{
    vec16 a[ROWS];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        a[r] = (vec16){0};
    for (size_t j = 0; j < n; j++) {
        const vec16 vr = load16(v + j * ld + c0);
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            a[r] += s[r * n16 + j] * vr;
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
        acc[r] = a[r];
}

/* The 16 x 16 block at m (rows ld floats apart) transposed into t (rows
 * ldt apart) times scale: four rounds, each swapping one bit of the row index with the
 * same bit of the column index, two-vector shuffles throughout. */
static inline __attribute__((always_inline)) void transpose16(const float *restrict m, size_t ld,
                                                              float *restrict t, size_t ldt,
                                                              float scale)
{
    vec16 r[LANES];
    for (size_t i = 0; i < LANES; i++)
        r[i] = load16(m + i * ld);
/* Lanes of the pair (a, c) picked by constant indices: GCC takes them as
 * a vector, clang (the fuzzing build) as arguments. */
#define INDICES(...) __VA_ARGS__
#if defined(__clang__)
#define SHUFFLE2(a, c, ...) __builtin_shufflevector(a, c, __VA_ARGS__)
#else
#define SHUFFLE2(a, c, ...) __builtin_shuffle(a, c, (vi16){__VA_ARGS__})
#endif
#define SWAP_BIT(b, lo, hi)                                                                       \
    for (size_t i = 0; i < LANES; i++)                                                           \
        if ((i & (b)) == 0) {                                                                    \
            const vec16 a = r[i], c = r[i + (b)];                                                \
            r[i] = SHUFFLE2(a, c, INDICES lo);                                                   \
            r[i + (b)] = SHUFFLE2(a, c, INDICES hi);                                             \
        }
    SWAP_BIT(8, (0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
             (8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31))
    SWAP_BIT(4, (0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27),
             (4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31))
    SWAP_BIT(2, (0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
             (2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31))
    SWAP_BIT(1, (0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
             (1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31))
#undef SWAP_BIT
#undef SHUFFLE2
#undef INDICES
    for (size_t i = 0; i < LANES; i++)
        vf16_store(t + i * ldt, r[i] * scale);
}

/* kt (d, n16) = scale k (n, d)^T, rows of k ld floats apart (the scores'
 * scale is applied to the keys, once per head, so the query rows are read
 * where they lie): with `blocks`
 * (AVX-512, where a shuffle of two registers is one instruction) whole
 * 16 x 16 blocks in registers, the rest key by key (rows of k lie 3H floats
 * apart, so walking one column of them would map every load to a few
 * cache sets). */
static inline __attribute__((always_inline)) void transpose_keys(const float *restrict k,
                                                                 size_t ld, size_t n, size_t d,
                                                                 float *restrict kt, size_t n16,
                                                                 float scale, bool blocks)
{
    const size_t nb = blocks ? n - n % LANES : 0, db = d - d % LANES;
    for (size_t j = 0; j < nb; j += LANES)
        for (size_t c = 0; c < db; c += LANES)
            transpose16(k + j * ld + c, ld, kt + c * n16 + j, n16, scale);
    for (size_t j = 0; j < n; j++)
        for (size_t c = j < nb ? db : 0; c < d; c++)
            kt[c * n16 + j] = k[j * ld + c] * scale;
}

/* attention_head_window with blocks of R query rows. */
static inline __attribute__((always_inline)) void
head_window(const float *q, const float *k, const float *v, size_t ld, size_t n, size_t d,
            float scale, float *out, size_t ldo, float *work, size_t half_window,
            const float *rel_bias, const size_t R)
{
    const size_t n16 = round_lanes(n), d16 = round_lanes(d);
    float *kt = work;                 /* (d, n16) keys transposed, zero padded */
    float *s = kt + d * n16;          /* (ROWS, n16) scores, then probabilities */
    float *qb = s + ROWS * n16;       /* (ROWS, d16) the last block's query rows */
    float *vc = qb + ROWS * d16;      /* (n, d16) values, rows d16 apart */
    const size_t half = half_window < n ? half_window : n;
    transpose_keys(k, ld, n, d, kt, n16, scale, R == ROWS);
    for (size_t c = 0; c < d; c++)
        for (size_t j = n; j < n16; j++)
            kt[c * n16 + j] = 0.0f;
    /* The values too are copied once: their rows, 3H floats apart, fall in
     * a few cache sets, and every block of query rows reads them all. */
    for (size_t j = 0; j < n; j++)
        memcpy(vc + j * d16, v + j * ld, d * sizeof *vc);
    for (size_t i0 = 0; i0 < n; i0 += R) {
        const size_t rows = n - i0 < R ? n - i0 : R;
        /* The keys any row of the block sees: [lo, hi), lo rounded down to
         * a whole vector so loads stay aligned. */
        const size_t lo = (i0 > half ? i0 - half : 0) & ~(size_t)(LANES - 1);
        const size_t hi = i0 + rows - 1 + half < n ? i0 + rows + half : n;
        const size_t width = round_lanes(hi - lo);
        float inv[ROWS]; /* each row's 1 / sum of exponentials */
        if (rows == R) {
            block_scores(q + i0 * ld, ld, kt + lo, n16, width, d, s + lo, R);
        } else { /* the last block's missing rows are zeros: computed, never stored */
            for (size_t r = 0; r < R; r++)
                for (size_t c = 0; c < d; c++)
                    qb[r * d16 + c] = r < rows ? q[(i0 + r) * ld + c] : 0.0f;
            block_scores(qb, d16, kt + lo, n16, width, d, s + lo, R);
        }
        const int64_t softmax_begin = prof_part_begin();
        for (size_t r = 0; r < rows; r++) {
            float *sr = s + r * n16;
            const size_t i = i0 + r;
            const size_t first = i > half ? i - half : 0, last = i + half < hi ? i + half + 1 : hi;
            for (size_t j = lo; j < first; j++)
                sr[j] = -INFINITY;
            for (size_t j = last; j < hi; j++)
                sr[j] = -INFINITY;
            for (size_t j = hi; j < lo + width; j++)
                sr[j] = -INFINITY;
            if (rel_bias != NULL) /* the bias of key j is rel_bias[j - i] */
                for (size_t j = first; j < last; j++)
                    sr[j] += rel_bias[(ptrdiff_t)j - (ptrdiff_t)i];
        }
        softmax_block(s + lo, n16, width, inv, R);
        prof_part_end(softmax_begin);
        size_t c0 = 0;
        for (; c0 + 2 * LANES <= d; c0 += 2 * LANES) {
            vec16 acc[ROWS][2];
            block_values2(s + lo, n16, vc + lo * d16, d16, hi - lo, c0, acc, R);
            for (size_t r = 0; r < rows; r++) {
                vec16 scaled[2] = {acc[r][0] * inv[r], acc[r][1] * inv[r]};
                memcpy(out + (i0 + r) * ldo + c0, scaled, sizeof scaled);
            }
        }
        for (; c0 + LANES <= d; c0 += LANES) {
            vec16 acc[ROWS];
            block_values(s + lo, n16, vc + lo * d16, d16, hi - lo, c0, acc, R);
            for (size_t r = 0; r < rows; r++) {
                vec16 scaled = acc[r] * inv[r];
                memcpy(out + (i0 + r) * ldo + c0, &scaled, sizeof scaled);
            }
        }
        /* A head size that is not a multiple of LANES: the rest one by one. */
        for (size_t c = c0; c < d; c++) {
            for (size_t r = 0; r < rows; r++) {
                float acc = 0.0f;
                for (size_t j = lo; j < hi; j++)
                    acc += s[r * n16 + j] * vc[j * d16 + c];
                out[(i0 + r) * ldo + c] = acc * inv[r];
            }
        }
    }
}

BERT_AVX512
static void head_window_wide(const float *q, const float *k, const float *v, size_t ld, size_t n,
                             size_t d, float scale, float *out, size_t ldo, float *work,
                             size_t half_window, const float *rel_bias)
{
    head_window(q, k, v, ld, n, d, scale, out, ldo, work, half_window, rel_bias, ROWS);
}

BERT_HOT
void attention_head_window_narrow(const float *q, const float *k, const float *v, size_t ld,
                                  size_t n, size_t d, float scale, float *out, size_t ldo,
                                  float *work, size_t half_window, const float *rel_bias)
{
    head_window(q, k, v, ld, n, d, scale, out, ldo, work, half_window, rel_bias, ROWS_NARROW);
}

void attention_head_window(const float *q, const float *k, const float *v, size_t ld, size_t n,
                           size_t d, float scale, float *out, size_t ldo, float *work,
                           size_t half_window, const float *rel_bias)
{
    /* Both give the same values: each row's sums run in the same order. */
    if (bert_cpu_avx512())
        head_window_wide(q, k, v, ld, n, d, scale, out, ldo, work, half_window, rel_bias);
    else
        attention_head_window_narrow(q, k, v, ld, n, d, scale, out, ldo, work, half_window,
                                     rel_bias);
}

void attention_head(const float *q, const float *k, const float *v, size_t ld, size_t n,
                    size_t d, float scale, float *out, size_t ldo, float *work)
{
    attention_head_window(q, k, v, ld, n, d, scale, out, ldo, work, SIZE_MAX, NULL);
}

/* Sequences never see each other's tokens: that is what packing without
 * padding needs. */
void attention_member(const struct bert_model *model, struct bert_scratch *s,
                      const struct bert_batch *b, size_t member, size_t half_window)
{
    const size_t H = model->config.hidden_size, A = model->config.num_heads, D = H / A;
    const size_t ld = 3 * H, items = b->n_seqs * A;
    const float scale = 1.0f / sqrtf((float)D);
    float *work = s->attn + member * s->attn_floats;
    const struct bert_engine *e = model->engine;
    const size_t rel_span = 2 * e->rel_positions - 1;
    size_t item;
    prof_lap(BERT_OP_OTHER);
    while ((item = atomic_fetch_add_explicit(&s->next_item, 1, memory_order_relaxed)) < items) {
        size_t i = item / A, h = item % A;
        size_t r0 = b->seq_start[i], n = b->seq_start[i + 1] - r0;
        const float *q = s->qkv + r0 * ld + h * D;
        const float *rel = e->rel_bias ? e->rel_bias + h * rel_span + e->rel_positions - 1 : NULL;
        attention_head_window(q, q + H, q + 2 * H, ld, n, D, scale, s->ctx + r0 * H + h * D, H,
                              work, half_window, rel);
    }
    prof_lap_split(BERT_OP_ATTENTION, BERT_OP_SOFTMAX);
}

#include "linear_bf16_avx512.h"

#include <stdlib.h>
#include <string.h>

#include "safetensors.h"
#include "simd.h"

#define PANEL LINEAR_BF16_PANEL

struct linear_bf16_avx512_weight {
    size_t out, in;
    size_t pairs;     /* ceil(in / 2): inputs in pairs, the last one padded with 0 */
    uint32_t *panels; /* panel p: (pairs, PANEL) words, bf16 of input 2q in the low half and
                         of 2q + 1 in the high; columns past `out` are 0 */
};

static size_t panel_count(size_t out)
{
    return (out + PANEL - 1) / PANEL;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512bf16")))

/* Rows per register block: MR x 2 accumulators, two weight vectors and
 * the broadcast input pair: 31 of the 32 zmm. */
#define MR 14
/* Input pairs per pass: 768 inputs, as the f32 kernel takes, so a product
 * from BERT-base's hidden state finishes each sum in one pass. The panel's
 * KP x PANEL block (48 KiB) streams from L2 past the pass's row blocks:
 * 2-3% faster a pass than 256 pairs, whose block stayed in L1. */
#define KP 384
/* Row stride (words) of the packed block of x: a cache line past KP, so
 * the MR rows a block reads at once fall in different L1 sets. */
#define LDA (KP + 16)
/* Rows per pass, whole register blocks; their block of x stays in L2. */
#define MC 224
_Static_assert(MC % MR == 0 && MC * LDA <= LINEAR_BF16_AVX512_BUFFER_WORDS,
               "the pass's block of x fits the buffer");

bool linear_bf16_avx512_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

/* c[0..mr) x [0..PANEL) (+)= a . b over kp pairs: a (mr rows, LDA apart,
 * a pair per word), b (kp rows of PANEL words). `add`: accumulate onto c
 * instead of overwriting; then + bias[0..PANEL) unless bias is NULL; m0,
 * m1 mask the columns that exist. mr is a constant in each inlined copy, so
 * the accumulators live in registers. */
static inline __attribute__((always_inline)) TARGET void
block(const uint32_t *a, const uint32_t *b, size_t kp, const uint32_t *prefetch, float *c,
      size_t ldc, int mr, __mmask16 m0, __mmask16 m1, bool add, const float *bias)
{
    __m512 acc[MR][2];
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        _mm_prefetch((const char *)(c + (size_t)i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)i * ldc + 16), _MM_HINT_T0);
    }
    for (size_t q = 0; q < kp; q++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(b + q * PANEL);
        const __m512bh b1 = (__m512bh)_mm512_load_si512(b + q * PANEL + 16);
        if (prefetch != NULL) {
            _mm_prefetch((const char *)(prefetch + q * PANEL), _MM_HINT_T0);
            _mm_prefetch((const char *)(prefetch + q * PANEL + 16), _MM_HINT_T0);
        }
#pragma GCC unroll 14
        for (int i = 0; i < mr; i++) {
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[(size_t)i * LDA + q]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
        }
    }
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        float *ci = c + (size_t)i * ldc;
        if (add) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, ci));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, ci + 16));
        }
        if (bias != NULL) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, bias));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, bias + 16));
        }
        _mm512_mask_storeu_ps(ci, m0, acc[i][0]);
        _mm512_mask_storeu_ps(ci + 16, m1, acc[i][1]);
    }
}

/* block() for any mr in 1..MR, each with constant bounds. */
static TARGET void any_block(const uint32_t *a, const uint32_t *b, size_t kp,
                             const uint32_t *prefetch, float *c, size_t ldc, int mr,
                             __mmask16 m0, __mmask16 m1, bool add, const float *bias)
{
    switch (mr) {
#define ROWS(M)                                                  \
    case M:                                                      \
        block(a, b, kp, prefetch, c, ldc, M, m0, m1, add, bias); \
        break;
        ROWS(14) ROWS(13) ROWS(12) ROWS(11) ROWS(10) ROWS(9) ROWS(8)
        ROWS(7) ROWS(6) ROWS(5) ROWS(4) ROWS(3) ROWS(2) ROWS(1)
#undef ROWS
    default:
        break;
    }
}

/* Rows [m0, m1) x inputs [k0, k0 + kb) of x into buf as bf16 pairs (round
 * to nearest even), one row every LDA words; an odd last input is paired
 * with 0. */
static TARGET void pack_rows(const float *x, size_t in, size_t m0, size_t m1, size_t k0,
                             size_t kb, uint32_t *buf)
{
    for (size_t m = m0; m < m1; m++, buf += LDA) {
        const float *src = x + m * in + k0;
        size_t t = 0;
        for (; t + 32 <= kb; t += 32) {
            const __m512 lo = _mm512_loadu_ps(src + t), hi = _mm512_loadu_ps(src + t + 16);
            _mm512_storeu_si512(buf + t / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        }
        if (t < kb) {
            const size_t rest = kb - t;
            const __m512 lo = _mm512_maskz_loadu_ps(simd_first_lanes(rest), src + t);
            const __m512 hi =
                _mm512_maskz_loadu_ps(simd_first_lanes(rest > 16 ? rest - 16 : 0),
                                      src + t + 16);
            _mm512_mask_storeu_epi32(buf + t / 2, simd_first_lanes((rest + 1) / 2),
                                     (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        }
    }
}

TARGET
void linear_bf16_avx512_run(const struct linear_bf16_avx512_weight *p, const float *x,
                            size_t rows, size_t c0, size_t c1, float *y, size_t ldy,
                            const float *bias, uint32_t *buf)
{
    const size_t p0 = c0 / PANEL, p1 = panel_count(c1);
    if (c1 <= c0)
        return;
    for (size_t mc = 0; mc < rows; mc += MC) {
        const size_t mc_end = rows - mc < MC ? rows : mc + MC;
        for (size_t q0 = 0; q0 < p->pairs; q0 += KP) {
            const size_t kp = p->pairs - q0 < KP ? p->pairs - q0 : KP;
            const size_t k0 = 2 * q0, kb = p->in - k0 < 2 * kp ? p->in - k0 : 2 * kp;
            pack_rows(x, p->in, mc, mc_end, k0, kb, buf);
            for (size_t pan = p0; pan < p1; pan++) {
                const size_t width = c1 - pan * PANEL < PANEL ? c1 - pan * PANEL : PANEL;
                const __mmask16 m0 = simd_first_lanes(width);
                const __mmask16 m1 = simd_first_lanes(width > 16 ? width - 16 : 0);
                const uint32_t *b = p->panels + (pan * p->pairs + q0) * PANEL;
                /* The next panel's block, fetched while this one's first
                 * rows compute. */
                const uint32_t *next = pan + 1 < p1 ? b + p->pairs * PANEL : NULL;
                /* The bias joins each sum once its last inputs are in. */
                const float *bias_now =
                    bias != NULL && q0 + kp == p->pairs ? bias + pan * PANEL : NULL;
                const uint32_t *a = buf;
                for (size_t m = mc; m < mc_end; m += MR, a += MR * LDA) {
                    const int mr = mc_end - m < MR ? (int)(mc_end - m) : MR;
                    any_block(a, b, kp, m == mc ? next : NULL, y + m * ldy + pan * PANEL, ldy,
                              mr, m0, m1, q0 > 0, bias_now);
                }
            }
        }
    }
}

#else

bool linear_bf16_avx512_available(void)
{
    return false;
}

void linear_bf16_avx512_run(const struct linear_bf16_avx512_weight *p, const float *x,
                            size_t rows, size_t c0, size_t c1, float *y, size_t ldy,
                            const float *bias, uint32_t *buf)
{
    (void)p, (void)x, (void)rows, (void)c0, (void)c1, (void)y, (void)ldy, (void)bias, (void)buf;
    abort(); /* unreachable: nothing packs on this target */
}

#endif

struct linear_bf16_avx512_weight *linear_bf16_avx512_pack(const float *w, size_t out, size_t in)
{
    if (!linear_bf16_avx512_available() || out == 0 || in == 0)
        return NULL;
    struct linear_bf16_avx512_weight *p = malloc(sizeof *p);
    if (p == NULL)
        return NULL;
    const size_t pairs = (in + 1) / 2, words = panel_count(out) * pairs * PANEL;
    *p = (struct linear_bf16_avx512_weight){out, in, pairs, NULL};
    /* words is a multiple of PANEL: whole 128-byte rows. */
    p->panels = aligned_alloc(64, words * sizeof *p->panels);
    if (p->panels == NULL) {
        free(p);
        return NULL;
    }
    for (size_t pan = 0; pan < panel_count(out); pan++) {
        uint32_t *panel = p->panels + pan * pairs * PANEL;
        for (size_t q = 0; q < pairs; q++)
            for (size_t j = 0; j < PANEL; j++) {
                const size_t col = pan * PANEL + j;
                uint32_t pair = 0;
                if (col < out) {
                    const float *row = w + col * in;
                    pair = bert_f32_to_bf16(row[2 * q]);
                    if (2 * q + 1 < in)
                        pair |= (uint32_t)bert_f32_to_bf16(row[2 * q + 1]) << 16;
                }
                panel[q * PANEL + j] = pair;
            }
    }
    return p;
}

void linear_bf16_avx512_free(struct linear_bf16_avx512_weight *p)
{
    if (p == NULL)
        return;
    free(p->panels);
    free(p);
}

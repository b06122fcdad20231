#include "linear_f32.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "simd.h"

#define PANEL LINEAR_F32_PANEL
#define HUGE_PAGE ((size_t)2 << 20)

struct linear_f32_weight {
    size_t out, in;
    const float *panels; /* panel p: columns [p * PANEL, ...) as (in, width); not owned */
};

/* Width of panel p of a weight with `out` columns. */
static size_t panel_width(size_t out, size_t p)
{
    return out - p * PANEL < PANEL ? out - p * PANEL : PANEL;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f")))

/* Rows per register block: MR x 2 accumulators of 16 floats, two weight
 * vectors, the input broadcast straight from memory: 30 of the 32 zmm. */
#define MR 14
/* Inner dimension per pass: BERT-base's hidden size, so a product from the
 * hidden state finishes each sum in one pass and one from the FFN's 3,072
 * in four; each further pass reloads every output and adds to it. The
 * panel's KC x PANEL block (96 KiB) streams from L2 like x's: 1.9% faster
 * a pass than 256 inputs a pass, whose panel block stayed in L1. */
#define KC 768
/* Rows per pass, whole register blocks: their MC x KC block of x (798 KiB,
 * the caller's buffer) stays in L2 across the panels. Each pass streams
 * every panel of W, so a share of 256 rows (4,096 over 16 members) must
 * fit one pass: at 252 a last pass of 4 rows streamed W again. Passes of
 * 504 rows measured no faster on 512-row and 4096-row products. */
#define MC (19 * MR)
_Static_assert(MC * KC <= LINEAR_F32_BUFFER_FLOATS, "the pass's block of x fits the buffer");

bool linear_f32_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

/* c[0..mr) x [0..width) (+)= a . b over kb inner steps, a packed k-major
 * (MR values per step, the first mr used), b (kb rows of `width`); `add`:
 * accumulate onto c instead of overwriting; then + bias[0..width) unless
 * bias is NULL. mr is a constant in each inlined copy, so the accumulators
 * live in registers. */
static inline __attribute__((always_inline)) TARGET void
block(const float *a, const float *b, size_t width, size_t kb, const float *prefetch, float *c,
      size_t ldc, int mr, __mmask16 m0, __mmask16 m1, bool add, const float *bias)
{
    __m512 acc[MR][2];
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        /* c is touched only after the k loop: fetch it meanwhile. */
        _mm_prefetch((const char *)(c + (size_t)i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)i * ldc + 16), _MM_HINT_T0);
    }
    for (size_t k = 0; k < kb; k++) {
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * width);
        const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + k * width + 16);
        if (prefetch != NULL) {
            _mm_prefetch((const char *)(prefetch + k * PANEL), _MM_HINT_T0);
            _mm_prefetch((const char *)(prefetch + k * PANEL + 16), _MM_HINT_T0);
        }
#pragma GCC unroll 14
        for (int i = 0; i < mr; i++) {
            const __m512 av = _mm512_set1_ps(a[k * MR + i]);
            acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
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
static TARGET void any_block(const float *a, const float *b, size_t width, size_t kb,
                             const float *prefetch, float *c, size_t ldc, int mr, bool add,
                             const float *bias)
{
    /* Nearly every block is a whole one: copies of their own, with plain
     * loads and stores, and no prefetch test in the k loop. */
    if (mr == MR && width == PANEL) {
        if (prefetch != NULL)
            block(a, b, PANEL, kb, prefetch, c, ldc, MR, 0xffff, 0xffff, add, bias);
        else
            block(a, b, PANEL, kb, NULL, c, ldc, MR, 0xffff, 0xffff, add, bias);
        return;
    }
    const __mmask16 m0 = simd_first_lanes(width);
    const __mmask16 m1 = simd_first_lanes(width > 16 ? width - 16 : 0);
    switch (mr) {
#define ROWS(M)                                                    \
    case M:                                                        \
        block(a, b, width, kb, prefetch, c, ldc, M, m0, m1, add, bias); \
        break;
        ROWS(14) ROWS(13) ROWS(12) ROWS(11) ROWS(10) ROWS(9) ROWS(8)
        ROWS(7) ROWS(6) ROWS(5) ROWS(4) ROWS(3) ROWS(2) ROWS(1)
#undef ROWS
    default:
        break;
    }
}

/* r[i] lane j <- r[j] lane i: sixteen rows of sixteen floats transposed in
 * registers (pairs, then quads, then 128-bit and 256-bit halves). */
static inline __attribute__((always_inline)) TARGET void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

/* Rows [m0, m1) x columns [k0, k0 + kb) of x into buf, MR rows at a time,
 * sixteen columns at a time transposed in registers: element by element
 * the strided stores cost up to a tenth of a product whose output is
 * narrow (768 columns). Rows past the last of a block are packed as 0. */
static TARGET void pack_rows(const float *x, size_t in, size_t m0, size_t m1, size_t k0, size_t kb,
                             float *buf)
{
    for (size_t m = m0; m < m1; m += MR) {
        const size_t mr = m1 - m < MR ? m1 - m : MR;
        const float *src = x + m * in + k0;
        for (size_t k = 0; k < kb; k += 16) {
            const size_t n = kb - k < 16 ? kb - k : 16;
            __m512 r[16];
            for (size_t i = 0; i < 16; i++)
                r[i] = i < mr ? _mm512_maskz_loadu_ps(simd_first_lanes(n), src + i * in + k)
                              : _mm512_setzero_ps();
            transpose16(r);
            for (size_t j = 0; j < n; j++)
                _mm512_mask_storeu_ps(buf + (k + j) * MR, simd_first_lanes(MR), r[j]);
        }
        buf += MR * kb;
    }
}

/* x is packed k-major in blocks of MR rows into `buf`, a pass's MC x KC
 * block at a time: the kernel then reads its inputs in order, and rows
 * whose stride is a multiple of 4 KiB (in = 1024, 3072) do not all fall in
 * one L1 set. */
TARGET
void linear_f32_run(const struct linear_f32_weight *p, const float *x, size_t rows, size_t c0,
                    size_t c1, float *y, size_t ldy, const float *bias, float *buf)
{
    const size_t in = p->in;
    const size_t p0 = c0 / PANEL, p1 = (c1 + PANEL - 1) / PANEL;
    if (rows == 0 || c1 <= c0)
        return;
    for (size_t mc = 0; mc < rows; mc += MC) {
        const size_t mc_end = rows - mc < MC ? rows : mc + MC;
        for (size_t kc = 0; kc < in; kc += KC) {
            const size_t kb = in - kc < KC ? in - kc : KC;
            pack_rows(x, in, mc, mc_end, kc, kb, buf);
            for (size_t pan = p0; pan < p1; pan++) {
                const size_t width = panel_width(p->out, pan);
                const float *b = p->panels + pan * PANEL * in + kc * width;
                /* The next full panel's block, fetched while this one's
                 * first rows compute. */
                const float *next =
                    pan + 1 < p1 && (pan + 2) * PANEL <= p->out ? b + PANEL * in : NULL;
                /* The bias joins each sum once its last inputs are in. */
                const float *bias_now = bias != NULL && kc + kb == in ? bias + pan * PANEL : NULL;
                const float *a = buf;
                for (size_t m = mc; m < mc_end; m += MR, a += MR * kb) {
                    const int mr = mc_end - m < MR ? (int)(mc_end - m) : MR;
                    any_block(a, b, width, kb, m == mc ? next : NULL, y + m * ldy + pan * PANEL,
                              ldy, mr, kc > 0, bias_now);
                }
            }
        }
    }
}

#else

bool linear_f32_available(void)
{
    return false;
}

void linear_f32_run(const struct linear_f32_weight *p, const float *x, size_t rows, size_t c0,
                    size_t c1, float *y, size_t ldy, const float *bias, float *buf)
{
    (void)p, (void)x, (void)rows, (void)c0, (void)c1, (void)y, (void)ldy, (void)bias, (void)buf;
    abort(); /* unreachable: nothing packs on this target */
}

#endif

size_t linear_f32_floats(size_t out, size_t in)
{
    return (out * in + 15) & ~(size_t)15;
}

float *linear_f32_alloc(size_t floats)
{
    const size_t bytes = floats * sizeof(float);
    const bool huge = bytes >= HUGE_PAGE;
    void *mem = NULL;
    if (bytes == 0 || posix_memalign(&mem, huge ? HUGE_PAGE : 64, bytes) != 0)
        return NULL;
    /* Only whole huge pages: nothing past the weights becomes resident. */
    if (huge)
        (void)madvise(mem, bytes & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* advice only */
    return mem;
}

struct linear_f32_weight *linear_f32_pack(const float *w, size_t out, size_t in, float *dst)
{
    if (!linear_f32_available() || out == 0 || in == 0)
        return NULL;
    struct linear_f32_weight *p = malloc(sizeof *p);
    if (p == NULL)
        return NULL;
    *p = (struct linear_f32_weight){out, in, dst};
    for (size_t pan = 0; pan * PANEL < out; pan++) {
        const size_t width = panel_width(out, pan);
        float *panel = dst + pan * PANEL * in;
        const float *src = w + pan * PANEL * in;
        for (size_t k = 0; k < in; k++)
            for (size_t j = 0; j < width; j++)
                panel[k * width + j] = src[j * in + k];
    }
    return p;
}

void linear_f32_weight_free(struct linear_f32_weight *p)
{
    free(p);
}

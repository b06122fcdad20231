#include "linear_int8.h"

#ifdef BERT_HAVE_DNNL

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "kernels.h"
#include "onednn.h"
#include "profile.h"
#include "simd.h"
#include "vmath.h"

typedef int8_t vq16 __attribute__((vector_size(VLANES)));

/* Weights are packed for this many rows; oneDNN's brgemm int8 kernels keep
 * one blocked weight layout for every row count (a primitive made for a
 * layout it does not take fails, and that product runs in f32). */
#define PACK_ROWS 256
/* A context's cache of ready primitives, by shape. */
#define CACHE_SLOTS 128
/* Symmetric int8: [-127, 127], so that -q is always representable. */
#define QMAX 127.0f

struct linear_int8_weight {
    size_t out, in;
    float *scale;               /* (out) per output channel */
    size_t min_rows;            /* products of fewer rows are padded to this many;
                                   0: none can be (fewer than ONEDNN_PAD_ROWS_MAX are
                                   then refused where oneDNN has no kernel) */
    dnnl_memory_t mem;          /* s8, oneDNN's layout (with its compensation) */
    dnnl_memory_desc_t md;
};

/* The process's CPU engine, made once; usable only where oneDNN has fast
 * int8 kernels (VNNI or AMX). */
static struct {
    pthread_once_t once;
    dnnl_engine_t engine;
    bool usable;
    const char *isa;
    char why[200];
} dnnl = {.once = PTHREAD_ONCE_INIT, .isa = "none"};

struct linear_int8_ctx {
    dnnl_stream_t stream;
    int8_t *src;                /* (onednn_src_rows(max_rows) * max_in) quantized activations */
    float *row_scale;           /* (max_rows) */
    float *acc;                 /* products bound for strided rows, or padded ones
                                   (onednn_out_floats) */
    size_t src_cap, rows_cap, acc_cap;
    /* The y whose rows src and row_scale hold quantized (an epilogue's
     * keep_quantized), with their count and width; NULL: none. */
    const float *kept;
    size_t kept_rows, kept_in;
    struct onednn_slot slots[CACHE_SLOTS];
};

/* Quantize one row symmetrically: q = round(x / s), s = max |x| / 127.
 * Returns s (0 for a row of zeros); NaN when the row holds a NaN or an
 * infinity (its q are then zeros and its outputs NaN, so the engine's
 * non-finite check still sees it). The maximum is taken on the bits: for
 * |x| they order as the floats do, and NaN / infinity sort above every
 * finite value. */
BERT_HOT
static float quantize_row(const float *x, size_t n, int8_t *q)
{
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        b &= 0x7fffffffu;
        top = b > top ? b : top;
    }
    /* Below FLT_MIN 127 / max would overflow: such a row (zero, or all
     * subnormal) counts as zero. */
    if (top >= 0x7f800000u || top < 0x00800000u) {
        memset(q, 0, n);
        return top < 0x00800000u ? 0.0f : NAN;
    }
    float amax;
    memcpy(&amax, &top, sizeof amax);
    /* Round to nearest, ties to even, as lrintf would but vectorised:
     * adding 1.5 * 2^23 leaves no fraction bits for |x * inv| <= 127 (the
     * product may be fused, which rounds the exact x * inv: no worse). */
    const float inv = QMAX / amax, magic = 12582912.0f;
    const size_t nv = n - n % VLANES;
    for (size_t i = 0; i < nv; i += VLANES) {
        /* Whole vectors narrowed in one step (vpmovdb on AVX-512), not
         * through the pack-and-permute chain a scalar loop becomes. */
        const vi16 k = __builtin_convertvector((vf16_load(x + i) * inv + magic) - magic, vi16);
        const vq16 b = __builtin_convertvector(k, vq16);
        memcpy(q + i, &b, sizeof b);
    }
    for (size_t i = nv; i < n; i++)
        q[i] = (int8_t)(int32_t)((x[i] * inv + magic) - magic);
    return amax / QMAX;
}

/* A matmul descriptor s8 (rows, in) x s8 (in, out) -> f32 (rows, out),
 * the weights in `wei_md` (format_tag_any lets oneDNN choose). NULL when
 * oneDNN has only a reference kernel for it. The output is contiguous:
 * oneDNN 2.6 has only reference kernels for a few rows with strided
 * output (Q, K and V into their (T, 3H) matrix), so those products land
 * in the context's buffer and dequantize() spreads them. */
static dnnl_primitive_desc_t matmul_pd(size_t rows, size_t in, size_t out,
                                       const dnnl_memory_desc_t *wei_md)
{
    return onednn_matmul_pd(dnnl.engine, dnnl_s8, rows, in, out, wei_md, false);
}

static dnnl_primitive_desc_t matmul_pd_any(size_t rows, size_t in, size_t out)
{
    dnnl_memory_desc_t wei_md;
    dnnl_dims_t wd = {(dnnl_dim_t)in, (dnnl_dim_t)out};
    if (dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, dnnl_s8, dnnl_format_tag_any))
        return NULL;
    return matmul_pd(rows, in, out, &wei_md);
}

static void init_once(void)
{
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa == dnnl_cpu_isa_avx512_core_amx)
        dnnl.isa = "AMX-INT8";
    else if ((isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni)
        dnnl.isa = "AVX512-VNNI";
    else if (isa == dnnl_cpu_isa_avx2_vnni)
        dnnl.isa = "AVX-VNNI";
    else {
        snprintf(dnnl.why, sizeof dnnl.why,
                 "this CPU has none of AVX512-VNNI, AVX-VNNI and AMX-INT8 (oneDNN's best ISA "
                 "here is 0x%x)",
                 (unsigned)isa);
        return;
    }
    if (dnnl_engine_create(&dnnl.engine, dnnl_cpu, 0) != dnnl_success) {
        snprintf(dnnl.why, sizeof dnnl.why, "oneDNN could not create a CPU engine");
        dnnl.isa = "none";
        return;
    }
    /* The ISA alone is not enough: this oneDNN must have a kernel for it. */
    dnnl_primitive_desc_t probe = matmul_pd_any(32, 64, 64);
    if (probe == NULL) {
        snprintf(dnnl.why, sizeof dnnl.why,
                 "oneDNN %d.%d has no fast int8 matmul for this CPU's %s", DNNL_VERSION_MAJOR,
                 DNNL_VERSION_MINOR, dnnl.isa);
        dnnl.isa = "none";
        return;
    }
    dnnl_primitive_desc_destroy(probe);
    dnnl.usable = true;
}

const char *bert_int8_isa(void)
{
    pthread_once(&dnnl.once, init_once);
    return dnnl.isa;
}

bool bert_int8_available(char *why, size_t why_len)
{
    pthread_once(&dnnl.once, init_once);
    if (!dnnl.usable && why)
        snprintf(why, why_len, "%s", dnnl.why);
    return dnnl.usable;
}

void linear_int8_weight_free(struct linear_int8_weight *p)
{
    if (p == NULL)
        return;
    if (p->mem)
        dnnl_memory_destroy(p->mem);
    free(p->scale);
    free(p);
}

/* Per-channel scales of W (out, in) and its int8 values, row-major. */
static void quantize_weight(const float *w, size_t out, size_t in, float *scale, int8_t *q)
{
    for (size_t c = 0; c < out; c++) {
        const float s = quantize_row(w + c * in, in, q + c * in);
        /* A weight that is not finite would poison every output: keep its
         * channel at zero scale (f32 would give NaN; bert_weights_bind
         * refuses such checkpoints anyway). */
        scale[c] = isnan(s) ? 0.0f : s;
    }
}

/* The weight (n_parts * out_each, in) of the parts stacked row-wise. */
static struct linear_int8_weight *pack_parts(const float *const *parts, size_t n_parts,
                                             size_t out_each, size_t in)
{
    if (!bert_int8_available(NULL, 0))
        return NULL;
    const size_t out = n_parts * out_each;
    struct linear_int8_weight *p = calloc(1, sizeof *p);
    int8_t *q = malloc(out * in);
    dnnl_primitive_desc_t pd = matmul_pd_any(PACK_ROWS, in, out);
    bool ok = p != NULL && q != NULL && pd != NULL &&
              (p->scale = malloc(out * sizeof *p->scale)) != NULL;
    if (ok) {
        p->out = out;
        p->in = in;
        p->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        p->min_rows = onednn_min_rows(dnnl.engine, dnnl_s8, in, out, &p->md);
        for (size_t k = 0; k < n_parts; k++)
            quantize_weight(parts[k], out_each, in, p->scale + k * out_each,
                            q + k * out_each * in);
        /* torch's (out, in) row-major is the "ba" layout of dims (in, out). */
        dnnl_memory_desc_t user_md;
        dnnl_dims_t wd = {(dnnl_dim_t)in, (dnnl_dim_t)out};
        ok = !dnnl_memory_desc_init_by_tag(&user_md, 2, wd, dnnl_s8, dnnl_ba) &&
             onednn_reorder_new(dnnl.engine, &user_md, q, &p->md, &p->mem);
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    free(q);
    if (!ok) {
        linear_int8_weight_free(p);
        return NULL;
    }
    return p;
}

struct linear_int8_weight *linear_int8_pack(const float *w, size_t out, size_t in)
{
    return pack_parts(&w, 1, out, in);
}

struct linear_int8_weight *linear_int8_pack_stacked(const float *const *parts, size_t n_parts,
                                                    size_t out, size_t in)
{
    return pack_parts(parts, n_parts, out, in);
}

size_t linear_int8_weight_min_rows(const struct linear_int8_weight *w)
{
    return w->min_rows;
}

void linear_int8_weight_pad_to(struct linear_int8_weight *w, size_t rows)
{
    w->min_rows = rows <= ONEDNN_PAD_ROWS_MAX ? rows : ONEDNN_PAD_ROWS_MAX;
}

size_t linear_int8_ctx_bytes(size_t max_rows, size_t max_in, size_t max_out,
                             size_t max_strided_out)
{
    if (!bert_int8_available(NULL, 0))
        return 0;
    return onednn_src_rows(max_rows) * max_in +
           sizeof(float) * (max_rows + onednn_out_floats(max_rows, max_out, max_strided_out));
}

struct linear_int8_ctx *linear_int8_ctx_new(size_t max_rows, size_t max_in, size_t max_out,
                                            size_t max_strided_out)
{
    if (!bert_int8_available(NULL, 0))
        return NULL;
    struct linear_int8_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return NULL;
    ctx->src_cap = onednn_src_rows(max_rows) * max_in;
    ctx->rows_cap = max_rows;
    ctx->acc_cap = onednn_out_floats(max_rows, max_out, max_strided_out);
    ctx->src = malloc(ctx->src_cap ? ctx->src_cap : 1);
    ctx->row_scale = malloc((max_rows ? max_rows : 1) * sizeof *ctx->row_scale);
    ctx->acc = malloc((ctx->acc_cap ? ctx->acc_cap : 1) * sizeof *ctx->acc);
    if (ctx->src == NULL || ctx->row_scale == NULL || ctx->acc == NULL ||
        dnnl_stream_create(&ctx->stream, dnnl.engine, dnnl_stream_default_flags) != dnnl_success) {
        linear_int8_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void linear_int8_ctx_free(struct linear_int8_ctx *ctx)
{
    if (ctx == NULL)
        return;
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        onednn_slot_clear(&ctx->slots[i]);
    if (ctx->stream)
        dnnl_stream_destroy(ctx->stream);
    free(ctx->src);
    free(ctx->row_scale);
    free(ctx->acc);
    free(ctx);
}

/* The primitive for (weight layout, rows); NULL where oneDNN has no fast
 * kernel. Weights of one shape share a layout, so they share primitives. */
static struct onednn_slot *slot_for(struct linear_int8_ctx *ctx,
                                    const struct linear_int8_weight *p, size_t rows)
{
    return onednn_slot_get(ctx->slots, CACHE_SLOTS, dnnl.engine, dnnl_s8, rows, p->in, p->out,
                           &p->md, false);
}

bool linear_int8_run_epilogue(struct linear_int8_ctx *ctx, const struct linear_int8_weight *w,
                              const float *x, size_t rows, size_t in, size_t out, float *y,
                              size_t ldy, const struct linear_int8_epilogue *ep)
{
    /* Padded, the product runs on zero rows past x's; padded or strided,
     * into the context's buffer, whose first `rows` rows are y's. */
    const size_t run_rows = rows < w->min_rows ? w->min_rows : rows;
    float *acc = run_rows > rows || ldy != out ? ctx->acc : y;
    const bool reuse = ctx->kept == x && ctx->kept_rows == rows && ctx->kept_in == in;
    ctx->kept = NULL;
    if (rows == 0 || w->in != in || w->out != out || run_rows * in > ctx->src_cap ||
        rows > ctx->rows_cap || (acc == ctx->acc && run_rows * out > ctx->acc_cap))
        return false;
    struct onednn_slot *s = slot_for(ctx, w, run_rows);
    if (s == NULL)
        return false;
    /* The compute team already runs one pass per core (linear_bf16.c). */
    omp_set_num_threads(1);
    for (size_t r = 0; !reuse && r < rows; r++)
        ctx->row_scale[r] = quantize_row(x + r * in, in, ctx->src + r * in);
    memset(ctx->src + rows * in, 0, (run_rows - rows) * in);
    prof_lap(BERT_OP_CONVERT);
    dnnl_memory_set_data_handle(s->src, ctx->src);
    dnnl_memory_set_data_handle(s->dst, acc);
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, s->src}, {DNNL_ARG_WEIGHTS, w->mem}, {DNNL_ARG_DST, s->dst}};
    if (dnnl_primitive_execute(s->prim, ctx->stream, 3, args) != dnnl_success ||
        dnnl_stream_wait(ctx->stream) != dnnl_success)
        return false;
    prof_lap(BERT_OP_DENSE);
    /* The product has read src: the finished rows may take its place. */
    const bool keep = ep != NULL && ep->keep_quantized && ldy == out && rows * out <= ctx->src_cap;
    const enum bert_activation *act = ep != NULL && ep->activate ? &ep->act : NULL;
    for (size_t r = 0; r < rows; r++) {
        float *yr = y + r * ldy;
        kernel_dequantize_row(yr, acc + r * out, out, ctx->row_scale[r], w->scale,
                              ep != NULL ? ep->bias : NULL, act);
        if (ep != NULL && ep->gamma != NULL)
            kernel_add_layernorm_row(yr, ep->residual ? ep->residual + r * ldy : NULL,
                                     ep->gamma, ep->beta, out, ep->eps);
        if (keep)
            ctx->row_scale[r] = quantize_row(yr, out, ctx->src + r * out);
    }
    if (keep) {
        ctx->kept = y;
        ctx->kept_rows = rows;
        ctx->kept_in = out;
    }
    prof_lap(act != NULL                       ? BERT_OP_ACTIVATION
             : ep != NULL && ep->gamma != NULL ? BERT_OP_NORM
                                               : BERT_OP_CONVERT);
    return true;
}

void linear_int8_forget(struct linear_int8_ctx *ctx)
{
    if (ctx != NULL)
        ctx->kept = NULL;
}

bool linear_int8_run(struct linear_int8_ctx *ctx, const struct linear_int8_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy)
{
    return linear_int8_run_epilogue(ctx, w, x, rows, in, out, y, ldy, NULL);
}

#else /* !BERT_HAVE_DNNL */

#include <stdio.h>

bool bert_int8_available(char *why, size_t why_len)
{
    if (why)
        snprintf(why, why_len, "this build has no oneDNN (install libdnnl-dev and rebuild)");
    return false;
}

const char *bert_int8_isa(void)
{
    return "none";
}

struct linear_int8_weight *linear_int8_pack(const float *w, size_t out, size_t in)
{
    (void)w, (void)out, (void)in;
    return NULL;
}

struct linear_int8_weight *linear_int8_pack_stacked(const float *const *parts, size_t n_parts,
                                                    size_t out, size_t in)
{
    (void)parts, (void)n_parts, (void)out, (void)in;
    return NULL;
}

void linear_int8_weight_free(struct linear_int8_weight *p)
{
    (void)p;
}

size_t linear_int8_weight_min_rows(const struct linear_int8_weight *w)
{
    (void)w;
    return 0;
}

void linear_int8_weight_pad_to(struct linear_int8_weight *w, size_t rows)
{
    (void)w, (void)rows;
}

size_t linear_int8_ctx_bytes(size_t max_rows, size_t max_in, size_t max_out,
                             size_t max_strided_out)
{
    (void)max_rows, (void)max_in, (void)max_out, (void)max_strided_out;
    return 0;
}

struct linear_int8_ctx *linear_int8_ctx_new(size_t max_rows, size_t max_in, size_t max_out,
                                            size_t max_strided_out)
{
    (void)max_rows, (void)max_in, (void)max_out, (void)max_strided_out;
    return NULL;
}

void linear_int8_ctx_free(struct linear_int8_ctx *ctx)
{
    (void)ctx;
}

bool linear_int8_run(struct linear_int8_ctx *ctx, const struct linear_int8_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy)
{
    (void)ctx, (void)w, (void)x, (void)rows, (void)in, (void)out, (void)y, (void)ldy;
    return false;
}

void linear_int8_forget(struct linear_int8_ctx *ctx)
{
    (void)ctx;
}

bool linear_int8_run_epilogue(struct linear_int8_ctx *ctx, const struct linear_int8_weight *w,
                              const float *x, size_t rows, size_t in, size_t out, float *y,
                              size_t ldy, const struct linear_int8_epilogue *ep)
{
    (void)ep;
    return linear_int8_run(ctx, w, x, rows, in, out, y, ldy);
}

#endif

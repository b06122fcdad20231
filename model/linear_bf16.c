#include "linear_bf16.h"

#ifdef BERT_HAVE_DNNL

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "kernels.h"
#include "linear_bf16_avx512.h"
#include "onednn.h"
#include "profile.h"
#include "simd.h"

/* Packed weights are made for this many rows; oneDNN's AMX kernels keep the
 * same blocked weight layout for every row count but a few (onednn.h),
 * so one copy serves all. */
#define PACK_ROWS 256
/* A context's cache of ready primitives, by shape. */
#define CACHE_SLOTS 128

struct linear_bf16_weight {
    size_t out, in;
    size_t min_rows;            /* oneDNN's: products of fewer rows are padded to this
                                   many; 0: none can be (they are refused) */
    dnnl_memory_t mem;          /* bf16, oneDNN's layout (AMX) */
    dnnl_memory_desc_t md;
    struct linear_bf16_avx512_weight *own; /* or our panels (AVX512_BF16 alone) */
};

/* Which kernels run bf16, decided once: oneDNN's on AMX (its CPU engine
 * made then), ours (linear_bf16_avx512.h) on AVX512_BF16 without AMX, where
 * they ran BERT-base 1.2-2.8x faster than oneDNN's (BENCHMARKS.md, "bf16
 * without AMX"); none elsewhere. */
static struct {
    pthread_once_t once;
    dnnl_engine_t engine;
    bool usable;
    bool own;       /* ours runs */
    char why[160];  /* why none can, when !usable */
} backend = {.once = PTHREAD_ONCE_INIT};

/* bert_bf16_use_onednn: oneDNN's kernels where ours would run. */
static atomic_bool prefer_onednn;

/* Whether weights packed and contexts made now use our kernel. */
static bool own_kernel(void)
{
    return backend.own && !atomic_load(&prefer_onednn);
}

struct linear_bf16_ctx {
    dnnl_stream_t stream;
    uint16_t *src;              /* (onednn_src_rows(max_rows) * max_in) bf16 activations */
    float *out;                 /* a padded product's output, or a strided one's
                                   (onednn_out_floats) */
    size_t src_cap, out_cap;
    /* The x whose rows src holds in bf16 already (linear_bf16_keep), with
     * their count and width; NULL: none. */
    const float *kept;
    size_t kept_rows, kept_in;
    struct onednn_slot slots[CACHE_SLOTS];
    uint32_t *own_buf;          /* our kernel's block of x (LINEAR_BF16_AVX512_BUFFER_WORDS) */
};

static void init_once(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa != dnnl_cpu_isa_avx512_core_amx && linear_bf16_avx512_available()) {
        backend.usable = backend.own = true;
        return;
    }
    if (isa != dnnl_cpu_isa_avx512_core_bf16 && isa != dnnl_cpu_isa_avx512_core_amx) {
        snprintf(backend.why, sizeof backend.why,
                 "this CPU has neither AMX nor AVX512_BF16 (oneDNN's best ISA here is %d)",
                 (int)isa);
        return;
    }
    if (dnnl_engine_create(&backend.engine, dnnl_cpu, 0) != dnnl_success) {
        snprintf(backend.why, sizeof backend.why, "oneDNN could not create a CPU engine");
        return;
    }
    backend.usable = true;
}

const char *bert_bf16_isa(void)
{
    pthread_once(&backend.once, init_once);
    if (!backend.usable)
        return "none";
    return backend.own || dnnl_get_effective_cpu_isa() != dnnl_cpu_isa_avx512_core_amx
               ? "AVX512_BF16"
               : "AMX";
}

bool bert_bf16_available(char *why, size_t why_len)
{
    pthread_once(&backend.once, init_once);
    if (!backend.usable && why)
        snprintf(why, why_len, "%s", backend.why);
    return backend.usable;
}

bool bert_bf16_use_onednn(bool on)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_once(&backend.once, init_once);
    pthread_mutex_lock(&lock);
    if (on && backend.usable && backend.engine == NULL &&
        dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx512_core_bf16 &&
        dnnl_engine_create(&backend.engine, dnnl_cpu, 0) != dnnl_success)
        backend.engine = NULL;
    const bool ok = !on || backend.engine != NULL;
    if (ok)
        atomic_store(&prefer_onednn, on);
    pthread_mutex_unlock(&lock);
    return ok;
}

void linear_bf16_weight_free(struct linear_bf16_weight *p)
{
    if (p == NULL)
        return;
    if (p->mem)
        dnnl_memory_destroy(p->mem);
    linear_bf16_avx512_free(p->own);
    free(p);
}

/* Convert W (out, in) f32 into our panels, or into oneDNN's bf16 layout for
 * its AMX matmul. */
struct linear_bf16_weight *linear_bf16_pack(const float *w, size_t out, size_t in)
{
    if (!bert_bf16_available(NULL, 0))
        return NULL;
    struct linear_bf16_weight *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->out = out;
    p->in = in;
    if (own_kernel()) {
        p->own = linear_bf16_avx512_pack(w, out, in);
        if (p->own == NULL) {
            free(p);
            return NULL;
        }
        return p;
    }
    dnnl_memory_desc_t src_md, wei_md, dst_md, user_md;
    dnnl_dims_t sd = {PACK_ROWS, (dnnl_dim_t)in}, wd = {(dnnl_dim_t)in, (dnnl_dim_t)out},
                dd = {PACK_ROWS, (dnnl_dim_t)out};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_matmul_desc_t mm;
    bool ok = false;
    if (dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dnnl_bf16, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, dnnl_bf16, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_ab) ||
        dnnl_matmul_desc_init(&mm, &src_md, &wei_md, NULL, &dst_md) ||
        dnnl_primitive_desc_create(&pd, &mm, NULL, backend.engine, NULL) || onednn_is_reference(pd))
        goto done;
    p->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    p->min_rows = onednn_min_rows(backend.engine, dnnl_bf16, in, out, &p->md);
    /* torch's (out, in) row-major is the "ba" layout of dims (in, out). */
    ok = !dnnl_memory_desc_init_by_tag(&user_md, 2, wd, dnnl_f32, dnnl_ba) &&
         onednn_reorder_new(backend.engine, &user_md, (void *)w, &p->md, &p->mem);
done:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (!ok) {
        linear_bf16_weight_free(p);
        return NULL;
    }
    return p;
}

struct linear_bf16_weight *linear_bf16_pack_stacked(const float *const *parts, size_t n_parts,
                                                    size_t out, size_t in)
{
    if (!bert_bf16_available(NULL, 0))
        return NULL;
    float *w = malloc(n_parts * out * in * sizeof *w);
    if (w == NULL)
        return NULL;
    for (size_t k = 0; k < n_parts; k++)
        memcpy(w + k * out * in, parts[k], out * in * sizeof *w);
    struct linear_bf16_weight *p = linear_bf16_pack(w, n_parts * out, in);
    free(w);
    return p;
}

struct linear_bf16_ctx *linear_bf16_ctx_new(size_t max_rows, size_t max_in, size_t max_out,
                                            size_t max_strided_out)
{
    if (!bert_bf16_available(NULL, 0))
        return NULL;
    struct linear_bf16_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return NULL;
    if (own_kernel()) {
        ctx->own_buf = aligned_alloc(64, LINEAR_BF16_AVX512_BUFFER_WORDS * sizeof(uint32_t));
        if (ctx->own_buf == NULL) {
            free(ctx);
            return NULL;
        }
        return ctx;
    }
    ctx->src_cap = onednn_src_rows(max_rows) * max_in;
    ctx->out_cap = onednn_out_floats(max_rows, max_out, max_strided_out);
    ctx->src = malloc(ctx->src_cap * sizeof *ctx->src);
    ctx->out = malloc((ctx->out_cap ? ctx->out_cap : 1) * sizeof *ctx->out);
    if (ctx->src == NULL || ctx->out == NULL ||
        dnnl_stream_create(&ctx->stream, backend.engine, dnnl_stream_default_flags) !=
            dnnl_success) {
        linear_bf16_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

size_t linear_bf16_ctx_bytes(size_t max_rows, size_t max_in, size_t max_out,
                             size_t max_strided_out)
{
    if (!bert_bf16_available(NULL, 0))
        return 0;
    return own_kernel() ? LINEAR_BF16_AVX512_BUFFER_WORDS * sizeof(uint32_t)
                        : onednn_src_rows(max_rows) * max_in * sizeof(uint16_t) +
                              onednn_out_floats(max_rows, max_out, max_strided_out) * sizeof(float);
}

bool linear_bf16_ctx_splits_cols(const struct linear_bf16_ctx *ctx)
{
    return ctx->own_buf != NULL;
}

size_t linear_bf16_weight_min_rows(const struct linear_bf16_weight *w)
{
    return w->own != NULL ? 1 : w->min_rows;
}

void linear_bf16_weight_pad_to(struct linear_bf16_weight *w, size_t rows)
{
    w->min_rows = rows <= ONEDNN_PAD_ROWS_MAX ? rows : ONEDNN_PAD_ROWS_MAX;
}

void linear_bf16_ctx_free(struct linear_bf16_ctx *ctx)
{
    if (ctx == NULL)
        return;
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        onednn_slot_clear(&ctx->slots[i]);
    if (ctx->stream)
        dnnl_stream_destroy(ctx->stream);
    free(ctx->src);
    free(ctx->out);
    free(ctx->own_buf);
    free(ctx);
}

/* The primitive for (weight layout, rows, with a bias or not); NULL where
 * oneDNN has no fast kernel. Weights of one shape share a layout, so they
 * share primitives. */
static struct onednn_slot *slot_for(struct linear_bf16_ctx *ctx,
                                    const struct linear_bf16_weight *p, size_t rows, bool biased)
{
    return onednn_slot_get(ctx->slots, CACHE_SLOTS, backend.engine, dnnl_bf16, rows, p->in, p->out,
                           &p->md, biased);
}

bool linear_bf16_run(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy,
                     const float *bias)
{
    const bool reuse = ctx->kept == x && ctx->kept_rows == rows && ctx->kept_in == in;
    ctx->kept = NULL;
    if (rows == 0 || w->in != in || w->out != out)
        return false;
    if (w->own != NULL) { /* converts x as it packs it: no separate pass */
        linear_bf16_avx512_run(w->own, x, rows, 0, out, y, ldy, bias, ctx->own_buf);
        return true;
    }
    /* Padded, the product runs on zero rows past x's; padded or strided,
     * into the context's buffer, and its first `rows` rows are copied to y. */
    const size_t run_rows = rows < w->min_rows ? w->min_rows : rows;
    const bool via_buffer = run_rows > rows || ldy != out;
    if (run_rows * in > ctx->src_cap || (via_buffer && run_rows * out > ctx->out_cap))
        return false;
    /* The bias joins oneDNN's epilogue, saving a pass over y; where it has
     * no fast kernel for that, it is added afterwards. */
    struct onednn_slot *s = bias != NULL ? slot_for(ctx, w, run_rows, true) : NULL;
    const bool biased = s != NULL;
    if (s == NULL)
        s = slot_for(ctx, w, run_rows, false);
    if (s == NULL)
        return false;
    /* The compute team already runs one pass per core: oneDNN's own OpenMP
     * threads inside each member would oversubscribe them. (Per call: a
     * member's thread is not the one that made its context.) */
    omp_set_num_threads(1);
    if (!reuse)
        kernel_to_bf16(x, rows * in, ctx->src);
    memset(ctx->src + rows * in, 0, (run_rows - rows) * in * sizeof *ctx->src);
    prof_lap(BERT_OP_CONVERT);
    dnnl_memory_set_data_handle(s->src, ctx->src);
    dnnl_memory_set_data_handle(s->dst, via_buffer ? ctx->out : y);
    if (biased)
        dnnl_memory_set_data_handle(s->bias, (void *)bias); /* only read */
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->src},
                               {DNNL_ARG_WEIGHTS, w->mem},
                               {DNNL_ARG_DST, s->dst},
                               {DNNL_ARG_BIAS, s->bias}};
    if (dnnl_primitive_execute(s->prim, ctx->stream, biased ? 4 : 3, args) != dnnl_success ||
        dnnl_stream_wait(ctx->stream) != dnnl_success)
        return false;
    for (size_t r = 0; via_buffer && r < rows; r++)
        memcpy(y + r * ldy, ctx->out + r * out, out * sizeof *y);
    if (bias != NULL && !biased) {
        prof_lap(BERT_OP_DENSE);
        kernel_add_bias(y, bias, rows, out, ldy);
    }
    return true;
}

bool linear_bf16_run_cols(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                          const float *x, size_t rows, size_t in, size_t c0, size_t c1, float *y,
                          size_t ldy, const float *bias)
{
    ctx->kept = NULL;
    if (w->own == NULL || rows == 0 || w->in != in || c1 > w->out || c0 % LINEAR_BF16_PANEL)
        return false;
    linear_bf16_avx512_run(w->own, x, rows, c0, c1, y, ldy, bias, ctx->own_buf);
    return true;
}

uint16_t *linear_bf16_keep(struct linear_bf16_ctx *ctx, const float *x, size_t rows, size_t in)
{
    ctx->kept = NULL;
    if (ctx->own_buf != NULL || rows == 0 || rows * in > ctx->src_cap)
        return NULL;
    ctx->kept = x;
    ctx->kept_rows = rows;
    ctx->kept_in = in;
    return ctx->src;
}

void linear_bf16_forget(struct linear_bf16_ctx *ctx)
{
    if (ctx != NULL)
        ctx->kept = NULL;
}

#else /* !BERT_HAVE_DNNL */

#include <stdio.h>

bool bert_bf16_available(char *why, size_t why_len)
{
    if (why)
        snprintf(why, why_len, "this build has no oneDNN (install libdnnl-dev and rebuild)");
    return false;
}

const char *bert_bf16_isa(void)
{
    return "none";
}

struct linear_bf16_weight *linear_bf16_pack(const float *w, size_t out, size_t in)
{
    (void)w, (void)out, (void)in;
    return NULL;
}

struct linear_bf16_weight *linear_bf16_pack_stacked(const float *const *parts, size_t n_parts,
                                                    size_t out, size_t in)
{
    (void)parts, (void)n_parts, (void)out, (void)in;
    return NULL;
}

void linear_bf16_weight_free(struct linear_bf16_weight *p)
{
    (void)p;
}

struct linear_bf16_ctx *linear_bf16_ctx_new(size_t max_rows, size_t max_in, size_t max_out,
                                            size_t max_strided_out)
{
    (void)max_rows, (void)max_in, (void)max_out, (void)max_strided_out;
    return NULL;
}

size_t linear_bf16_ctx_bytes(size_t max_rows, size_t max_in, size_t max_out,
                             size_t max_strided_out)
{
    (void)max_rows, (void)max_in, (void)max_out, (void)max_strided_out;
    return 0;
}

bool linear_bf16_ctx_splits_cols(const struct linear_bf16_ctx *ctx)
{
    (void)ctx;
    return false;
}

size_t linear_bf16_weight_min_rows(const struct linear_bf16_weight *w)
{
    (void)w;
    return 0;
}

void linear_bf16_weight_pad_to(struct linear_bf16_weight *w, size_t rows)
{
    (void)w, (void)rows;
}

bool bert_bf16_use_onednn(bool on)
{
    return !on;
}

void linear_bf16_ctx_free(struct linear_bf16_ctx *ctx)
{
    (void)ctx;
}

bool linear_bf16_run(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                     const float *x, size_t rows, size_t in, size_t out, float *y, size_t ldy,
                     const float *bias)
{
    (void)ctx, (void)w, (void)x, (void)rows, (void)in, (void)out, (void)y, (void)ldy, (void)bias;
    return false;
}

bool linear_bf16_run_cols(struct linear_bf16_ctx *ctx, const struct linear_bf16_weight *w,
                          const float *x, size_t rows, size_t in, size_t c0, size_t c1, float *y,
                          size_t ldy, const float *bias)
{
    (void)ctx, (void)w, (void)x, (void)rows, (void)in, (void)c0, (void)c1, (void)y, (void)ldy,
        (void)bias;
    return false;
}

uint16_t *linear_bf16_keep(struct linear_bf16_ctx *ctx, const float *x, size_t rows, size_t in)
{
    (void)ctx, (void)x, (void)rows, (void)in;
    return NULL;
}

void linear_bf16_forget(struct linear_bf16_ctx *ctx)
{
    (void)ctx;
}

#endif

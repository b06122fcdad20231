#include "linear_bf16.h"

#ifdef BERT_HAVE_DNNL

#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "safetensors.h"
#include "simd.h"

/* Packed weights are made for this many rows; oneDNN's AMX kernels keep the
 * same blocked weight layout for every row count, so one copy serves all. */
#define PACK_ROWS 256
/* Per-thread cache of ready primitives, keyed by weight and row count. */
#define CACHE_SLOTS 256

struct range {
    const char *begin, *end;
};

struct packed {
    const float *w;
    size_t out, in;
    dnnl_memory_t mem;          /* bf16, oneDNN's layout */
    dnnl_memory_desc_t md;
    bool failed;                /* oneDNN could not pack it: stay f32 */
};

static struct {
    pthread_once_t once;
    pthread_rwlock_t lock;
    dnnl_engine_t engine;
    bool usable;
    char why[160];
    struct range *ranges;
    size_t n_ranges, cap_ranges;
    struct packed *packed;      /* open addressing on w */
    size_t cap_packed, n_packed;
} reg = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_RWLOCK_INITIALIZER};

struct slot {
    const float *w;
    size_t out, in, rows, ldy;
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst;
};

struct thread_state {
    dnnl_stream_t stream;
    uint16_t *src;              /* bf16 copy of the activations, grow-only */
    size_t src_cap;
    struct slot slots[CACHE_SLOTS];
};

static pthread_key_t state_key;

/* f32 -> bf16, round to nearest even (NaN kept a NaN), vectorised: this
 * runs over every activation entering a product. */
BERT_HOT
static void to_bf16(const float *x, size_t n, uint16_t *out)
{
    typedef uint32_t vu16 __attribute__((vector_size(64)));
    const size_t nv = n - n % 16;
    for (size_t i = 0; i < nv; i += 16) {
        vu16 b;
        memcpy(&b, x + i, sizeof b);
        vu16 nan = (b & 0x7fffffffu) > 0x7f800000u;
        vu16 r = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
        r = (nan & ((b >> 16) | 0x40u)) | (~nan & r);
        for (int k = 0; k < 16; k++)
            out[i + k] = (uint16_t)r[k];
    }
    for (size_t i = nv; i < n; i++)
        out[i] = bert_f32_to_bf16(x[i]);
}

static void slot_clear(struct slot *s)
{
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    if (s->src)
        dnnl_memory_destroy(s->src);
    if (s->dst)
        dnnl_memory_destroy(s->dst);
    memset(s, 0, sizeof *s);
}

static void thread_state_free(void *p)
{
    struct thread_state *ts = p;
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        slot_clear(&ts->slots[i]);
    if (ts->stream)
        dnnl_stream_destroy(ts->stream);
    free(ts->src);
    free(ts);
}

/* oneDNN falls back to a reference implementation, far slower than
 * OpenBLAS in f32, for layouts its fast kernels lack on this CPU. */
static bool is_reference(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
           impl == NULL || strncmp(impl, "ref", 3) == 0;
}

static void init_once(void)
{
    pthread_key_create(&state_key, thread_state_free);
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa != dnnl_cpu_isa_avx512_core_bf16 && isa != dnnl_cpu_isa_avx512_core_amx) {
        snprintf(reg.why, sizeof reg.why,
                 "this CPU has neither AMX nor AVX512_BF16 (oneDNN's best ISA here is %d)",
                 (int)isa);
        return;
    }
    if (dnnl_engine_create(&reg.engine, dnnl_cpu, 0) != dnnl_success) {
        snprintf(reg.why, sizeof reg.why, "oneDNN could not create a CPU engine");
        return;
    }
    reg.usable = true;
}

const char *bert_bf16_isa(void)
{
    pthread_once(&reg.once, init_once);
    if (!reg.usable)
        return "none";
    return dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx512_core_amx ? "AMX" : "AVX512_BF16";
}

bool bert_bf16_available(char *why, size_t why_len)
{
    pthread_once(&reg.once, init_once);
    if (!reg.usable && why)
        snprintf(why, why_len, "%s", reg.why);
    return reg.usable;
}

enum bert_status linear_bf16_register(const void *begin, size_t len, struct bert_error *err)
{
    char why[160];
    if (!bert_bf16_available(why, sizeof why))
        return bert_error_set(err, BERT_E_UNSUPPORTED, "bf16 is not available: %s", why);
    pthread_rwlock_wrlock(&reg.lock);
    enum bert_status st = BERT_OK;
    if (reg.n_ranges == reg.cap_ranges) {
        size_t cap = reg.cap_ranges ? 2 * reg.cap_ranges : 4;
        struct range *r = realloc(reg.ranges, cap * sizeof *r);
        if (r == NULL) {
            st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
            goto done;
        }
        reg.ranges = r;
        reg.cap_ranges = cap;
    }
    reg.ranges[reg.n_ranges++] = (struct range){begin, (const char *)begin + len};
done:
    pthread_rwlock_unlock(&reg.lock);
    return st;
}

static void packed_free(struct packed *p)
{
    if (p->mem)
        dnnl_memory_destroy(p->mem);
    memset(p, 0, sizeof *p);
}

void linear_bf16_unregister(const void *begin)
{
    pthread_rwlock_wrlock(&reg.lock);
    for (size_t i = 0; i < reg.n_ranges; i++) {
        if (reg.ranges[i].begin != begin)
            continue;
        const char *b = reg.ranges[i].begin, *e = reg.ranges[i].end;
        /* Rebuild the table without this range's weights. */
        struct packed *old = reg.packed;
        size_t old_cap = reg.cap_packed;
        reg.packed = old_cap ? calloc(old_cap, sizeof *reg.packed) : NULL;
        reg.n_packed = 0;
        for (size_t k = 0; k < old_cap; k++) {
            struct packed *p = &old[k];
            if (p->w == NULL)
                continue;
            if ((const char *)p->w >= b && (const char *)p->w < e) {
                packed_free(p);
                continue;
            }
            size_t h = ((uintptr_t)p->w >> 6) % old_cap;
            while (reg.packed[h].w != NULL)
                h = (h + 1) % old_cap;
            reg.packed[h] = *p;
            reg.n_packed++;
        }
        free(old);
        reg.ranges[i] = reg.ranges[--reg.n_ranges];
        break;
    }
    if (reg.n_ranges == 0) {
        free(reg.packed);
        free(reg.ranges);
        reg.packed = NULL;
        reg.ranges = NULL;
        reg.cap_packed = reg.n_packed = reg.cap_ranges = 0;
    }
    pthread_rwlock_unlock(&reg.lock);
    /* Per-thread primitive caches keep only shapes, never weights: a slot
     * that names a freed weight's address is simply a primitive for that
     * shape, still correct for whatever is packed there next. */
}

static bool in_range(const float *w)
{
    for (size_t i = 0; i < reg.n_ranges; i++)
        if ((const char *)w >= reg.ranges[i].begin && (const char *)w < reg.ranges[i].end)
            return true;
    return false;
}

static struct packed *find_packed(const float *w)
{
    if (reg.cap_packed == 0)
        return NULL;
    size_t h = ((uintptr_t)w >> 6) % reg.cap_packed;
    while (reg.packed[h].w != NULL) {
        if (reg.packed[h].w == w)
            return &reg.packed[h];
        h = (h + 1) % reg.cap_packed;
    }
    return NULL;
}

/* Convert W (out, in) f32 into oneDNN's bf16 layout for its AMX matmul. */
static void pack(struct packed *p)
{
    dnnl_memory_desc_t src_md, wei_md, dst_md, user_md;
    dnnl_dims_t sd = {PACK_ROWS, (dnnl_dim_t)p->in}, wd = {(dnnl_dim_t)p->in, (dnnl_dim_t)p->out},
                dd = {PACK_ROWS, (dnnl_dim_t)p->out};
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t user = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_matmul_desc_t mm;
    p->failed = true;
    if (dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dnnl_bf16, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, dnnl_bf16, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_ab) ||
        dnnl_matmul_desc_init(&mm, &src_md, &wei_md, NULL, &dst_md) ||
        dnnl_primitive_desc_create(&pd, &mm, NULL, reg.engine, NULL) || is_reference(pd))
        goto done;
    p->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    /* torch's (out, in) row-major is the "ba" layout of dims (in, out). */
    if (dnnl_memory_desc_init_by_tag(&user_md, 2, wd, dnnl_f32, dnnl_ba) ||
        dnnl_memory_create(&user, &user_md, reg.engine, (void *)p->w) ||
        dnnl_memory_create(&p->mem, &p->md, reg.engine, DNNL_MEMORY_ALLOCATE) ||
        dnnl_reorder_primitive_desc_create(&rpd, &user_md, reg.engine, &p->md, reg.engine, NULL) ||
        dnnl_primitive_create(&reorder, rpd) ||
        dnnl_stream_create(&stream, reg.engine, dnnl_stream_default_flags))
        goto done;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, p->mem}};
    if (dnnl_primitive_execute(reorder, stream, 2, args) || dnnl_stream_wait(stream))
        goto done;
    p->failed = false;
done:
    if (p->failed && p->mem) {
        dnnl_memory_destroy(p->mem);
        p->mem = NULL;
    }
    if (stream)
        dnnl_stream_destroy(stream);
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (user)
        dnnl_memory_destroy(user);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
}

/* The packed copy of w, made on first use (the server's warm-up makes
 * them); NULL when w is not in a registered range or cannot be packed. */
static const struct packed *packed_for(const float *w, size_t out, size_t in)
{
    pthread_rwlock_rdlock(&reg.lock);
    struct packed *p = in_range(w) ? find_packed(w) : NULL;
    bool wanted = p == NULL && in_range(w);
    pthread_rwlock_unlock(&reg.lock);
    if (p != NULL || !wanted)
        return p && !p->failed && p->out == out && p->in == in ? p : NULL;

    pthread_rwlock_wrlock(&reg.lock);
    p = find_packed(w);
    if (p == NULL && (reg.n_packed + 1) * 2 > reg.cap_packed) {
        size_t cap = reg.cap_packed ? 2 * reg.cap_packed : 256;
        struct packed *table = calloc(cap, sizeof *table);
        if (table != NULL) {
            for (size_t k = 0; k < reg.cap_packed; k++) {
                if (reg.packed[k].w == NULL)
                    continue;
                size_t h = ((uintptr_t)reg.packed[k].w >> 6) % cap;
                while (table[h].w != NULL)
                    h = (h + 1) % cap;
                table[h] = reg.packed[k];
            }
            free(reg.packed);
            reg.packed = table;
            reg.cap_packed = cap;
        }
    }
    if (p == NULL && (reg.n_packed + 1) * 2 <= reg.cap_packed) {
        size_t h = ((uintptr_t)w >> 6) % reg.cap_packed;
        while (reg.packed[h].w != NULL)
            h = (h + 1) % reg.cap_packed;
        p = &reg.packed[h];
        *p = (struct packed){.w = w, .out = out, .in = in};
        pack(p);
        reg.n_packed++;
    }
    pthread_rwlock_unlock(&reg.lock);
    return p && !p->failed && p->out == out && p->in == in ? p : NULL;
}

static struct thread_state *thread_state(void)
{
    struct thread_state *ts = pthread_getspecific(state_key);
    if (ts != NULL)
        return ts;
    ts = calloc(1, sizeof *ts);
    if (ts == NULL || dnnl_stream_create(&ts->stream, reg.engine, dnnl_stream_default_flags)) {
        free(ts);
        return NULL;
    }
    /* Our compute team already runs one pass per core: oneDNN's own OpenMP
     * threads inside each member would oversubscribe them. */
    omp_set_num_threads(1);
    pthread_setspecific(state_key, ts);
    return ts;
}

/* A primitive for (packed weight, rows, ldy), from the cache or made now. */
static struct slot *slot_for(struct thread_state *ts, const struct packed *p, size_t rows,
                             size_t ldy)
{
    size_t h = (((uintptr_t)p->mem >> 4) ^ (rows * 2654435761u) ^ ldy) % CACHE_SLOTS;
    struct slot *s = &ts->slots[h];
    if (s->prim && s->w == p->w && s->out == p->out && s->in == p->in && s->rows == rows &&
        s->ldy == ldy)
        return s;
    slot_clear(s);
    dnnl_memory_desc_t src_md, dst_md;
    dnnl_dims_t sd = {(dnnl_dim_t)rows, (dnnl_dim_t)p->in}, dd = {(dnnl_dim_t)rows,
                                                                  (dnnl_dim_t)p->out};
    dnnl_dims_t dst_strides = {(dnnl_dim_t)ldy, 1};
    dnnl_matmul_desc_t mm;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = !dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dnnl_bf16, dnnl_ab) &&
              !dnnl_memory_desc_init_by_strides(&dst_md, 2, dd, dnnl_f32, dst_strides) &&
              !dnnl_matmul_desc_init(&mm, &src_md, &p->md, NULL, &dst_md) &&
              !dnnl_primitive_desc_create(&pd, &mm, NULL, reg.engine, NULL) &&
              !is_reference(pd) && !dnnl_primitive_create(&s->prim, pd) &&
              !dnnl_memory_create(&s->src, &src_md, reg.engine, DNNL_MEMORY_NONE) &&
              !dnnl_memory_create(&s->dst, &dst_md, reg.engine, DNNL_MEMORY_NONE);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (!ok) {
        slot_clear(s);
        return NULL;
    }
    s->w = p->w;
    s->out = p->out;
    s->in = p->in;
    s->rows = rows;
    s->ldy = ldy;
    return s;
}

bool linear_bf16_try(const float *x, size_t rows, size_t in, const float *w, size_t out,
                     float *y, size_t ldy)
{
    if (!reg.usable || rows == 0)
        return false;
    const struct packed *p = packed_for(w, out, in);
    struct thread_state *ts = p ? thread_state() : NULL;
    if (ts == NULL)
        return false;
    if (ts->src_cap < rows * in) {
        uint16_t *src = realloc(ts->src, rows * in * sizeof *src);
        if (src == NULL)
            return false;
        ts->src = src;
        ts->src_cap = rows * in;
    }
    struct slot *s = slot_for(ts, p, rows, ldy);
    if (s == NULL)
        return false;
    to_bf16(x, rows * in, ts->src);
    dnnl_memory_set_data_handle(s->src, ts->src);
    dnnl_memory_set_data_handle(s->dst, y);
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, s->src}, {DNNL_ARG_WEIGHTS, p->mem}, {DNNL_ARG_DST, s->dst}};
    return dnnl_primitive_execute(s->prim, ts->stream, 3, args) == dnnl_success &&
           dnnl_stream_wait(ts->stream) == dnnl_success;
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

enum bert_status linear_bf16_register(const void *begin, size_t len, struct bert_error *err)
{
    (void)begin;
    (void)len;
    return bert_error_set(err, BERT_E_UNSUPPORTED,
                          "bf16 is not available: this build has no oneDNN");
}

void linear_bf16_unregister(const void *begin)
{
    (void)begin;
}

bool linear_bf16_try(const float *x, size_t rows, size_t in, const float *w, size_t out,
                     float *y, size_t ldy)
{
    (void)x, (void)rows, (void)in, (void)w, (void)out, (void)y, (void)ldy;
    return false;
}

#endif

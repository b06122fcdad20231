#include "onednn.h"

#ifdef BERT_HAVE_DNNL

#include <string.h>

bool onednn_is_reference(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
           impl == NULL || strncmp(impl, "ref", 3) == 0;
}

dnnl_primitive_desc_t onednn_matmul_pd(dnnl_engine_t engine, dnnl_data_type_t src_dt,
                                       size_t rows, size_t in, size_t out,
                                       const dnnl_memory_desc_t *wei_md, bool biased)
{
    dnnl_memory_desc_t src_md, dst_md, bias_md;
    dnnl_dims_t sd = {(dnnl_dim_t)rows, (dnnl_dim_t)in}, dd = {(dnnl_dim_t)rows, (dnnl_dim_t)out};
    dnnl_dims_t bd = {1, (dnnl_dim_t)out};
    dnnl_matmul_desc_t mm;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_memory_desc_init_by_tag(&src_md, 2, sd, src_dt, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&bias_md, 2, bd, dnnl_f32, dnnl_ab) ||
        dnnl_matmul_desc_init(&mm, &src_md, wei_md, biased ? &bias_md : NULL, &dst_md) ||
        dnnl_primitive_desc_create(&pd, &mm, NULL, engine, NULL))
        return NULL;
    if (onednn_is_reference(pd)) {
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    return pd;
}

size_t onednn_min_rows(dnnl_engine_t engine, dnnl_data_type_t src_dt, size_t in, size_t out,
                       const dnnl_memory_desc_t *wei_md)
{
    size_t min = 0;
    for (size_t r = ONEDNN_PAD_ROWS_MAX; r >= 1; r /= 2) {
        dnnl_primitive_desc_t pd = onednn_matmul_pd(engine, src_dt, r, in, out, wei_md, false);
        if (pd == NULL)
            break;
        dnnl_primitive_desc_destroy(pd);
        min = r;
    }
    return min;
}

void onednn_slot_clear(struct onednn_slot *s)
{
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    if (s->src)
        dnnl_memory_destroy(s->src);
    if (s->dst)
        dnnl_memory_destroy(s->dst);
    if (s->bias)
        dnnl_memory_destroy(s->bias);
    memset(s, 0, sizeof *s);
}

struct onednn_slot *onednn_slot_get(struct onednn_slot *slots, size_t n, dnnl_engine_t engine,
                                    dnnl_data_type_t src_dt, size_t rows, size_t in, size_t out,
                                    const dnnl_memory_desc_t *wmd, bool biased)
{
    struct onednn_slot *s = &slots[((out * 31 + in) ^ (rows * 2654435761u) ^ (size_t)biased) % n];
    if ((s->prim || s->refused) && s->out == out && s->in == in && s->rows == rows &&
        s->biased == biased && dnnl_memory_desc_equal(&s->wmd, wmd))
        return s->prim ? s : NULL;
    const struct onednn_slot key = {
        .out = out, .in = in, .rows = rows, .biased = biased, .wmd = *wmd};
    onednn_slot_clear(s);
    *s = key;
    dnnl_primitive_desc_t pd = onednn_matmul_pd(engine, src_dt, rows, in, out, wmd, biased);
    const dnnl_memory_desc_t *bias_md =
        pd ? dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1) : NULL;
    const bool ok =
        pd != NULL && !dnnl_primitive_create(&s->prim, pd) &&
        !dnnl_memory_create(&s->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                            engine, DNNL_MEMORY_NONE) &&
        !dnnl_memory_create(&s->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
                            engine, DNNL_MEMORY_NONE) &&
        (!biased || (bias_md != NULL &&
                     !dnnl_memory_create(&s->bias, bias_md, engine, DNNL_MEMORY_NONE)));
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (ok)
        return s;
    onednn_slot_clear(s);
    *s = key;
    s->refused = true;
    return NULL;
}

bool onednn_reorder_new(dnnl_engine_t engine, const dnnl_memory_desc_t *user_md, void *data,
                        const dnnl_memory_desc_t *packed_md, dnnl_memory_t *packed)
{
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t user = NULL;
    dnnl_stream_t stream = NULL;
    bool ok = false;
    *packed = NULL;
    if (!dnnl_memory_create(&user, user_md, engine, data) &&
        !dnnl_memory_create(packed, packed_md, engine, DNNL_MEMORY_ALLOCATE) &&
        !dnnl_reorder_primitive_desc_create(&rpd, user_md, engine, packed_md, engine, NULL) &&
        !dnnl_primitive_create(&reorder, rpd) &&
        !dnnl_stream_create(&stream, engine, dnnl_stream_default_flags)) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, *packed}};
        ok = !dnnl_primitive_execute(reorder, stream, 2, args) && !dnnl_stream_wait(stream);
    }
    if (stream)
        dnnl_stream_destroy(stream);
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (user)
        dnnl_memory_destroy(user);
    if (!ok && *packed) {
        dnnl_memory_destroy(*packed);
        *packed = NULL;
    }
    return ok;
}

#endif

#include "onednn.h"

#ifdef BERT_HAVE_DNNL

#include <string.h>

bool onednn_is_reference(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
           impl == NULL || strncmp(impl, "ref", 3) == 0;
}

void onednn_slot_clear(struct onednn_slot *s)
{
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    if (s->src)
        dnnl_memory_destroy(s->src);
    if (s->dst)
        dnnl_memory_destroy(s->dst);
    memset(s, 0, sizeof *s);
}

struct onednn_slot *onednn_slot_find(struct onednn_slot *slots, size_t n, size_t out, size_t in,
                                     size_t rows, size_t ldy, const dnnl_memory_desc_t *wmd,
                                     bool *ready)
{
    struct onednn_slot *s = &slots[((out * 31 + in) ^ (rows * 2654435761u) ^ ldy) % n];
    *ready = s->prim && s->out == out && s->in == in && s->rows == rows && s->ldy == ldy &&
             dnnl_memory_desc_equal(&s->wmd, wmd);
    if (!*ready)
        onednn_slot_clear(s);
    return s;
}

bool onednn_slot_fill(struct onednn_slot *s, dnnl_engine_t engine,
                      const_dnnl_primitive_desc_t pd, size_t out, size_t in, size_t rows,
                      size_t ldy, const dnnl_memory_desc_t *wmd)
{
    if (dnnl_primitive_create(&s->prim, pd) ||
        dnnl_memory_create(&s->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), engine,
                           DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&s->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), engine,
                           DNNL_MEMORY_NONE)) {
        onednn_slot_clear(s);
        return false;
    }
    s->out = out;
    s->in = in;
    s->rows = rows;
    s->ldy = ldy;
    s->wmd = *wmd;
    return true;
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

/* What the two oneDNN product paths (linear_bf16.c, linear_int8.c) share:
 * the check for oneDNN's slow reference kernels, a cache slot holding a
 * ready matmul primitive for one shape, and the one-off reorder of a weight
 * into the layout a primitive chose. Built only with oneDNN
 * (BERT_HAVE_DNNL). */
#ifndef BERT_ONEDNN_H
#define BERT_ONEDNN_H

#ifdef BERT_HAVE_DNNL

#include <stdbool.h>
#include <stddef.h>

#include <oneapi/dnnl/dnnl.h>

/* oneDNN falls back to a reference implementation, far slower than
 * OpenBLAS in f32, for what its fast kernels lack on this CPU: true for
 * such a descriptor (or one that cannot be queried). */
bool onednn_is_reference(const_dnnl_primitive_desc_t pd);

/* A matmul primitive ready for one shape: (rows, in) x weights of layout
 * `wmd` (in, out) -> (rows, out) with output rows `ldy` apart; src and dst
 * are memory objects without data, pointed at the buffers per call. */
struct onednn_slot {
    size_t out, in, rows, ldy;
    dnnl_memory_desc_t wmd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst;
};

/* The slot for the shape in `slots` (n of them, hashed by shape): the
 * cached primitive when it has one for exactly this shape (*ready = true),
 * else the emptied slot to fill with onednn_slot_fill. */
struct onednn_slot *onednn_slot_find(struct onednn_slot *slots, size_t n, size_t out, size_t in,
                                     size_t rows, size_t ldy, const dnnl_memory_desc_t *wmd,
                                     bool *ready);

/* Make the primitive of `pd` (not consumed) and its src / dst memory
 * objects into the emptied slot `s`, recording the shape. False (the slot
 * left empty) on failure. */
bool onednn_slot_fill(struct onednn_slot *s, dnnl_engine_t engine,
                      const_dnnl_primitive_desc_t pd, size_t out, size_t in, size_t rows,
                      size_t ldy, const dnnl_memory_desc_t *wmd);

/* Free what the slot holds and empty it. */
void onednn_slot_clear(struct onednn_slot *s);

/* Copy a weight stored as `user_md` at `data` into a new memory object
 * `*packed` of layout `packed_md`, on `engine`. False (nothing made) on
 * failure. */
bool onednn_reorder_new(dnnl_engine_t engine, const dnnl_memory_desc_t *user_md, void *data,
                        const dnnl_memory_desc_t *packed_md, dnnl_memory_t *packed);

#endif
#endif

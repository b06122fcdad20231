/* What the two oneDNN product paths (linear_bf16.c, linear_int8.c) share:
 * the check for oneDNN's slow reference kernels, the matmul descriptor and
 * the fewest rows it has a kernel for in a weight's layout, a cache slot
 * holding a ready matmul primitive for one shape, and the one-off reorder
 * of a weight into the layout a primitive chose. Built only with oneDNN
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

/* The most rows a product is padded to. With AMX, oneDNN 2.6 has only
 * reference kernels for a product of a few rows in the weight layout it
 * picks for many (both paths pack for 256 rows); such products run on zero
 * rows added up to a count it has a kernel for (onednn_min_rows). */
#define ONEDNN_PAD_ROWS_MAX 64

/* Rows of activations a member's context makes room for, `max_rows` at
 * most in a share: padded products read ONEDNN_PAD_ROWS_MAX. */
static inline size_t onednn_src_rows(size_t max_rows)
{
    return max_rows > ONEDNN_PAD_ROWS_MAX ? max_rows : ONEDNN_PAD_ROWS_MAX;
}

/* Floats of a context's buffer for products that land there before their
 * rows: a padded one (ONEDNN_PAD_ROWS_MAX rows, up to max_out wide) or one
 * whose output rows are strided, up to max_rows x max_strided_out (oneDNN
 * 2.6 has only reference kernels for strided outputs). */
static inline size_t onednn_out_floats(size_t max_rows, size_t max_out, size_t max_strided_out)
{
    const size_t padded = ONEDNN_PAD_ROWS_MAX * max_out, strided = max_rows * max_strided_out;
    return padded > strided ? padded : strided;
}

/* A matmul descriptor `src_dt` (rows, in) x the weight in layout `wei_md`
 * (in, out) -> f32 (rows, out), contiguous, + an f32 bias (out) on each row
 * when `biased`; NULL when oneDNN has only a reference kernel for it (or
 * fails). */
dnnl_primitive_desc_t onednn_matmul_pd(dnnl_engine_t engine, dnnl_data_type_t src_dt,
                                       size_t rows, size_t in, size_t out,
                                       const dnnl_memory_desc_t *wei_md, bool biased);

/* The fewest rows to pad such a product to: the smallest power of two up to
 * ONEDNN_PAD_ROWS_MAX from which on each has a kernel (1 where all have, as
 * with VNNI or AVX512_BF16); 0 when ONEDNN_PAD_ROWS_MAX has none. */
size_t onednn_min_rows(dnnl_engine_t engine, dnnl_data_type_t src_dt, size_t in, size_t out,
                       const dnnl_memory_desc_t *wei_md);

/* A cache slot: the matmul primitive for one shape, (rows, in) x weights
 * of layout `wmd` (in, out) -> (rows, out), with a bias when `biased`, and
 * its src, dst and bias memory objects without data, pointed at the
 * buffers per call; or, with `prim` NULL and `refused`, the record that
 * oneDNN has no fast kernel for that shape. */
struct onednn_slot {
    size_t out, in, rows;
    bool biased, refused;
    dnnl_memory_desc_t wmd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst, bias;
};

/* The slot holding the primitive for `src_dt` (rows, in) x the weight of
 * layout `wmd` (in, out) -> f32 (rows, out), + a bias when `biased`: from
 * `slots` (n of them, hashed by shape; a slot another shape held is
 * emptied first) or made now. NULL when oneDNN has only a reference kernel
 * for the shape or fails; the refusal is kept in the slot, so the next
 * call for that shape costs a lookup, not another attempt. */
struct onednn_slot *onednn_slot_get(struct onednn_slot *slots, size_t n, dnnl_engine_t engine,
                                    dnnl_data_type_t src_dt, size_t rows, size_t in, size_t out,
                                    const dnnl_memory_desc_t *wmd, bool biased);

/* Free what the slot holds and empty it. */
void onednn_slot_clear(struct onednn_slot *s);

/* Copy a weight stored as `user_md` at `data` into a new memory object
 * `*packed` of layout `packed_md`, on `engine`. False (nothing made) on
 * failure. */
bool onednn_reorder_new(dnnl_engine_t engine, const dnnl_memory_desc_t *user_md, void *data,
                        const dnnl_memory_desc_t *packed_md, dnnl_memory_t *packed);

#endif
#endif

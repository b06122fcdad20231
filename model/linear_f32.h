/* f32 dense layers over weights packed once, at load, for an AVX-512
 * micro-kernel: y = x W^T with W (out, in) as torch.nn.Linear stores it,
 * rearranged into panels of LINEAR_F32_PANEL output columns, each panel
 * stored k-major (in rows of its width), so a product reads every weight
 * it needs in order and no call repacks anything (OpenBLAS packs W anew on
 * every call, as much memory traffic as a lone sequence's product itself).
 *
 * Each output is one chain of float sums in k order, whatever the number
 * of rows or the column range a call covers: results do not depend on how
 * a team splits the rows or columns. */
#ifndef BERT_LINEAR_F32_H
#define BERT_LINEAR_F32_H

#include <stdbool.h>
#include <stddef.h>

/* Output columns per panel; column ranges given to linear_f32_run start on
 * a multiple of it. */
#define LINEAR_F32_PANEL 32

/* A packed weight: read-only once made, any number of threads at once. */
struct linear_f32_weight;

/* Whether this CPU runs the kernel (AVX-512F): otherwise nothing packs. */
bool linear_f32_available(void);

/* Floats a packed (out, in) weight occupies: out * in (panels are not
 * padded), rounded up to whole cache lines so the next one starts on one. */
size_t linear_f32_floats(size_t out, size_t in);

/* Memory for packed weights, `floats` of them, 64-byte aligned, on
 * transparent huge pages where the system allows (a model's weights then
 * fault in 2 MiB at a time: 4 KiB faults cost BERT-base a second of
 * start-up on a loaded VM). NULL when out of memory. Release with free(). */
float *linear_f32_alloc(size_t floats);

/* Pack W (out, in) into `dst` (linear_f32_floats(out, in) floats from
 * linear_f32_alloc, which the caller keeps until the weight is freed).
 * NULL when the kernel is unavailable or memory runs out: the weight then
 * stays on the general GEMM. */
struct linear_f32_weight *linear_f32_pack(const float *w, size_t out, size_t in, float *dst);

/* NULL is a no-op; leaves the memory given to linear_f32_pack alone. */
void linear_f32_weight_free(struct linear_f32_weight *p);

/* Floats of the working buffer each concurrent caller of linear_f32_run
 * passes (a block of x repacked for the kernel; 798 KiB). */
#define LINEAR_F32_BUFFER_FLOATS ((size_t)266 * 768)

/* Columns [c0, c1) of y (rows, out; row stride ldy; y points at column 0)
 * = x (rows, in; row stride in) W^T, + bias (out floats, indexed by
 * column) added to each finished sum unless bias is NULL: the same values
 * as adding it afterwards, without another pass over y. c0 is a multiple
 * of LINEAR_F32_PANEL, c1 <= out. Columns outside [c0, c1) stay untouched.
 * `buf`: LINEAR_F32_BUFFER_FLOATS floats, 64-byte aligned, this caller's
 * alone. */
void linear_f32_run(const struct linear_f32_weight *p, const float *x, size_t rows, size_t c0,
                    size_t c1, float *y, size_t ldy, const float *bias, float *buf);

#endif

/* bf16 dense layers on AVX512_BF16 without AMX: y = x W^T with W (out, in)
 * as torch.nn.Linear stores it, rounded once, at load, to bf16 and packed
 * into panels of LINEAR_BF16_PANEL output columns (each panel's inputs in
 * pairs, k-major, so one 32-bit lane holds the pair vdpbf16ps multiplies);
 * x rounded to bf16 a block at a time as the product packs it; sums in
 * f32. For CPUs with AVX512_BF16 and no AMX (AMD Zen 4 and 5, Intel Cooper
 * Lake), where oneDNN's bf16 matmul ran BERT-base at 0.7-1.6x the f32
 * kernel: this one is the f32 kernel's blocking with two multiply-adds per
 * lane per instruction instead of one (1.3-1.9x f32 on a Zen 5).
 *
 * Each output is one chain of f32 sums in input order, whatever the
 * number of rows or the column range a call covers: results do not depend
 * on how a team splits the rows or columns. */
#ifndef BERT_LINEAR_BF16_AVX512_H
#define BERT_LINEAR_BF16_AVX512_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Output columns per panel; column ranges given to linear_bf16_avx512_run
 * start on a multiple of it. */
#define LINEAR_BF16_PANEL 32

/* 32-bit words of the working buffer each concurrent caller of
 * linear_bf16_avx512_run passes (a block of x in bf16 pairs; 350 KiB),
 * 64-byte aligned. */
#define LINEAR_BF16_AVX512_BUFFER_WORDS ((size_t)224 * 400)

/* A packed weight: read-only once made, any number of threads at once. */
struct linear_bf16_avx512_weight;

/* Whether this CPU runs the kernel (AVX-512F and AVX512_BF16). */
bool linear_bf16_avx512_available(void);

/* Round W (out, in) to bf16 and pack it. NULL when the kernel is
 * unavailable, a dimension is 0 or memory runs out. */
struct linear_bf16_avx512_weight *linear_bf16_avx512_pack(const float *w, size_t out,
                                                          size_t in);

/* NULL is a no-op. */
void linear_bf16_avx512_free(struct linear_bf16_avx512_weight *p);

/* Columns [c0, c1) of y (rows, out; row stride ldy; y points at column 0)
 * = x (rows, in; row stride in) W^T, + bias (out floats, by column) added to
 * each finished sum unless bias is NULL. c0 is a multiple of
 * LINEAR_BF16_PANEL, c1 <= out; columns outside [c0, c1) stay untouched.
 * `buf`: LINEAR_BF16_AVX512_BUFFER_WORDS words, this caller's alone. */
void linear_bf16_avx512_run(const struct linear_bf16_avx512_weight *p, const float *x,
                            size_t rows, size_t c0, size_t c1, float *y, size_t ldy,
                            const float *bias, uint32_t *buf);

#endif

/* Dense layers for a handful of rows (a lone short request): y = x W^T
 * computed straight from the weights as torch.nn.Linear stores them, with
 * no packing. A general GEMM packs W into its own layout on every call,
 * which at batch 1 costs as much memory traffic as the product itself; here
 * each weight is read from memory once. */
#ifndef BERT_LINEAR_SMALL_H
#define BERT_LINEAR_SMALL_H

#include <stddef.h>

/* Up to this many rows the direct product beats OpenBLAS's packed GEMM:
 * 1.4x at 16 rows, even between 20 and 28, behind at 32 (BERT-base shapes,
 * one thread, this project's 2-core Xeon). */
#define BERT_LINEAR_SMALL_ROWS 18

/* y (rows, out; row stride ldy) = x (rows, in) W^T, W (out, in). */
void bert_linear_small(const float *x, size_t rows, size_t in, const float *w, size_t out,
                       float *y, size_t ldy);

#endif

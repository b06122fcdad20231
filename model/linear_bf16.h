/* BF16 dense layers on oneDNN (AMX / AVX512_BF16): weights converted once
 * to bf16 in oneDNN's blocked layout, activations converted per call,
 * accumulation and outputs in f32. Everything else stays f32.
 *
 * A process-wide registry holds the address ranges whose weights run in
 * bf16 (a model's mapping and arena), so the encoder needs no second code
 * path: bert_linear_share asks linear_bf16_try first. Built only when CMake
 * finds oneDNN (BERT_HAVE_DNNL); otherwise every function reports
 * "not available" (bert_bf16_available, bert_bf16_isa: bert.h). Thread-safe. */
#ifndef BERT_LINEAR_BF16_H
#define BERT_LINEAR_BF16_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

/* Weights inside [begin, begin + len) run in bf16 from now on. */
enum bert_status linear_bf16_register(const void *begin, size_t len, struct bert_error *err);

/* Forget a range registered with this `begin` and free its packed weights. */
void linear_bf16_unregister(const void *begin);

/* y (rows, out) = x (rows, in) W^T in bf16 when W lies in a registered
 * range; returns false (computing nothing) otherwise, or when oneDNN cannot
 * run this shape, so the caller falls back to f32. */
bool linear_bf16_try(const float *x, size_t rows, size_t in, const float *w, size_t out,
                     float *y, size_t ldy);

#endif

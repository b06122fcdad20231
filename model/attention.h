/* Scaled dot-product attention of one head of one sequence (Vaswani et al.
 * 2017, sec. 3.2.1), computed a few query rows at a time: memory is O(n)
 * (no n x n score matrix), and the small products run in registers instead
 * of as many tiny GEMM calls. */
#ifndef BERT_ATTENTION_H
#define BERT_ATTENTION_H

#include <stddef.h>

/* Floats of workspace attention_head needs for sequences up to max_n with
 * head size d. */
size_t attention_workspace_floats(size_t max_n, size_t d);

/* out[i] = softmax(scale * q[i] . k[j] over j) . v[j] for i < n, each of
 * d floats. q, k, v rows are `ld` floats apart, out rows `ldo` apart.
 * `work` holds attention_workspace_floats(n, d) floats, 64-byte aligned. */
void attention_head(const float *q, const float *k, const float *v, size_t ld, size_t n,
                    size_t d, float scale, float *out, size_t ldo, float *work);

/* The same with a sliding window (ModernBERT's local layers): query i sees
 * only keys j with |i - j| <= half_window, and only those are computed, so
 * a local layer costs O(n * window * d). SIZE_MAX: no window. rel_bias,
 * when not NULL, is added to the scaled scores: rel_bias[j - i] for query i
 * and key j, so it must be valid from -(n - 1) to n - 1 (MPNet's relative
 * position bias of the head). */
void attention_head_window(const float *q, const float *k, const float *v, size_t ld, size_t n,
                           size_t d, float scale, float *out, size_t ldo, float *work,
                           size_t half_window, const float *rel_bias);

/* The same in blocks of 4 query rows, as CPUs without AVX-512 run it
 * (attention_head_window takes 8 at a time where it has AVX-512); the
 * same values. Public for tests. */
void attention_head_window_narrow(const float *q, const float *k, const float *v, size_t ld,
                                  size_t n, size_t d, float scale, float *out, size_t ldo,
                                  float *work, size_t half_window, const float *rel_bias);

struct bert_model;
struct bert_scratch;
struct bert_batch;

/* This member's share of the attention of every (sequence, head) of the
 * batch, from s->qkv into s->ctx, with the model's relative position bias
 * when it has one (engine.h), handed out one (sequence, head) at a time
 * so members stay busy whatever the sequence lengths; s->next_item must
 * have been reset to 0 before a barrier. half_window: as
 * attention_head_window's (SIZE_MAX: none). */
void attention_member(const struct bert_model *model, struct bert_scratch *s,
                      const struct bert_batch *b, size_t member, size_t half_window);

#endif

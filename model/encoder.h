/* The BERT encoder over a packed batch: all tokens of all sequences form one
 * [T x H] matrix with no padding; dense layers are single GEMMs over the T
 * rows and attention runs per sequence (Devlin et al. 2018; post-LN
 * Transformer of Vaswani et al. 2017). */
#ifndef BERT_ENCODER_H
#define BERT_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Sequence i occupies rows [seq_start[i], seq_start[i + 1]). */
struct bert_batch {
    size_t n_seqs;
    size_t n_tokens;          /* T == seq_start[n_seqs] */
    const int32_t *ids;       /* (T) */
    const int32_t *type_ids;  /* (T) */
    const size_t *seq_start;  /* (n_seqs + 1) */
};

/* A worker's working memory, sized once for at most `max_tokens` packed
 * tokens and sequences of at most `max_seq_len` tokens, and its compute
 * team: `threads` threads (the caller's included; 0 or 1: the caller only)
 * share each forward pass. OpenBLAS should then run single-threaded
 * (openblas_set_num_threads(1)): the team splits the products itself. */
struct bert_scratch;

struct bert_scratch *bert_scratch_new(const struct bert_model *model, size_t max_tokens,
                                      size_t max_seq_len, size_t threads,
                                      struct bert_error *err);
/* NULL is a no-op. */
void bert_scratch_free(struct bert_scratch *s);
size_t bert_scratch_max_tokens(const struct bert_scratch *s);
size_t bert_scratch_max_seq_len(const struct bert_scratch *s);
/* Bytes of memory the scratch holds. */
size_t bert_scratch_bytes(const struct bert_scratch *s);
/* Threads in its compute team. */
size_t bert_scratch_threads(const struct bert_scratch *s);
/* How many of them run the next passes (1..threads; initially all). */
void bert_scratch_set_width(struct bert_scratch *s, size_t width);

/* Run the encoder. On success *hidden points to the final hidden states
 * (T x H, row-major) inside the scratch, valid until its next use. Fails with
 * BERT_E_INVALID when the batch exceeds the scratch sizes or an id is out of
 * range; never allocates. */
enum bert_status bert_encode(const struct bert_model *model, struct bert_scratch *s,
                             const struct bert_batch *batch, const float **hidden,
                             struct bert_error *err);

#endif

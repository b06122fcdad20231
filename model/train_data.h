/* Pretraining text: corpus files tokenized line by line into one stream of
 * WordPiece ids (no specials), cut into training sequences
 * [CLS] chunk [SEP] of at most max_len tokens. Empty lines are skipped;
 * no next-sentence pairs (RoBERTa's finding, Liu et al. 2019: NSP does not
 * help). */
#ifndef BERT_TRAIN_DATA_H
#define BERT_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tokenizer.h"

struct train_corpus {
    int32_t *ids;      /* (n_ids) the token stream */
    size_t n_ids;
    size_t chunk;      /* content tokens per sequence: max_len - 2 */
    size_t n_seqs;     /* ceil(n_ids / chunk) */
    int32_t cls_id, sep_id;
};

/* Tokenize `n_files` files. Fails naming the file when one cannot be read,
 * the tokenizer lacks [CLS]/[SEP], or max_len < 3. */
enum bert_status train_corpus_load(struct train_corpus *c, const struct bert_tokenizer *tok,
                                   const char *const *files, size_t n_files, size_t max_len,
                                   struct bert_error *err);

/* Sequence i (< n_seqs) framed as [CLS] ... [SEP] into out; returns its length. */
size_t train_corpus_sequence(const struct train_corpus *c, size_t i, int32_t *out);

/* Safe on a zeroed or already freed corpus. */
void train_corpus_free(struct train_corpus *c);

#endif

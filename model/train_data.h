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

/* Labelled texts for fine-tuning: a TSV file with a header line and rows
 * `text<TAB>label` (GLUE's SST-2 layout) or `text_a<TAB>text_b<TAB>label`
 * for pairs (the label is the last field, an integer id). A text is
 * tokenized as [CLS] text [SEP], a pair as [CLS] a [SEP] b [SEP] with token
 * types 0 then 1 (BERT sec. 3), truncated to max_len longest-first. */
struct train_labeled {
    int32_t *ids;        /* all sequences back to back */
    int32_t *types;      /* token types, same layout as ids */
    size_t *start;       /* (n + 1) sequence i is ids[start[i] .. start[i + 1]) */
    int32_t *labels;     /* (n) */
    size_t n;
    int32_t max_label;
};

/* Fails naming the file and line on a malformed row or a label outside
 * [0, num_labels) when num_labels > 0. */
enum bert_status train_labeled_load(struct train_labeled *d, const struct bert_tokenizer *tok,
                                    const char *path, size_t max_len, size_t num_labels,
                                    struct bert_error *err);

/* Safe on a zeroed or already freed set. */
void train_labeled_free(struct train_labeled *d);

/* Accuracy and F1 of predictions against gold labels in [0, C): macro F1
 * over the classes, and for two classes the F1 of class 1 (GLUE's). */
struct train_scores {
    double accuracy, macro_f1, f1_positive;
};

struct train_scores train_score(const int32_t *pred, const int32_t *gold, size_t n, size_t C);

#endif

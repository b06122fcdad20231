/* Pretraining text: corpus files tokenized line by line into one stream of
 * WordPiece ids (no specials), cut into training sequences
 * [CLS] chunk [SEP] of at most max_len tokens. Empty lines are skipped;
 * no next-sentence pairs (RoBERTa's finding, Liu et al. 2019: NSP does not
 * help). */
#ifndef BERT_TRAIN_DATA_H
#define BERT_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "bert.h"

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
 * for pairs (the label is the last field). A text is tokenized as
 * [CLS] text [SEP], a pair as [CLS] a [SEP] b [SEP] with token types 0 then
 * 1 (BERT sec. 3), truncated to max_len longest-first.
 *
 * What the label field holds depends on the head (config.h's problem
 * types): single-label, an integer id; multi-label, zero or more of the
 * label names separated by ',' (an empty field is the empty set);
 * regression, a decimal number. */
struct train_label_spec {
    enum bert_problem_type problem; /* UNSET reads as single-label */
    size_t num_labels;              /* single: ids must be below it (0: any id); multi: names */
    char *const *names;             /* multi: (num_labels) the known names, id order */
};

struct train_labeled {
    int32_t *ids;        /* all sequences back to back */
    int32_t *types;      /* token types, same layout as ids */
    size_t *start;       /* (n + 1) sequence i is ids[start[i] .. start[i + 1]) */
    int32_t *labels;     /* (n) single-label ids; 0 for the other heads */
    float *targets;      /* (n, width) multi-label 0/1 per name, or the regression score;
                            NULL for single-label */
    size_t width;        /* 0 single-label, num_labels multi-label, 1 regression */
    size_t n;
    int32_t max_label;
};

/* Fails naming the file and line on a malformed row: a label that is not an
 * id in [0, num_labels) (single), an unknown name (multi) or not a finite
 * number (regression). */
enum bert_status train_labeled_load_spec(struct train_labeled *d,
                                         const struct bert_tokenizer *tok, const char *path,
                                         size_t max_len, const struct train_label_spec *spec,
                                         struct bert_error *err);

/* Single-label rows; num_labels 0 accepts any id. */
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

/* Multi-label scores of logits (n, C) against 0/1 targets (n, C); a label
 * is predicted when sigmoid(logit) > 0.5, i.e. logit > 0. Micro F1 pools
 * every (text, label) decision; macro F1 averages the labels' F1 (0 for a
 * label never gold nor predicted); exact match is the share of texts whose
 * whole predicted set is right. */
struct train_multi_scores {
    double micro_f1, macro_f1, exact_match;
};

struct train_multi_scores train_score_multi(const float *logits, const float *targets, size_t n,
                                            size_t C);

/* Regression scores of predictions against gold values: Pearson's r,
 * Spearman's rho (Pearson of the ranks, ties given their mean rank) and
 * the mean squared error. A correlation with a constant side is 0. */
struct train_regression_scores {
    double pearson, spearman, mse;
};

struct train_regression_scores train_score_regression(const float *pred, const float *gold,
                                                      size_t n);

#endif

/* Token-classification data: CoNLL files (one word per line, its tag in the
 * last column, blank lines between sentences, -DOCSTART- lines skipped; the
 * CoNLL-2003 layout, tags IOB2), tokenized for the trainer, and the
 * entity-level scores conlleval computes.
 *
 * A sentence is its words joined by single spaces, tokenized as
 * [CLS] text [SEP] and cut to max_len tokens. The label of a word goes on
 * its first sub-token; the others get -100 (ignored by the loss), or with
 * all_subtokens the word's label with B- turned into I- (transformers'
 * run_ner label_all_tokens). */
#ifndef BERT_TRAIN_TAGGED_H
#define BERT_TRAIN_TAGGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bert.h"

struct train_tagged {
    int32_t *ids;        /* all sequences back to back */
    int32_t *tags;       /* same layout: label id, or -100 */
    int32_t *word_of;    /* same layout: the word a first sub-token stands for, else -1 */
    size_t *start;       /* (n + 1) sequence i is ids[start[i] .. start[i + 1]) */
    int32_t *gold;       /* every sentence's word labels back to back */
    size_t *word_start;  /* (n + 1) sentence i's words are gold[word_start[i] ..) */
    size_t n;
    char **names;        /* (n_names) label names in id order */
    size_t n_names;
};

/* Load `path`. With names == NULL the label set comes from the data: "O"
 * first (when present), then each type's B- and I- labels in the order the
 * types first appear, then any other tag; otherwise every tag must be one
 * of names (copied). Fails naming the file and line on a line without a
 * tag or a tag not in names. */
enum bert_status train_tagged_load(struct train_tagged *d, const struct bert_tokenizer *tok,
                                   const char *path, size_t max_len, bool all_subtokens,
                                   char *const *names, size_t n_names, struct bert_error *err);

/* Safe on a zeroed or already freed set. */
void train_tagged_free(struct train_tagged *d);

/* Entity-level precision, recall and F1 (conlleval's chunk rules: a chunk
 * starts at B-X, or at I-X after O or another type; it is right when a gold
 * chunk has the same first word, last word and type), overall and per type
 * (types in the order of `names`). */
struct train_entity_scores {
    double precision, recall, f1;
    size_t correct, predicted, gold;
};

struct train_ner_scores {
    struct train_entity_scores overall;
    struct train_entity_scores types[32]; /* per type, in the order type_names lists them */
    const char *type_names[32];
    size_t n_types;
    double token_accuracy;
};

/* Score predicted word labels `pred` (laid out as d->gold) against d->gold. */
void train_ner_score(const struct train_tagged *d, const int32_t *pred,
                     struct train_ner_scores *out);

#endif

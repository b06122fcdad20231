/* The tokenizer.json normalizers other than BertNormalizer, applied in
 * sequence with exact alignments (xform.h): NFC, NFD, NFKC, NFKD,
 * Lowercase, Strip, Replace, Prepend and Precompiled, as
 * tokenizers/src/normalizers/ defines them. Unicode data comes from
 * libutf8proc; lowercasing is Rust's char::to_lowercase (unicode.h). */
#ifndef BERT_TOK_NORMSEQ_H
#define BERT_TOK_NORMSEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "normalize.h"
#include "precompiled.h"

enum tok_norm_kind {
    TOK_NORM_NFC,
    TOK_NORM_NFD,
    TOK_NORM_NFKC,
    TOK_NORM_NFKD,
    TOK_NORM_LOWERCASE,
    TOK_NORM_STRIP,
    TOK_NORM_REPLACE,
    TOK_NORM_PREPEND,
    TOK_NORM_PRECOMPILED,
};

struct tok_norm_step {
    enum tok_norm_kind kind;
    bool left, right; /* Strip */
    /* Replace: a literal pattern, or with min_repeat > 0 a run of at least
     * min_repeat copies of the one-character pattern (the regex "c{n,}" or
     * "c+"). */
    char *pattern;
    size_t pattern_len;
    size_t min_repeat;
    char *content; /* Replace: the replacement; Prepend: the prefix */
    size_t content_len;
    struct tok_precompiled precompiled;
};

struct tok_normseq {
    struct tok_norm_step *steps;
    size_t n;
};

/* Scratch of one call: a second string and a change list. */
struct tok_normseq_work {
    struct tok_normalized tmp;
    struct tok_buf changes;
};

/* Apply every step to `io` (already holding the segment with its
 * alignments); `origin` is the segment's original start. False when out of
 * memory. */
bool tok_normseq_apply(const struct tok_normseq *seq, struct tok_normalized *io, uint32_t origin,
                       struct tok_normseq_work *work);

/* Append a zeroed step and return it; NULL when out of memory. */
struct tok_norm_step *tok_normseq_add(struct tok_normseq *seq, enum tok_norm_kind kind);

void tok_normseq_free(struct tok_normseq *seq);

#endif

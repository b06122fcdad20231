/* BertNormalizer with alignment tracking: the normalized text plus, for each
 * of its bytes, the byte range of the original character it came from, so a
 * token of a lowercased or accent-stripped word maps back to the original
 * bytes exactly as Hugging Face's NormalizedString does.
 *
 * Steps, in the reference's order: clean_text (drop NUL, U+FFFD and control
 * characters; whitespace becomes ' '), handle_chinese_chars (a space on each
 * side of a CJK ideograph), strip_accents (NFD, then drop Mn), lowercase. */
#ifndef BERT_TOK_NORMALIZE_H
#define BERT_TOK_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "utf8.h"

struct tok_norm_cfg {
    bool clean_text;
    bool handle_chinese_chars;
    bool strip_accents;
    bool lowercase;
};

struct tok_normalized {
    struct tok_buf bytes;    /* (len) UTF-8 */
    struct tok_buf al_start; /* (len) uint32_t: original start of each byte's character */
    struct tok_buf al_end;   /* (len) uint32_t: original end */
    size_t len;
};

/* Replace `out` with the normalization of text[start, end), which must be
 * valid UTF-8. Alignments are absolute offsets into `text`. A character the
 * normalizer inserts (the spaces around CJK) shares the alignment of the one
 * before it, or is empty at `start`, as in the reference. False when out of
 * memory. */
bool tok_normalize(const struct tok_norm_cfg *cfg, const uint8_t *text, size_t start,
                   size_t end, struct tok_normalized *out);

#endif
